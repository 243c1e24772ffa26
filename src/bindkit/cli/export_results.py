"""``bindkit export-results RESULTS --format mteb --out DIR``."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "export-results",
        help="write eval results in another tool's layout (mteb's results folder)",
        description="Write the result files under RESULTS in mteb's results layout "
        "(OUT/results/<model>/<revision>/<Task>.json + model_meta.json + run_settings.jsonl, "
        "as `mteb run --output-folder OUT` writes it), readable by mteb's ResultCache(OUT) "
        "and TaskResult.from_disk. Exports saber and triplets; a result found twice (a "
        "folder and its `bindkit export`, evaluated both) is written once.",
    )
    parser.add_argument("results", help="the --out directory of `bindkit eval`")
    parser.add_argument("--format", required=True, choices=["mteb"], help="target layout")
    parser.add_argument(
        "--out",
        required=True,
        help="mteb results folder: what you give ResultCache(OUT) or mteb's --output-folder",
    )
    parser.add_argument(
        "--tasks", default=None, help="comma list of bindkit tasks to export (default: all)"
    )
    parser.set_defaults(handler=_export)


def _export(args: argparse.Namespace) -> int:
    import importlib.util

    from bindkit.errors import BindkitError

    if importlib.util.find_spec("mteb") is None:
        raise BindkitError("export-results --format mteb needs mteb; pip install 'bindkit[mteb]'")
    from bindkit.mteb_bridge.mteb_results import export_mteb

    tasks = None if args.tasks is None else args.tasks.split(",")  # '' is refused, not "all"
    written = export_mteb(args.results, args.out, tasks=tasks)
    print(f"wrote {len(written)} mteb task result file(s) under {args.out}")
    for path in written:
        print(f"  {path}")
    print(
        f"every file passed mteb's validate_and_filter_scores; read it with "
        f"mteb.ResultCache({str(args.out)!r}).load_results(tasks="
        "bindkit.mteb_bridge.mteb_results.exported_tasks(OUT), validate_and_filter=True); "
        "for mteb's benchmark tables, register the models first: "
        "bindkit.mteb_bridge.mteb_results.register_models(OUT)"
    )
    return 0
