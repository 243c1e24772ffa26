"""``bindkit train triplets``, ``bindkit lines`` and ``bindkit soup``: thin wrappers over
:mod:`bindkit.train`."""

from __future__ import annotations

import argparse
import json
from typing import Any

from bindkit.errors import BindkitError


def register(commands: Any) -> None:
    from bindkit.train.config import add_arguments

    train = commands.add_parser(
        "train",
        help="finetune an embedder for binding (LoRA on triplets, LiNeS)",
        description="Finetune a model so it binds attributes to objects.",
    )
    kinds = train.add_subparsers(title="training data", metavar="KIND")
    triplets = kinds.add_parser(
        "triplets",
        help="LoRA finetuning on query/positive/negative triplets (hinge loss over cosine)",
        description="LoRA (peft) on the attention projections of every text layer; hinge "
        "triplet loss over cosine; AdamW at a constant lr; one epoch. Writes OUT/adapter-raw, "
        "OUT/adapter-lines (LiNeS), OUT/model_card.md and OUT/train.json; a rerun with the same "
        "options resumes from OUT/checkpoint.",
    )
    add_arguments(triplets)
    triplets.set_defaults(handler=_triplets)
    add_clusters_parser(kinds)  # cluster InfoNCE on mined clusters (`bindkit train clusters`)
    train.set_defaults(handler=lambda args: _usage(train))

    lines = commands.add_parser(
        "lines",
        help="rescale a LoRA adapter layer by layer (LiNeS)",
        description="Write a copy of a peft LoRA adapter whose layer-l update is scaled by "
        "alpha + beta * l / (L - 1) (LiNeS; beta defaults to 1 - alpha).",
    )
    lines.add_argument("adapter", help="peft adapter directory")
    lines.add_argument("--alpha", type=float, required=True, help="LiNeS alpha in [0, 1]")
    lines.add_argument("--beta", type=float, default=None, help="LiNeS beta (default: 1 - alpha)")
    lines.add_argument(
        "--num-layers",
        type=int,
        default=None,
        help="model depth L, at most 1000 (default: from the adapter)",
    )
    lines.add_argument("--out", required=True, help="directory of the new adapter")
    lines.add_argument(
        "--overwrite", action="store_true", help="replace an existing adapter at --out, whole"
    )
    lines.set_defaults(handler=_lines)

    soup = commands.add_parser(
        "soup",
        help="average LoRA adapters (e.g. two training seeds) into one",
        description="Write one peft LoRA adapter whose update is the weighted mean of the "
        "adapters' updates (exact: their ranks stacked), e.g. of two training seeds.",
    )
    soup.usage = (
        "bindkit soup ADAPTER ADAPTER [ADAPTER ...] --out DIR [--weights W [W ...]] [--overwrite]"
    )
    soup.add_argument(
        "adapters", nargs="*", metavar="ADAPTER", help="peft adapter directories (two or more)"
    )
    soup.add_argument(
        "--weights",
        nargs="+",
        metavar="W",
        default=None,
        help="one per adapter, each in [-10, 10], not all 0 (default: equal); the adapters "
        "may also follow the weights",
    )
    soup.add_argument("--out", required=True, help="directory of the new adapter")
    soup.add_argument(
        "--overwrite", action="store_true", help="replace an existing adapter at --out, whole"
    )
    soup.set_defaults(handler=_soup)


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _triplets(args: argparse.Namespace) -> int:
    from bindkit.train.config import TrainConfig, from_args
    from bindkit.train.trainer import train_triplets

    config = from_args(args, TrainConfig)
    assert isinstance(config, TrainConfig)
    return report(train_triplets(config), args.out)


def report(record: dict[str, Any], out: str) -> int:
    """Print a finished run's scores (base, raw, LiNeS) and where its files are."""
    for name, values in record["scores"].items():
        shown = ", ".join(f"{k} {100 * v:.2f}" for k, v in values.items())
        print(f"{name}: {shown or '(no --val / --sts given)'}")
    print(f"{record['optimizer_steps']} steps; adapters and model card: {out}")
    return 0


def _lines(args: argparse.Namespace) -> int:
    from bindkit.adapters.lines import apply_lines

    record = apply_lines(
        args.adapter,
        args.out,
        alpha=args.alpha,
        beta=args.beta,
        num_layers=args.num_layers,
        overwrite=args.overwrite,
    )
    print(json.dumps({k: v for k, v in record.items() if k != "source"}))
    return 0


def _soup(args: argparse.Namespace) -> int:
    from bindkit.adapters.soup import average_adapters

    weights, adapters = _split_weights(args.weights, args.adapters)
    record = average_adapters(adapters, args.out, weights, overwrite=args.overwrite)
    print(json.dumps({"weights": record["weights"], "rank": record["rank"], "out": args.out}))
    return 0


def _split_weights(
    given: list[str] | None, adapters: list[str]
) -> tuple[list[float] | None, list[str]]:
    """``--weights 0.7 0.3 a b`` takes the adapters too (argparse gives ``--weights`` every
    word up to the next option): the leading numbers are the weights, the rest adapters."""
    if given is None:
        return None, adapters
    weights: list[float] = []
    for index, word in enumerate(given):
        try:
            weights.append(float(word))
        except ValueError:
            if not weights:
                raise BindkitError(
                    f"--weights {word}: not a number; give one weight per adapter, e.g. "
                    "--weights 0.7 0.3"
                ) from None
            return weights, [*given[index:], *adapters]
    return weights, adapters


def add_clusters_parser(train: Any) -> None:
    """Add ``clusters`` to the ``bindkit train`` sub-commands (flags from ClusterTrainConfig)."""
    from bindkit.train.config import ClusterTrainConfig, add_arguments

    p = train.add_parser(
        "clusters",
        help="LoRA finetuning with InfoNCE inside mined clusters (GradCache, multi-GPU)",
        description="Each step: B clusters from `bindkit mine`, InfoNCE whose denominator is the "
        "cluster, GradCache chunks, warm-up then linear decay; the same loop, flags, checkpoints "
        "and outputs as `bindkit train triplets` (OUT/adapter-raw, OUT/adapter-lines with "
        "--lines, OUT/model_card.md, OUT/train.json; a rerun resumes from OUT/checkpoint). The "
        "defaults are seed 002's recipe; each option's help says whether the paper states its "
        "value (and where) or bindkit chose it (and why): docs/seed-choices.md.",
    )
    add_arguments(p, ClusterTrainConfig)
    p.set_defaults(handler=_train_clusters)


def _train_clusters(args: argparse.Namespace) -> int:
    from bindkit.train.config import ClusterTrainConfig, from_args
    from bindkit.train.trainer import train

    return report(train(from_args(args, ClusterTrainConfig)), args.out)
