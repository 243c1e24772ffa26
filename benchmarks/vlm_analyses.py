"""The seeds' analyses on ``builtin:tiny-vlm`` (issue 35, item 3), one subcommand each.

- ``overlap`` (seed 000, Appendix C.1, Table 11 in kind): the demo's text-only LoRA recipe
  (:func:`bindkit.demo.tiny_vlm.train_lora`, called, not copied) trained on size-matched triplets
  drawn from (a) NoOverlap: half A of the shapes vocabulary, whose attributes and objects never
  occur in the evaluation MCQs; (b) Overlap: half B, the evaluation's own vocabulary (binding
  sets of evaluation items dropped, as the demo does); (c) Random: the whole vocabulary (same
  drop). Evaluated on SABER-shapes MCQs drawn from half B only (N = 2..7: half B holds 7
  objects), with a control drawn from half A (did NoOverlap learn its own words?); every
  training row and every evaluation MCQ is checked against its vocabulary.
- ``gap`` (seed 002, Tables I and II in kind): ``analyze modality-gap`` of the base model and
  each ``--adapter`` on the demo's evaluation scenes, once with the model's own prompt format
  (``qwen3-vl-embedding``) and once per prompt layout of the generic ``mllm`` family loaded on
  the same checkpoint folder (``none``, ``user``, ``system``, ``hierarchical``); and SABER
  tt / ti / it / ii under each (``--no-scores``: the gap alone).
- ``saha`` (seed 002, Algorithm 1): caption → image pairs of rendered SABER-shapes scenes
  (a draw disjoint in binding sets from the evaluation set), mined into clusters by SaHa (with
  and without the label filter), plain hard negatives and random; the false-negative rate of
  each (a negative whose image shows the anchor's binding set; SABER gives the ground truth);
  then cluster InfoNCE (``bindkit train clusters``' trainer) on SaHa clusters vs on random
  clusters (random-batch InfoNCE), SABER tt / ti / it / ii before and after.

    python benchmarks/vlm_analyses.py overlap --out analyses
    python benchmarks/vlm_analyses.py gap --out analyses \\
        --adapter DEMO/run/adapter-raw --adapter DEMO/run/adapter-lines
    python benchmarks/vlm_analyses.py saha --out analyses

Each writes ``OUT/<subcommand>/<subcommand>.md`` and ``.json`` (with what produced them);
a rerun reuses finished training runs, rendered images and scores whose inputs are unchanged.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _vlm_common import MODEL, checkpoint_folder
from _vlm_gap import run_gap
from _vlm_overlap import run_overlap
from _vlm_saha import run_saha

from bindkit.errors import BindkitError

# --- command line ----------------------------------------------------------------------------


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value}: a learning rate in (0, 1), e.g. 1e-3")
    return value


def _even(text: str) -> int:
    value = _positive(text)
    if value % 2:
        raise argparse.ArgumentTypeError(f"{value}: must be even (half independent, half nested)")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def common(
        name: str, handler: Callable[[argparse.Namespace], Any], help: str, eval_per_n: int = 20
    ) -> Any:
        sub = commands.add_parser(
            name,
            help=help,
            description=help,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        sub.add_argument("--model", default=MODEL, help="e.g. builtin:tiny-vlm+weights=DIR")
        sub.add_argument("--out", type=Path, required=True, help="output folder (shared)")
        sub.add_argument("--threads", type=_positive, default=1, help="torch threads")
        sub.add_argument(
            "--eval-per-n", type=_even, default=eval_per_n, help="evaluation MCQs per N"
        )
        sub.set_defaults(handler=handler, progress=True)  # before -q, whose default is hidden
        sub.add_argument(
            "-q",
            "--quiet",
            dest="progress",
            action="store_false",
            default=argparse.SUPPRESS,
            help="no progress output",
        )
        return sub

    overlap = common("overlap", run_overlap, "NoOverlap vs Overlap vs Random vocabulary", 40)
    overlap.add_argument("--train-per-n", type=_even, default=150, help="MCQs drawn per N, per arm")
    overlap.add_argument("--train-mcqs", type=_positive, default=800, help="MCQs per arm, at most")
    overlap.add_argument("--steps", type=_positive, default=300, help="optimizer steps per arm")
    gap = common("gap", run_gap, "modality gap per prompt layout, base and adapters")
    gap.add_argument(
        "--adapter", type=Path, action="append", default=[], help="a LoRA folder (repeatable)"
    )
    gap.add_argument("--pairs", type=_positive, default=180, help="image-caption pairs, at most")
    gap.add_argument(
        "--no-scores",
        dest="scores",
        action="store_false",
        help="skip SABER tt/ti/it/ii per prompt format (the gap alone)",
    )
    saha = common("saha", run_saha, "SaHa clusters, FN rate, cluster InfoNCE vs random batches")
    saha.add_argument("--pool-per-n", type=_even, default=40, help="pool MCQs drawn per N")
    saha.add_argument("--k", type=_positive, default=7, help="negatives per cluster")
    saha.add_argument("--steps", type=_positive, default=200, help="optimizer steps per run")
    saha.add_argument("--clusters-per-step", type=_positive, default=4, help="clusters per step")
    saha.add_argument("--lr", type=_rate, default=1e-3, help="LoRA learning rate")
    saha.add_argument("--seed", type=int, default=0, help="LoRA init and cluster order")
    return parser


#: upper bounds of the size options (a typo never starts a day of CPU work)
LIMITS = {
    "threads": 1024,
    "eval_per_n": 1000,
    "train_per_n": 10_000,
    "train_mcqs": 1_000_000,
    "steps": 1_000_000,
    "pairs": 100_000,
    "pool_per_n": 10_000,
    "k": 1000,
    "clusters_per_step": 1000,
}


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument before any work, one line naming the first bad one: the sizes' upper
    bounds (argparse checked the lower ones), --seed, --model and its checkpoint folder, each
    --adapter, and that --out can be a folder."""
    from bindkit.adapters.out import CONFIG
    from bindkit.support import check_can_create, check_range

    for name, high in LIMITS.items():
        if hasattr(args, name):
            check_range("--" + name.replace("_", "-"), getattr(args, name), 1, high)
    if hasattr(args, "seed"):
        check_range("--seed", args.seed, 0, 2**31 - 1)
    folder, _options, adapter = checkpoint_folder(args.model)
    if not folder.is_dir():
        raise BindkitError(f"--model {args.model}: {folder} is not a folder")
    for path in [*([Path(adapter)] if adapter else []), *getattr(args, "adapter", [])]:
        if not (Path(path) / CONFIG).is_file():
            raise BindkitError(
                f"--adapter {path}: not a LoRA adapter folder (no {CONFIG}); give the folder "
                "`bindkit train` or the demo wrote"
            )
    if args.out.exists() and not args.out.is_dir():
        raise BindkitError(f"--out {args.out}: is a file; give a folder")
    check_can_create(args.out)


def main(argv: Sequence[str] | None = None) -> int:
    from bindkit.recipes.runner import pinned
    from bindkit.support import directory_lock

    args = build_parser().parse_args(argv)
    try:
        check_arguments(args)  # a wrong argument fails before any work
        work = args.out / args.command
        work.mkdir(parents=True, exist_ok=True)
        with directory_lock(work, f"vlm_analyses {args.command}"), pinned(args.threads):
            args.handler(args)
    except BindkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
