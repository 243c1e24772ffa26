"""Which base tiny-vlm lets text-only finetuning reach images? Train base variants with
``scripts/train_tiny_vlm.py`` options (:mod:`bindkit.builtin.tiny_vlm`), run ``bindkit demo
finetune``'s recipe on each (text-only LoRA on the language layers, LiNeS), and tabulate
SABER-shapes tt/ti/it/ii before and after.

    python benchmarks/vlm_base_search.py --out runs/vlm-bases            # every variant
    python benchmarks/vlm_base_search.py --out runs/vlm-bases --only cap  # some of them

Each variant is ``OUT/NAME/base`` (the trained checkpoint, its ``training.json``) and
``OUT/NAME/demo`` (the demo's folder, ``demo.json``); other demo options get their own folder
and table (``demo-lr0.0003``, ``search-lr0.0003.md``, ``-n200`` for ``--saber-per-n 200``, …). A
finished part is reused on rerun, so an interrupted search resumes and other demo options reuse
the bases. One torch thread per job. Writes ``OUT/search.md`` and ``OUT/search.json`` (each
variant's training options, the demo's options, table and provenance).

    python benchmarks/vlm_base_search.py --out runs/vlm-bases --only cap-img-1k --lr 3e-4 \
        --saber-per-n 200   # the best point at the full 1,800-MCQ set
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit.builtin import tiny_vlm
from bindkit.demo.tiny_vlm import LR
from bindkit.errors import BindkitError

PAIRINGS = ("tt", "ti", "it", "ii")
#: name -> (what it tests, scripts/train_tiny_vlm.py options that differ from its defaults)
VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "shipped": ("the shipped recipe (in-batch image↔caption + caption order)", {}),
    "cap": (
        "+ captioning (next-token loss of the caption after the image)",
        {"caption_weight": 1.0},
    ),
    "cap-px64": (
        "+ captioning, 64 visual tokens (max_pixels 65,536)",
        {"caption_weight": 1.0, "max_pixels": 65536},
    ),
    "img": ("+ image↔image term over whole MCQs (images bind)", {"image_weight": 1.0}),
    "cap-img": ("+ captioning + image↔image term", {"caption_weight": 1.0, "image_weight": 1.0}),
    "cap-img-1k": (
        "+ captioning + image↔image term, 1,000 steps",
        {"caption_weight": 1.0, "image_weight": 1.0, "steps": 1000},
    ),
    "cap-img-px64": (
        "+ captioning + image↔image term, 64 visual tokens, 400 steps",
        {"caption_weight": 1.0, "image_weight": 1.0, "max_pixels": 65536, "steps": 400},
    ),
}


def run_variant(
    name: str, options: dict[str, Any], out: Path, demo: dict[str, Any]
) -> dict[str, Any]:
    """Train (or reuse) the base and run (or reuse) the demo on it; returns the demo summary."""
    from bindkit.demo.tiny_vlm import TinyVlmDemoOptions, run_tiny_vlm_demo

    base = out / name / "base"
    folder = out / name / f"demo{suffix(demo)}"
    if not (base / "training.json").is_file():
        flags = [f"--{k.replace('_', '-')}={v}" for k, v in options.items()]
        if tiny_vlm.main(["--out", str(base), "-q", *flags]):
            raise BindkitError(f"{name}: training the base failed (see above)")
    summary_file = folder / "demo.json"
    if summary_file.is_file():
        return json.loads(summary_file.read_text("utf-8"))
    spec = f"builtin:tiny-vlm+weights={base}"
    return run_tiny_vlm_demo(
        TinyVlmDemoOptions(out=str(folder), model=spec, progress=False, **demo)
    )


#: the demo options of the plain search; any other value names its own folders and tables
DEMO_DEFAULTS = {"saber_per_n": 20, "steps": 300, "threads": 1, "lr": LR}
_SHORT = {"saber_per_n": "n", "steps": "s", "threads": "t", "lr": "lr"}


def suffix(demo: dict[str, Any]) -> str:
    """What tells a demo run apart from the plain search's, for its folder and table names.

    Example:
        >>> suffix({"saber_per_n": 20, "steps": 300, "threads": 1, "lr": 3e-4})
        '-lr0.0003'
        >>> suffix({**DEMO_DEFAULTS, "saber_per_n": 200})
        '-n200'
    """
    return "".join(
        f"-{_SHORT[k]}{demo[k]:g}"
        for k in DEMO_DEFAULTS
        if demo.get(k, DEMO_DEFAULTS[k]) != DEMO_DEFAULTS[k]
    )


def table(results: dict[str, dict[str, Any]]) -> str:
    """The search as Markdown: one row per variant, base → LoRA → LiNeS per pairing."""
    head = "| base variant | " + " | ".join(PAIRINGS) + " |"
    lines = [head, "|---" + "|---:" * len(PAIRINGS) + "|"]
    for name, summary in results.items():
        rows = list(summary["table"].values())  # base, LoRA, LiNeS
        cells = [" → ".join(f"{100 * row[p]:.1f}" for row in rows) for p in PAIRINGS]
        lines.append(f"| `{name}`: {VARIANTS[name][0]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def check_arguments(names: Sequence[str], demo: dict[str, Any], out: Path) -> None:
    """Every argument before the first base trains, one line naming the first bad one: the
    variant names, the demo's options (its own checks), each variant's training options (the
    training script's checks) and --out."""
    from bindkit.demo.tiny_vlm import TinyVlmDemoOptions
    from bindkit.support import check_can_create, check_own_output

    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        raise BindkitError(f"--only {unknown[0]}: not a variant; use one of {', '.join(VARIANTS)}")
    if not 0 < demo["lr"] < 1:  # NaN fails too
        raise BindkitError(f"--lr {demo['lr']}: a learning rate in (0, 1), e.g. 3e-4")
    TinyVlmDemoOptions(out=str(out), **demo)  # --saber-per-n, --steps, --threads
    for name in names:
        tiny_vlm.TrainConfig(**VARIANTS[name][1]).check()
    if out.exists() and not out.is_dir():
        raise BindkitError(f"--out {out}: is a file; give a folder for the search")
    check_can_create(out)
    check_own_output(out, "vlm-base-search")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="search folder (resumes)")
    parser.add_argument(
        "--only", nargs="+", default=None, metavar="NAME", help="variants to run (default: all)"
    )
    parser.add_argument("--saber-per-n", type=int, default=20, help="evaluation MCQs per N")
    parser.add_argument("--steps", type=int, default=300, help="LoRA steps of the demo")
    parser.add_argument(
        "--lr", type=float, default=LR, help=f"LoRA learning rate of the demo (default: {LR:g})"
    )
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default: 1)")
    parser.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    args = parser.parse_args(argv)
    try:
        names = args.only or list(VARIANTS)
        demo = {
            "saber_per_n": args.saber_per_n,
            "steps": args.steps,
            "threads": args.threads,
            "lr": args.lr,
        }
        check_arguments(names, demo, args.out)
        results = {}
        for name in names:
            results[name] = run_variant(name, VARIANTS[name][1], args.out, demo)
            if not args.quiet:
                print(table({name: results[name]}).splitlines()[-1], file=sys.stderr)
    except BindkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from bindkit.support import atomic_write_text

    record = {
        name: {"options": VARIANTS[name][1], "demo": {**demo}, "summary": results[name]}
        for name in names
    }
    tag = suffix(demo)
    atomic_write_text(args.out / f"search{tag}.json", json.dumps(record, indent=1) + "\n")
    atomic_write_text(args.out / f"search{tag}.md", table(results))
    if not args.quiet:
        print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
