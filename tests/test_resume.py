"""Resume equals an uninterrupted run: a command killed with SIGKILL at a fixed point and rerun
writes the same bytes as one that was never stopped (review cells F103 / S49).

The kill is real: a child process runs the command's ``main`` with one of its writes wrapped so
that the k-th write puts out half its line and then the process sends itself SIGKILL (a torn
line, as a kill in the middle of a write leaves). The default suite kills at two points per
command; ``-m slow`` walks a fixed list of points.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bindkit.cli import main

# the k-th write to examples.jsonl (or rejected.jsonl) is torn and the process killed there;
# 50 and 100 sit on the diversity controls' refresh boundary (diversity.REFRESH)
KILL_POINTS = [1, 7, 23, 49, 50, 51, 99, 100, 163]

_KILLER = textwrap.dedent(
    """
    import json, os, signal, sys
    import bindkit.synth.generate as generate
    from bindkit.cli import main

    target, kill_at = sys.argv[1], int(sys.argv[2])
    written = 0
    plain = generate._append

    def torn(handle, row):
        global written
        if not handle.name.endswith(target):
            return plain(handle, row)
        written += 1
        if written < kill_at:
            return plain(handle, row)
        line = json.dumps(row, ensure_ascii=False) + "\\n"
        handle.write(line[: len(line) // 2])
        handle.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    generate._append = torn
    sys.exit(main(sys.argv[3:]))
    """
)


def _killed(argv: list[str], target: str, kill_at: int) -> None:
    """Run ``bindkit ARGV`` in a child that SIGKILLs itself at the ``kill_at``-th write to
    ``target``."""
    done = subprocess.run(
        [sys.executable, "-c", _KILLER, target, str(kill_at), *argv],
        env={**os.environ, "BINDKIT_PROGRESS": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


def _same_files(made: Path, reference: Path, names: list[str]) -> None:
    for name in names:
        assert (made / name).read_bytes() == (reference / name).read_bytes(), name


def _synth(out: Path, n: int) -> list[str]:
    return ["synth", "generate", "--n", str(n), "--seed", "3", "--out", str(out), "-q"]


SYNTH_FILES = ["examples.jsonl", "rejected.jsonl", "train.jsonl", "val.jsonl", "test.jsonl"]


@pytest.fixture(scope="module")
def synth_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("uninterrupted")
    assert main(_synth(out, 240)) == 0
    return out


def _resumed_synth(tmp_path: Path, target: str, kill_at: int) -> Path:
    out = tmp_path / "resumed"
    _killed(_synth(out, 240), target, kill_at)
    assert main(_synth(out, 240)) == 0
    return out


@pytest.mark.parametrize("kill_at", [23, 51])
def test_synth_generate_killed_and_rerun_equals_an_uninterrupted_run(
    synth_reference: Path, tmp_path: Path, kill_at: int
) -> None:
    out = _resumed_synth(tmp_path, "examples.jsonl", kill_at)
    _same_files(out, synth_reference, SYNTH_FILES)


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_synth_generate_resumes_to_the_same_bytes_from_every_kill_point(
    synth_reference: Path, tmp_path: Path, kill_at: int
) -> None:
    out = _resumed_synth(tmp_path, "examples.jsonl", kill_at)
    _same_files(out, synth_reference, SYNTH_FILES)


def test_a_controller_rebuilt_mid_block_plans_what_the_running_one_plans() -> None:
    """The unit of the rule: the banned and avoid lists depend on the counts at the last
    refresh boundary, not on when a plan first asks for them."""
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.diversity import Controller
    from bindkit.synth.generate import accept_or_reject

    backend, running, accepted = TemplateBackend(0), Controller(), []
    attempt = 0
    while running.accepted < 80:
        plan = running.plan(attempt, 0)
        attempt += 1
        example, _, _ = accept_or_reject(backend.produce(plan), running, 0)
        if example is not None:
            running.record(example)
            accepted.append(example)
    asked = Controller()  # asked for a plan mid-block, as a running generator does
    for example in accepted[:60]:
        asked.record(example)
    asked.plan(attempt, 0)
    for example in accepted[60:73]:
        asked.record(example)
    rebuilt = Controller()  # rebuilt from the file at 73, as a resumed one is
    for example in accepted[:73]:
        rebuilt.record(example)
    assert asked.plan(attempt, 0) == rebuilt.plan(attempt, 0)
