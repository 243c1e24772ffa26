"""The ``bindkit`` command: a thin layer over the library, one module per command group.

Each group module in this package exposes ``register(subparsers)``, which adds its sub-commands
and binds each to a handler ``(args) -> int``; a new command group is one new module here.
:func:`main` turns any :class:`~bindkit.errors.BindkitError` into one line on stderr and exit
status 2. Library code converts file and database errors where it knows the path; as a last
resort :func:`main` does the same for an :class:`OSError` or an SQLite error that escaped, so a
user never sees a traceback for a full disk or a protected directory. Anything else (a
``TypeError``, ``KeyError`` ...) is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sqlite3
import sys
from collections.abc import Iterator, Sequence

from bindkit.errors import BindkitError, describe_os_error

# Listed order is the order of `bindkit --help`; any other module here with `register` follows.
_FIRST = ("saber", "eval", "synth", "models")


def _group_modules() -> list[str]:
    import pkgutil

    import bindkit.cli

    found = sorted(
        m.name for m in pkgutil.iter_modules(bindkit.cli.__path__) if not m.name.startswith("_")
    )
    return [name for name in _FIRST if name in found] + [n for n in found if n not in _FIRST]


def build_parser() -> argparse.ArgumentParser:
    from importlib import import_module

    from bindkit import __version__

    parser = argparse.ArgumentParser(
        prog="bindkit",
        description="Measure and improve attribute-object binding in embedding models.",
    )
    parser.add_argument("--version", action="version", version=f"bindkit {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")
    for name in _group_modules():
        module = import_module(f"bindkit.cli.{name}")
        if hasattr(module, "register"):
            module.register(commands)
    for command, summary in _commands(parser):
        _finish(command, summary)
    return parser


def _commands(
    parser: argparse.ArgumentParser, summary: str | None = None
) -> list[tuple[argparse.ArgumentParser, str | None]]:
    """Every runnable (leaf) command's parser with the one-line help its parent lists."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return [(parser, summary)]
    helps = {a.dest: a.help for a in groups[0]._choices_actions}
    leaves = []
    for name, sub in groups[0].choices.items():
        leaves += _commands(sub, helps.get(name))
    return leaves


def _shown(default: object) -> str:
    if isinstance(default, list | tuple):
        return ", ".join(str(d) for d in default)
    return str(default)  # a Path as its text, never its repr


def _finish(command: argparse.ArgumentParser, summary: str | None) -> None:
    """One convention for every command: a description (its summary line when it has none),
    every meaningful default written out as a value (``(default: 8)``, never a Python repr),
    and ``-q/--quiet`` (no progress output) where the command did not define it."""
    if not command.description and summary:
        command.description = summary[0].upper() + summary[1:] + "."
    for action in command._actions:
        if (
            not action.option_strings
            or action.nargs == 0  # flags: store_true/false/const, help, version
            or action.default in (None, argparse.SUPPRESS, "", [], ())
            or not action.help
            or "default" in action.help.lower()
        ):
            continue
        action.help = f"{action.help} (default: {_shown(action.default).replace('%', '%%')})"
    if not any("-q" in a.option_strings for a in command._actions):
        command.add_argument("-q", "--quiet", action="store_true", help="no progress output")


def _suggest(parser: argparse.ArgumentParser, tokens: list[str], extras: list[str]) -> str:
    """``; did you mean --task?`` for a mistyped option of the command in ``tokens``."""
    import difflib

    command = parser
    for token in tokens:  # descend to the (sub)command the tokens name
        subcommands = next(
            (a for a in command._actions if isinstance(a, argparse._SubParsersAction)), None
        )
        if subcommands is not None and token in subcommands.choices:
            command = subcommands.choices[token]
    known = [o for a in command._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for extra in extras:
        name = extra.split("=", 1)[0]
        if name.startswith("-"):
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            if close:
                hints.append((name, close[0]))
    if len(hints) == 1:
        return f"; did you mean {hints[0][1]}?"
    return f"; did you mean {', '.join(f'{b} for {a}' for a, b in hints)}?" if hints else ""


@contextlib.contextmanager
def _quiet(quiet: bool) -> Iterator[None]:
    """``-q``: no progress output from bindkit or the libraries for the command's duration."""
    if not quiet:
        yield
        return
    before = os.environ.get("BINDKIT_PROGRESS")
    os.environ["BINDKIT_PROGRESS"] = "0"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("BINDKIT_PROGRESS", None)
        else:
            os.environ["BINDKIT_PROGRESS"] = before


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``) and return the exit status."""
    parser = build_parser()
    tokens = list(sys.argv[1:] if argv is None else argv)
    args, extras = parser.parse_known_args(tokens)
    if extras:
        hint = _suggest(parser, tokens, extras)
        parser.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    from bindkit._progress import library_progress

    try:
        with _quiet(getattr(args, "quiet", False)), library_progress():
            # the libraries' tqdm bars follow bindkit's progress policy
            return int(handler(args))
    except BindkitError as exc:  # one line, even when a library's message had several
        print(f"bindkit: error: {' '.join(str(exc).splitlines())}", file=sys.stderr)
        return 2
    except shutil.SameFileError as exc:  # shutil.copy onto its own source
        print(f"bindkit: error: {exc}; choose an output that is not an input", file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"bindkit: error: {describe_os_error(exc)}", file=sys.stderr)
        return 2
    except sqlite3.DatabaseError as exc:
        if isinstance(exc, sqlite3.ProgrammingError):
            raise
        print(
            f"bindkit: error: embedding cache: {exc}; check BINDKIT_CACHE_DIR, or pass --no-cache",
            file=sys.stderr,
        )
        return 2
    except KeyboardInterrupt:
        print("bindkit: interrupted", file=sys.stderr)
        return 130
