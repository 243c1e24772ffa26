"""``bindkit mine``: hard-negative clusters from (query, positive) pairs."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    from bindkit.mining.pipeline import METHODS

    parser = commands.add_parser(
        "mine",
        help="mine hard-negative clusters (SaHa or a baseline) from (query, positive) pairs",
        description="Write clusters of k+1 (query, positive) pairs, one JSON per line, anchor "
        "first; diagnostics go to OUT.diagnostics.json and OUT.scatter.png.",
    )
    parser.add_argument("--model", required=True, help="model spec, e.g. st:default")
    parser.add_argument(
        "--data", required=True, help="JSONL rows: query, positive, optional label/instruction/task"
    )
    parser.add_argument("--out", required=True, help="the clusters JSONL to write")
    parser.add_argument("--method", default="saha", choices=METHODS, help="miner (default: saha)")
    parser.add_argument("--k", type=int, default=7, help="negatives per cluster (default: 7)")
    parser.add_argument(
        "--m", type=int, default=4, help="pool multiplier: m·k candidates (default: 4)"
    )
    parser.add_argument(
        "--margin", type=float, default=0.05, help="hn-margin: relative margin (default: 0.05)"
    )
    parser.add_argument(
        "--no-label-filter",
        action="store_true",
        help="SaHa ignores labels (they still feed the false-negative rate)",
    )
    parser.add_argument("--seed", type=int, default=0, help="random: sampling seed")
    parser.add_argument(
        "--index", default="flat", choices=("flat", "ivf", "hnsw"), help="index kind"
    )
    parser.add_argument(
        "--index-backend", default="auto", choices=("auto", "faiss", "numpy"), help="search engine"
    )
    parser.add_argument("--nlist", type=int, default=1024, help="ivf: inverted lists")
    parser.add_argument("--nprobe", type=int, default=32, help="ivf: lists visited per query")
    parser.add_argument(
        "--max-memory",
        default=None,
        metavar="SIZE",
        help="bound the mining's memory besides the model, e.g. 2G: the exact search works in "
        "blocks within a quarter of it, and vectors taking over half of it are memory-mapped "
        "from a temporary folder beside --out (default: no bound)",
    )
    parser.set_defaults(handler=_mine)


def _mine(args: argparse.Namespace) -> int:
    from bindkit.mining.index import IndexConfig
    from bindkit.mining.pipeline import MineConfig, mine, parse_size

    config = MineConfig(
        method=args.method,
        k=args.k,
        m=args.m,
        relative_margin=args.margin,
        label_filter=not args.no_label_filter,
        seed=args.seed,
        index=IndexConfig(
            kind=args.index, backend=args.index_backend, nlist=args.nlist, nprobe=args.nprobe
        ),
        max_memory=None if args.max_memory is None else parse_size(args.max_memory),
    )
    mine(args.model, args.data, args.out, config)
    return 0
