"""``bindkit mteb run|available-tasks|...``: mteb's own CLI with bindkit's tasks registered."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "mteb",
        help="run mteb's own CLI (run, available-tasks, ...) with bindkit's tasks and models",
        description="mteb's command line (`mteb run`, `mteb available-tasks`, ...) with "
        "bindkit's tasks registered, since mteb has no plug-in hook for outside tasks: "
        "SABERMCQ, SABERRetrievalIndependent and SABERRetrievalNested (the built-in SABER set) "
        "always; SABERMCQ-NAME, SABERRetrievalIndependent-NAME and SABERRetrievalNested-NAME per "
        "--saber DIR (per pairing: --pairings tt,ti,it,ii, default tt); "
        "BindkitTriplets-NAME per --triplets FILE; BindkitColorSwap / BindkitBiVLC for "
        "--colorswap DIR / --bivlc DIR; BindkitCLEVRBinding / BindkitPUGSPAR-SUBSET / "
        "BindkitPUGSPARE for --clevr-binding DIR / --pug-spar DIR / --pug-spare DIR. "
        "`-m bindkit/SPEC` runs any bindkit model "
        "(e.g. bindkit/st:default; its device from the spec, +device=cuda); any other -m is "
        "mteb's; several -m run one after another. -q (before or after COMMAND) keeps mteb's "
        "log to warnings and hides the bars. Every other argument is mteb's, e.g. "
        "`bindkit mteb run -m bindkit/st:default -t SABERMCQ --output-folder out`; "
        "`bindkit mteb run --help` shows mteb's options.",
        usage="bindkit mteb COMMAND [--saber DIR] [--pairings P,...] [--triplets FILE] "
        "[--colorswap DIR] [--bivlc DIR] [--clevr-binding DIR] [--pug-spar DIR] "
        "[--pug-spare DIR] [mteb's arguments ...]",
    )
    parser.add_argument(
        "arguments",
        nargs=argparse.REMAINDER,
        metavar="COMMAND ...",
        help="an mteb command and its arguments, with bindkit's data options",
    )
    parser.set_defaults(handler=_mteb)


def _mteb(args: argparse.Namespace) -> int:
    import importlib.util

    from bindkit.errors import BindkitError

    if importlib.util.find_spec("mteb") is None:
        raise BindkitError("bindkit mteb needs mteb; pip install 'bindkit[mteb]'")
    from bindkit._progress import library_progress
    from bindkit.cli import _quiet
    from bindkit.mteb_bridge.mteb_cli import main

    # -q after COMMAND too (mteb's parser has none): where every other command takes it
    arguments = [a for a in args.arguments if a not in ("-q", "--quiet")]
    quiet = bool(getattr(args, "quiet", False)) or len(arguments) < len(args.arguments)
    try:
        with _quiet(quiet), library_progress():
            return main(arguments, quiet=quiet)
    except SystemExit as exc:  # mteb's argparse: --help, or a usage error it already printed
        return exc.code if isinstance(exc.code, int) else 2
