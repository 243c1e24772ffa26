"""``bindkit fetch TASK``: download a benchmark's official files into the layout it reads."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    from bindkit.fetch.download import PART_DEADLINE, STALL_BYTES, STALL_SECONDS

    parser = commands.add_parser(
        "fetch",
        help="download a benchmark's official files into $BINDKIT_DATA/TASK",
        description="Download a benchmark's files from where they are published (Hugging Face "
        "datasets, GitHub, the publishers' sites) into the layout `bindkit eval --task TASK` "
        "reads, resuming cut-off downloads and checking the sha256 bindkit pins (an unpinned "
        "file must look like its kind: an HTML error page is refused); a transfer that stalls "
        f"(under {STALL_BYTES} bytes in {STALL_SECONDS:g} s) or runs past "
        f"{PART_DEADLINE / 3600:g} h stops and resumes on the next run. A whole fetch is read "
        "back with the task's own reader; a failed one removes the folder it made unless there "
        "is something to resume, and names the command to run next. Prints the licence that "
        "applies. `bindkit eval --fetch` runs the same plan when a task's files are missing.",
    )
    parser.add_argument("task", nargs="?", default=None, help="task name (see --list)")
    parser.add_argument(
        "--to", type=Path, default=None, help="folder to fill (default: $BINDKIT_DATA/TASK)"
    )
    parser.add_argument(
        "--no-images",
        dest="images",
        action="store_false",
        help="skip the image archives (text-only pairings)",
    )
    parser.add_argument(
        "--part",
        action="append",
        default=None,
        metavar="NAME",
        help="only this part of a large plan, repeatable (mmeb_v2: image, video, visdoc; "
        "--list shows them); default: every part",
    )
    parser.add_argument("--list", action="store_true", help="list the fetchable tasks and exit")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    parser.set_defaults(handler=_fetch)


def _fetch(args: argparse.Namespace) -> int:
    from bindkit.errors import BindkitError
    from bindkit.fetch.fetcher import fetch
    from bindkit.fetch.sources import MANUAL, SOURCES

    if args.list:
        for name, plan in sorted(SOURCES.items()):
            parts = f" [parts: {', '.join(plan.part_names)}]" if plan.part_names else ""
            print(f"{name:<14} {plan.license}{parts}")
        for name in sorted(MANUAL):
            print(f"{name:<14} (no plan: `bindkit fetch {name}` says why)")
        return 0
    if args.task is None:
        raise BindkitError("fetch: name a task (bindkit fetch --list shows them)")
    fetch(
        args.task,
        args.to,
        images=args.images,
        parts=args.part,
        log=None if args.quiet else print,
        progress=not args.quiet,
    )
    return 0
