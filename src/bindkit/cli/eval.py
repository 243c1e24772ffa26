"""``bindkit eval`` and ``bindkit report``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def _task_help() -> str:
    from bindkit.tasks.base import task_classes

    return "; ".join(
        f"{name}: {cls.metadata.description}" for name, cls in sorted(task_classes().items())
    )


def register(commands: Any) -> None:
    ev = commands.add_parser(
        "eval",
        help="evaluate models on a benchmark and write result files + a report",
        description="Evaluate one or more models; one result JSON per (model, task, data, "
        "subset, pairing) under --out, each written as soon as it is computed (a rerun computes "
        "only what is missing), then a report over everything in --out.",
    )
    ev.add_argument(
        "--model",
        action="append",
        required=True,
        metavar="SPEC",
        help="model spec, repeatable (see `bindkit models`), e.g. st:default",
    )
    ev.add_argument(
        "--task",
        action="append",
        default=None,
        metavar="TASK",
        help="repeatable, or a comma list (--task sts --task triplets); default saber. "
        f"{_task_help()}",
    )
    ev.add_argument(
        "--task-option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a task setting, repeatable, e.g. --task aro --task-option order_seed=2",
    )
    ev.add_argument(
        "--data",
        action="append",
        default=None,
        help="the task's files as published (a file or folder); with several tasks, once per "
        "task in their order, or not at all; default: $BINDKIT_DATA/<task folder>, or SABER's "
        "default set generated in memory",
    )
    ev.add_argument(
        "--image-root",
        default=None,
        help="folder the data's image file names are relative to (e.g. COCO val2017)",
    )
    ev.add_argument(
        "--pairings",
        default=None,
        help="comma list of tt,ti,it,ii (query→candidate); default: all available",
    )
    ev.add_argument(
        "--subsets",
        default=None,
        help="comma list of subsets or subset families (mmeb_v2: image, video, visdoc) to run; "
        "default: all of them",
    )
    ev.add_argument("--out", type=Path, default=Path("results"), help="results directory")
    ev.add_argument(
        "--overwrite",
        default="only-missing",
        choices=["only-missing", "never", "always"],
        help="recompute policy for existing results (default: only-missing)",
    )
    ev.add_argument(
        "--query-instruction",
        default=None,
        help="instruction for queries (default: the task's, else the model's default)",
    )
    ev.add_argument(
        "--instructions",
        type=Path,
        default=None,
        metavar="FILE",
        help="instruction sweep: run each (model, subset, pairing) once per instruction of FILE "
        "(one per line, # comments; or a .json/.toml list of {name, query, document}; at most "
        "200); results "
        "go to <pairing>@<name>.json and the report shows the spread across instructions",
    )
    ev.add_argument("--batch-size", type=int, default=None, help="inputs per forward pass")
    ev.add_argument("--no-cache", action="store_true", help="do not use the embedding cache")
    ev.add_argument("--no-report", action="store_true", help="skip writing OUT/report.md")
    ev.add_argument(
        "--allow-missing-images",
        action="store_true",
        help="score an image benchmark without its missing images (the result is marked "
        "partial); default: stop and name them",
    )
    ev.add_argument(
        "--fetch",
        action="store_true",
        help="download a task's missing files first (`bindkit fetch TASK`'s plan, into --data "
        "or $BINDKIT_DATA/<task folder>; prints the licence)",
    )
    ev.add_argument(
        "--half",
        choices=("dev", "test"),
        default=None,
        help="score only the fixed, hashed dev or test half of the data (sugarcrepe, "
        "sugarcrepe_pp, sts, triplets, saber): choose on dev, report test; default: all of it",
    )
    ev.add_argument(
        "--device",
        default=None,
        help="run every model on this torch device (cpu, cuda, cuda:1, mps): each spec gets "
        "+device=DEVICE unless it names one or its backend runs no torch model (bow); "
        "default: cuda when torch sees a GPU, else cpu",
    )
    ev.add_argument("-q", "--quiet", action="store_true", help="print only the final table")
    ev.set_defaults(handler=_eval)

    rep = commands.add_parser(
        "report",
        help="merge result files into tables and plots",
        description="Read every result file under RESULTS (any depth) and write one report: "
        "Markdown (default RESULTS/report.md), HTML, CSV, LaTeX or a static results site, "
        "with the SABER by-N plot beside it.",
    )
    rep.add_argument("results", type=Path, help="directory of result files (any depth)")
    rep.add_argument(
        "--out",
        type=Path,
        default=None,
        help="report file: .md (default: RESULTS/report.md), .html, .csv or .tex; or a folder "
        "(no suffix, e.g. site/) for a static results site: sortable tables, provenance per "
        "score, the result files",
    )
    rep.set_defaults(handler=_report)


def _warn(message: str) -> None:
    import sys

    print(message, file=sys.stderr)


def _eval(args: argparse.Namespace) -> int:
    from bindkit.errors import BindkitError
    from bindkit.results.report import build_tables, to_markdown

    options: dict[str, str] = {}
    for item in args.task_option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BindkitError(f"--task-option {item!r}: write KEY=VALUE, e.g. order_seed=2")
        options[key.strip()] = value.strip()
    from bindkit._environment import note_version_drift
    from bindkit._io import removed_if_failed_empty

    note_version_drift()
    with removed_if_failed_empty(args.out):
        records = _evaluate(args, options)
    if records:
        tables = build_tables(records)[:-1]  # the data-source table is in the report
        shown = tables if args.instructions is not None else tables[:3]
        print(to_markdown(shown).removeprefix("# bindkit report\n").strip())
    return 0


def task_plan(
    tasks: list[str] | None, data: list[str] | None, options: dict[str, str], subsets: str | None
) -> list[tuple[str, str | None]]:
    """``(task, data)`` per task to run: ``--task`` repeated or comma-listed (in order, each
    once), ``--data`` once per task or not at all. Task options and subsets name one task's
    settings, so they need a single task."""
    from bindkit.errors import BindkitError

    names = [n.strip() for t in (tasks or ["saber"]) for n in t.split(",") if n.strip()]
    if not names:
        raise BindkitError("--task: empty; name a task (see `bindkit eval --help`)")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise BindkitError(f"--task {repeated[0]}: given twice; name each task once")
    given = data or []
    if len(names) == 1:
        if len(given) > 1:
            raise BindkitError(f"--data: given {len(given)} times for one task; give it once")
        return [(names[0], given[0] if given else None)]
    if given and len(given) != len(names):
        raise BindkitError(
            f"--data: given {len(given)} times for {len(names)} tasks; give one per task, in "
            "the order of --task, or none"
        )
    for option, value in (("--task-option", options), ("--subsets", subsets)):
        if value:
            raise BindkitError(
                f"{option}: a setting of one task; run `bindkit eval` once per task to use it "
                f"(tasks: {', '.join(names)})"
            )
    if not given:
        return [(name, None) for name in names]
    return [(name, path) for name, path in zip(names, given, strict=True)]


def with_device(spec: str, device: str | None) -> str:
    """``spec`` with ``+device=device`` when the backend takes one and the spec names none."""
    from bindkit.embed.registry import Spec, takes_option

    if device is None or "device" in Spec.parse(spec).options:
        return spec
    return f"{spec}+device={device}" if takes_option(spec, "device") else spec


def _evaluate(args: argparse.Namespace, options: dict[str, str]) -> list[dict[str, Any]]:
    from bindkit.evaluation import evaluate
    from bindkit.records.instructions import read_instructions
    from bindkit.tasks.base import get_task

    plan = task_plan(args.task, args.data, options, args.subsets)
    tasks = [get_task(name, options) if options else get_task(name) for name, _ in plan]
    instructions = None if args.instructions is None else read_instructions(args.instructions)
    records: list[dict[str, Any]] = []
    for index, (task, (_name, data)) in enumerate(zip(tasks, plan, strict=True)):
        records += evaluate(
            [with_device(spec, args.device) for spec in args.model],
            task=task,
            data=data,
            pairings=args.pairings,
            subsets=args.subsets,
            out=args.out,
            overwrite=args.overwrite,
            query_instruction=args.query_instruction,
            image_root=args.image_root,
            batch_size=args.batch_size,
            cache=not args.no_cache,
            report=not args.no_report and index == len(plan) - 1,  # one report over them all
            verbose=not args.quiet,
            allow_missing_images=args.allow_missing_images,
            instructions=instructions,
            fetch=args.fetch,
            half=args.half,
        )
    return records


def _report(args: argparse.Namespace) -> int:
    from bindkit.results.report import write_report

    if args.out is not None and not args.out.suffix:
        from bindkit.results.site import write_site

        print(f"wrote {write_site(args.results, args.out, warn=_warn)}")
        return 0
    target, plots = write_report(args.results, args.out, warn=_warn)
    print(f"wrote {target}" + "".join(f" and {p}" for p in plots))
    return 0
