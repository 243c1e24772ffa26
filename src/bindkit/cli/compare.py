"""``bindkit compare``: two results of one task, query by query."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    cmp = commands.add_parser(
        "compare",
        help="per-query wins/losses/ties of two results, a sign test and a contact sheet",
        description="Compare two results of one task query by query (ties: within the "
        "project's tie rule, 1e-6; on a credit such as MCQ 'correct' a query is a model's only "
        "when it is right alone, and a tie share 1/k is no win): wins, losses, ties, each "
        "side's tie shares, the mean difference with a 95 % paired bootstrap interval and an "
        "exact sign test, printed and written to --out with a contact sheet (PNG, HTML) of the "
        "queries that differ most.",
    )
    cmp.add_argument("results_a", type=Path, help="results directory (--out of eval) or file")
    cmp.add_argument("results_b", type=Path, help="the other results directory or file")
    cmp.add_argument("--task", required=True, help="the task both results are of, e.g. saber")
    cmp.add_argument("--subset", default=None, help="subset (needed when several are there)")
    cmp.add_argument("--pairing", default=None, help="pairing, e.g. tt (when several)")
    cmp.add_argument(
        "--metric",
        default=None,
        help="per-query score to compare (default: the main score's, e.g. SABER's MCQ "
        "'correct'; SABER also has ap_independent, ap_nested)",
    )
    cmp.add_argument(
        "--instruction", default=None, help="compare the results of this sweep instruction"
    )
    cmp.add_argument("--out", type=Path, default=Path("compare"), help="output directory")
    cmp.add_argument(
        "--sheet", type=int, default=12, help="queries on the contact sheet (default: 12)"
    )
    cmp.set_defaults(handler=_compare)


def _compare(args: argparse.Namespace) -> int:
    import sys

    from bindkit._checks import check_range
    from bindkit._io import check_not_input
    from bindkit.results.compare import compare_results, summary_table, write_comparison
    from bindkit.results.report import to_markdown

    check_range("--sheet", args.sheet, 0, 200)
    check_not_input(args.out, [args.results_a, args.results_b])  # its files would be read next
    comparison = compare_results(
        args.results_a,
        args.results_b,
        task=args.task,
        subset=args.subset,
        pairing=args.pairing,
        metric=args.metric,
        instruction=args.instruction,
    )
    table = summary_table(comparison)
    written = write_comparison(
        comparison,
        args.out,
        sheet=args.sheet,
        warn=lambda m: print(m, file=sys.stderr),
    )
    text = to_markdown([table])
    print(text.removeprefix("# bindkit report\n").strip())
    print("wrote " + ", ".join(str(p) for p in written))
    return 0
