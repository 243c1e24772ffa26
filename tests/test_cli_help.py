"""One convention for every command's help: a description, help on every option, defaults as
values (never Python reprs), and one quiet flag, ``-q/--quiet``."""

from __future__ import annotations

import argparse
import os
import re

import pytest

from bindkit.cli import _commands, _quiet, build_parser

COMMANDS = {" ".join(p.prog.split()[1:]): p for p, _ in _commands(build_parser())}

# what a Python value looks like when it leaks into a help text
_REPR = re.compile(
    r"PosixPath\(|<function |<class | object at 0x|\bbindkit(\.[a-z_]+)+\.[A-Z_]{2,}"
)


def _options(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if not isinstance(a, argparse._HelpAction)]


def test_every_command_is_walked() -> None:
    for name in ("saber generate", "eval", "report", "models", "cache list", "synth split"):
        assert name in COMMANDS
    assert len(COMMANDS) >= 25


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_command_help_convention(name: str) -> None:
    parser = COMMANDS[name]
    assert parser.description, f"bindkit {name}: no description"
    flags = {o for a in parser._actions for o in a.option_strings}
    assert {"-q", "--quiet"} <= flags, f"bindkit {name}: no -q/--quiet"
    text = parser.format_help()
    assert not _REPR.search(text), f"bindkit {name}: a Python repr in --help: {_REPR.search(text)}"
    for action in _options(parser):
        if not action.option_strings or action.dest == "directory":
            continue
        assert action.help, f"bindkit {name} {action.option_strings}: no help"
        meaningful = action.nargs != 0 and action.default not in (None, "", [], ())
        if meaningful and action.default is not argparse.SUPPRESS:
            assert "default" in action.help.lower(), (
                f"bindkit {name} {action.option_strings[-1]}: default {action.default!r} not shown"
            )


def test_defaults_are_written_as_values() -> None:
    text = COMMANDS["compare"].format_help()
    assert "(default: compare)" in " ".join(text.split())  # a Path default, as its text
    assert "(default: 12)" in " ".join(text.split())


def test_quiet_silences_progress_for_the_command_only(monkeypatch: pytest.MonkeyPatch) -> None:
    from bindkit._progress import progress_enabled

    monkeypatch.delenv("BINDKIT_PROGRESS", raising=False)
    with _quiet(True):
        assert not progress_enabled()
    assert progress_enabled() and "BINDKIT_PROGRESS" not in os.environ
    with _quiet(False):
        assert progress_enabled()


def test_quiet_reaches_the_handler(monkeypatch: pytest.MonkeyPatch) -> None:
    """``bindkit models -q`` runs its handler with progress off (the flag is not decoration)."""
    import bindkit.cli.models as models
    from bindkit.cli import main

    seen: list[bool] = []
    monkeypatch.delenv("BINDKIT_PROGRESS", raising=False)

    def spy(_args: argparse.Namespace) -> int:
        from bindkit._progress import progress_enabled

        seen.append(progress_enabled())
        return 0

    monkeypatch.setattr(models, "_models", spy)
    assert main(["models", "-q"]) == 0
    assert main(["models"]) == 0
    assert seen == [False, True]
