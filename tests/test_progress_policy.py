"""Issue 21: one progress policy for bindkit's bars and the libraries' (tqdm) bars."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bindkit._progress import LineProgress, RedrawLines


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_redraws_become_a_line_every_interval_and_the_last_state() -> None:
    out, clock = io.StringIO(), Clock()
    stream = RedrawLines(out, interval=30, clock=clock)
    for step in range(100):  # 100 redraws over 99 s, as tqdm writes them
        clock.now = float(step)
        stream.write(f"\rtrain: {step}%|##  | {step}/100   ")
    stream.write("\n")  # tqdm's close(leave=True)
    stream.write("done\n")
    assert out.getvalue().splitlines() == [
        "train: 0%|##  | 0/100",
        "train: 30%|##  | 30/100",
        "train: 60%|##  | 60/100",
        "train: 90%|##  | 90/100",
        "train: 99%|##  | 99/100",
        "done",
    ]
    assert "\r" not in out.getvalue()


def test_a_cleared_bar_shows_its_last_state_and_silent_drops_every_redraw() -> None:
    out, clock = io.StringIO(), Clock()
    stream = RedrawLines(out, interval=30, clock=clock)
    stream.write("\rLoading weights: 0/10")
    clock.now = 1.0
    stream.write("\rLoading weights: 10/10")
    stream.write("\r" + " " * 30)  # close(leave=False): clear, then a lone \r
    stream.write("\r")
    assert out.getvalue() == "Loading weights: 0/10\nLoading weights: 10/10\n"
    quiet = io.StringIO()
    silent = RedrawLines(quiet, silent=True)
    silent.write("\rLoading weights: 3/10")
    silent.write("\n")
    silent.write("bindkit: error: x\n")
    assert quiet.getvalue() == "bindkit: error: x\n"


def test_a_nested_bar_leaves_no_cursor_escape_nor_blank_line() -> None:
    """tqdm at ``position`` 1 writes a newline, its redraw, then a cursor-up escape (the
    sequence mteb's nested bars wrote under ``bindkit mteb -q``): off a terminal, nothing of
    it but the bars' lines; silent, nothing at all."""
    writes = ["\rtasks: 0/1", "\n", "\rqueries: 0/4", "\x1b[A", "", "\rqueries: 4/4", "\n"]
    writes += ["\n", "\rranking: 0/4", "\x1b[A", "\rtasks: 1/1", "\n", "done\n"]
    quiet = io.StringIO()
    silent = RedrawLines(quiet, silent=True)
    for text in writes:
        silent.write(text)
    assert quiet.getvalue() == "done\n"
    out = io.StringIO()
    stream = RedrawLines(out, interval=30, clock=Clock())
    for text in writes:
        stream.write(text)
    assert "\x1b" not in out.getvalue() and "\n\n" not in out.getvalue()
    assert out.getvalue().endswith("done\n")


def test_line_progress_shows_a_postfix_and_a_resumed_start() -> None:
    out, clock = io.StringIO(), Clock()
    bar = LineProgress(10, "examples", unit="ex", stream=out, clock=clock, initial=4)
    bar.set_postfix_str("8 requests waiting")
    clock.now = 31.0
    bar.update(0)  # a heartbeat while nothing is accepted
    assert out.getvalue().startswith("examples: 4/10 exs (40%)")
    assert out.getvalue().rstrip().endswith("; 8 requests waiting")


SCRIPT = """
import sys, time
from tqdm import tqdm
from bindkit.cli import main
import bindkit.cli

def handler(args):
    for _ in tqdm(range(2000), desc="library bar", mininterval=0):
        pass
    print("library done", file=sys.stderr)
    return 0

import argparse
real = bindkit.cli.build_parser
def build():
    parser = real()
    parser.set_defaults(handler=handler)
    return parser
bindkit.cli.build_parser = build
sys.exit(main([]))
"""


@pytest.mark.parametrize("setting", ["1", "0"])
def test_the_cli_applies_the_policy_to_a_library_bar(tmp_path: Path, setting: str) -> None:
    env = {**os.environ, "BINDKIT_PROGRESS": setting}
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    assert "\r" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[-1] == "library done"
    if setting == "0":
        assert lines == ["library done"]
    else:  # the first state and the last one: 2000 redraws in well under 30 s
        assert len(lines) == 3 and "0/2000" in lines[0] and "2000/2000" in lines[1]


@pytest.mark.slow
def test_transformers_loading_bar_is_silenced_by_bindkit_progress_0(tmp_path: Path) -> None:
    """The reviewer saw "Loading weights" on every model load even with BINDKIT_PROGRESS=0."""
    sts = tmp_path / "s.tsv"
    sts.write_text("s1\ts2\tscore\na red cup\ta cup that is red\t4.5\na dog\ta cat\t1.0\n")
    argv = [sys.executable, "-m", "bindkit", "eval", "--model", "st:default", "--task", "sts"]
    argv += ["--data", str(sts), "--no-cache", "--no-report"]
    for setting in ("0", "1"):
        env = {**os.environ, "BINDKIT_PROGRESS": setting}
        out = ["--out", str(tmp_path / f"r{setting}")]
        done = subprocess.run([*argv, *out], capture_output=True, text=True, env=env, check=True)
        assert "\r" not in done.stderr
        assert ("Loading weights" in done.stderr) == (setting == "1")
