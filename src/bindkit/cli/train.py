"""``bindkit train triplets``, ``bindkit lines`` and ``bindkit soup``: thin wrappers over
:mod:`bindkit.train`."""

from __future__ import annotations

import argparse
import json
from typing import Any


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
    from bindkit.cli._train_clusters import add_parser as add_clusters

    add_clusters(kinds)  # cluster InfoNCE on mined clusters (`bindkit train clusters`)
    train.set_defaults(handler=lambda args: _usage(train))

    lines = commands.add_parser(
        "lines",
        help="rescale a LoRA adapter layer by layer (LiNeS)",
        description="Write a copy of a peft LoRA adapter whose layer-l update is scaled by "
        "alpha + beta * l / (L - 1) (LiNeS; beta defaults to 1 - alpha).",
    )
    lines.add_argument("adapter", help="peft adapter directory")
    lines.add_argument("--alpha", type=float, required=True, help="LiNeS alpha in [0, 1]")
    lines.add_argument("--beta", type=float, default=None, help="LiNeS beta (default 1 - alpha)")
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
    soup.add_argument("adapters", nargs="+", help="peft adapter directories (two or more)")
    soup.add_argument(
        "--weights",
        type=float,
        nargs="+",
        default=None,
        help="one per adapter, each in [-10, 10], not all 0 (default: equal)",
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

    record = average_adapters(args.adapters, args.out, args.weights, overwrite=args.overwrite)
    print(json.dumps({"weights": record["weights"], "rank": record["rank"], "out": args.out}))
    return 0
