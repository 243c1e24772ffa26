"""``bindkit analyze``: what a model does with bindings (attention margins, modality gap)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    analyze = commands.add_parser("analyze", help="analyse binding inside models")
    sub = analyze.add_subparsers(title="analyses", metavar="ANALYSIS")
    att = sub.add_parser(
        "attention",
        help="per-layer attention binding margin (CSV + PNG), several models on one plot",
        description="For each text and layer: each object's mean attention to its own attribute "
        "words minus to the other objects' attribute words (later word → earlier word, summed "
        "over the earlier word's sub-tokens, averaged over the later word's and over heads), "
        "averaged over objects and texts.",
    )
    att.add_argument("--model", action="append", required=True, metavar="SPEC", help="repeatable")
    att.add_argument(
        "--texts",
        type=Path,
        required=True,
        help="a SABER directory (its queries) or JSONL rows with a text field and 'bindings' "
        "(synth examples, or synth queries whose phrases give the bindings)",
    )
    att.add_argument("--field", default=None, help="JSONL text field (default: text, else query)")
    att.add_argument(
        "--role",
        default="query",
        choices=["query", "document"],
        help="role the texts are embedded in (its prompt is part of the input)",
    )
    att.add_argument("--instruction", default=None, help="instruction (default: the model's)")
    att.add_argument("--limit", type=int, default=None, help="use the first N texts")
    att.add_argument("--batch-size", type=int, default=16, help="texts per forward pass")
    att.add_argument("--out", type=Path, default=Path("attention"), help="output directory")
    att.set_defaults(handler=_attention)

    from bindkit.cli._modality_gap import add_parser as add_modality_gap

    add_modality_gap(sub)


def _attention(args: argparse.Namespace) -> int:
    from bindkit._checks import check_range
    from bindkit._io import check_can_create, check_not_input, removed_if_failed_empty
    from bindkit.analysis.attention import analyze_attention
    from bindkit.errors import BindkitError

    if args.limit is not None and args.limit < 1:
        raise BindkitError(f"--limit {args.limit}: must be at least 1")
    check_range("--batch-size", args.batch_size, 1, 4096)
    check_not_input(args.out, [args.texts])
    check_can_create(args.out)  # before the models load
    with removed_if_failed_empty(args.out):
        record = analyze_attention(
            args.model,
            args.texts,
            args.out,
            field=args.field,
            role=args.role,
            instruction=args.instruction,
            limit=args.limit,
            batch_size=args.batch_size,
        )
    for spec, curve in record["models"].items():
        margins = " ".join(f"{m:+.3f}" for m in curve["margins"])
        print(f"{spec} ({curve['texts']} texts): {margins}")
    print(f"wrote {args.out}/attention_margins.csv, .png and .json")
    return 0
