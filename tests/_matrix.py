"""The reliability matrix's engine, shared by every ``tests/test_reliability_matrix*.py`` file.

A row (:class:`Case`) is one command with the fixtures it needs, the exit status and a fragment of
the message it must give, and the files that must come out byte-identical. :func:`run_matrix_case`
builds the row's fixtures with the file's own builder, runs ``bindkit.cli.main(argv)`` in-process
in the row's own directory, and snapshots the guarded files; :func:`check_outcome` asserts the
row. An exception escaping ``main`` is the in-process form of a traceback and fails the row.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import io
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from bindkit.cli import main


@dataclass
class Cell:
    """A row's working directory, the shared base fixtures, and undo actions (unmount, chattr)."""

    dir: Path
    base: Path
    undo: list[Callable[[], None]] = field(default_factory=list)


@dataclass(frozen=True)
class Case:
    """One cell of the matrix.

    ``unchanged``: paths (files or directories) whose bytes must not change; by default every
    file present before a failing command (rc != 0), and the input fixtures of a successful one.
    """

    id: str
    cmd: str
    setup: tuple[str, ...] = ()
    rc: int = 2
    fragment: str = ""
    unchanged: tuple[str, ...] | None = None
    env: tuple[tuple[str, str], ...] = ()
    absent: tuple[str, ...] = ()
    slow: bool = False


def C(
    id: str,
    cmd: str,
    setup: str | tuple[str, ...] = "",
    rc: int = 2,
    fragment: str = "",
    **kw: object,
) -> Case:
    steps = setup if isinstance(setup, tuple) else tuple(setup.split())
    return Case(id, cmd, steps, rc, fragment, **kw)  # type: ignore[arg-type]


def snapshot(paths: list[Path]) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in paths:
        files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
        for f in files:
            out[str(f)] = hashlib.sha256(f.read_bytes()).hexdigest()
    return out


@dataclass
class Outcome:
    rc: int
    out: str
    err: str
    changed: list[str]
    present: list[str]


def settle() -> None:
    """Close what an in-process bindkit run in a row's setup left to the garbage collector.

    Its embedding cache would otherwise close (and SQLite checkpoint its WAL into the file) at a
    random later moment, which reads as the row's own command changing the cache. A builder
    that runs bindkit with the cache on calls this once at its end (a collection costs about
    0.3 s with torch loaded, so not every row pays it).
    """
    gc.collect()


def run_matrix_case(
    case: Case,
    cell: Cell,
    monkeypatch: pytest.MonkeyPatch,
    build: Callable[[Cell, str], None],
    inputs: tuple[str, ...],
) -> Outcome:
    """Build the row's fixtures in ``cell`` with ``build``, run its command in-process, and check
    the files; ``inputs`` are the names guarded after a successful command.

    An exception escaping ``main`` propagates: that is the in-process form of a traceback.
    """
    monkeypatch.chdir(cell.dir)
    monkeypatch.setenv("BINDKIT_CACHE_DIR", str(cell.dir / "cache"))
    for key, value in case.env:
        monkeypatch.setenv(key, value)
    for name in case.setup:
        build(cell, name)
    if case.unchanged is not None:
        guarded = [cell.dir / p for p in case.unchanged]
    elif case.rc != 0:
        guarded = [cell.dir]
    else:
        guarded = [cell.dir / p for p in inputs if (cell.dir / p).exists()]
    before = snapshot(guarded)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(shlex.split(case.cmd))
        except SystemExit as exc:  # argparse usage errors
            rc = exc.code if isinstance(exc.code, int) else 2
    after = snapshot([p for p in guarded if p.exists()])
    changed = sorted(k for k in before if before[k] != after.get(k))
    present = [p for p in case.absent if (cell.dir / p).exists()]
    return Outcome(int(rc), out.getvalue(), err.getvalue(), changed, present)


def check_outcome(case: Case, outcome: Outcome) -> None:
    text = outcome.out + outcome.err
    assert "Traceback" not in outcome.err, outcome.err
    assert outcome.rc == case.rc, f"rc {outcome.rc}, expected {case.rc}: {text[-2000:]}"
    assert case.fragment in text, f"{case.fragment!r} not in: {text[-2000:]}"
    assert not outcome.changed, f"changed: {outcome.changed}"
    assert not outcome.present, f"must not exist: {outcome.present}"
    if case.rc == 2 and outcome.err.startswith("bindkit: error:"):
        assert outcome.err.count("bindkit: error:") == 1 and outcome.err.strip().count("\n") == 0
