"""``bindkit analyze modality-gap``: wired into ``cli/analyze.py`` by ``add_parser(sub)``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(analyses: Any) -> None:
    """Add ``modality-gap`` to the ``bindkit analyze`` sub-commands."""
    gap = analyses.add_parser(
        "modality-gap",
        help="alignment and modality gap of image-caption pairs, per prompt layout (JSON + PNG)",
        description="Alignment: mean cosine of matched pairs. Gap: distance between the image "
        "and caption centroids (Liang et al. 2022). For mllm: specs, every prompt layout.",
    )
    gap.add_argument("--model", required=True, help="a spec that embeds images and texts")
    gap.add_argument("--pairs", type=Path, required=True, help='JSONL {"image", "caption"} rows')
    gap.add_argument("--layouts", default=None, help="mllm: comma-separated layouts (default: all)")
    gap.add_argument(
        "--image-role",
        default="document",
        choices=["query", "document"],
        help="role the images are embedded in",
    )
    gap.add_argument(
        "--caption-role",
        default="query",
        choices=["query", "document"],
        help="role the captions are embedded in",
    )
    gap.add_argument(
        "--instruction", default=None, help="user-level instruction (where the layout puts one)"
    )
    gap.add_argument("--out", type=Path, default=Path("modality_gap"), help="output directory")
    gap.set_defaults(handler=_modality_gap)


def _modality_gap(args: argparse.Namespace) -> int:
    from bindkit._io import check_can_create, check_not_input, removed_if_failed_empty
    from bindkit.analysis.modality_gap import analyze_modality_gap, format_table

    check_not_input(args.out, [args.pairs])
    check_can_create(args.out)  # before the model loads
    layouts = [n.strip() for n in args.layouts.split(",") if n.strip()] if args.layouts else None
    with removed_if_failed_empty(args.out):
        record = analyze_modality_gap(
            args.model,
            args.pairs,
            args.out,
            layouts=layouts,
            image_role=args.image_role,
            caption_role=args.caption_role,
            instruction=args.instruction,
        )
    print(format_table(record))
    print(f"wrote {args.out}/modality_gap.json and .png")
    return 0
