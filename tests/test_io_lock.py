"""Atomic writes keep normal file modes; a directory lock refuses a second live writer."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bindkit._io import atomic_write_text
from bindkit._lock import LOCK_NAME, LockedError, directory_lock


def test_atomic_write_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "a.txt", "x")
    finally:
        os.umask(old)
    assert (tmp_path / "a.txt").stat().st_mode & 0o777 == 0o644


def test_lock_refuses_a_second_writer_and_names_the_holder(tmp_path: Path) -> None:
    with directory_lock(tmp_path, "first"):
        assert (tmp_path / LOCK_NAME).exists()
        with (
            pytest.raises(LockedError, match=rf"first \(PID {os.getpid()}\)"),
            directory_lock(tmp_path, "second"),
        ):
            pass
    assert not (tmp_path / LOCK_NAME).exists()
    with directory_lock(tmp_path, "again"):
        pass


def test_a_stale_lock_from_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    )
    dead = int(proc.stdout)
    import json
    import socket

    (tmp_path / LOCK_NAME).write_text(
        json.dumps({"pid": dead, "host": socket.gethostname(), "command": "x"})
    )
    with directory_lock(tmp_path, "new") as path:
        assert json.loads(path.read_text())["pid"] == os.getpid()


def test_the_os_lock_excludes_even_without_the_holder_file(tmp_path: Path) -> None:
    """The exclusion is the OS lock, not the file: deleting the file does not let a second
    writer in (the old O_EXCL scheme did), and the message still names the command."""
    with directory_lock(tmp_path, "first"):
        (tmp_path / LOCK_NAME).unlink()
        with (
            pytest.raises(LockedError, match="in use by another bindkit command"),
            directory_lock(tmp_path, "second"),
        ):
            pass


def test_a_killed_holders_lock_is_taken_over(tmp_path: Path) -> None:
    """kill -9 of a holder leaves its file behind; the kernel dropped its OS lock, so the next
    writer takes the directory at once."""
    import signal
    import time

    code = (
        "import sys, time; from pathlib import Path; from bindkit._lock import directory_lock\n"
        "with directory_lock(Path(sys.argv[1]), 'holder'):\n"
        "    print('held', flush=True); time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    holder = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)], env=env, stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    with (
        pytest.raises(LockedError, match=rf"holder \(PID {holder.pid}\)"),
        directory_lock(tmp_path, "second"),
    ):
        pass
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait()
    assert (tmp_path / LOCK_NAME).exists()  # left behind by the killed holder
    started = time.monotonic()
    with directory_lock(tmp_path, "next") as path:
        assert '"command": "next"' in path.read_text()
    assert time.monotonic() - started < 5


def test_one_directory_is_one_lock_however_it_is_spelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out results``, ``--out ./results/``, ``--out /abs/results`` and a symlink to it are one
    directory: a second writer through any other spelling is refused while the first holds it."""
    real = tmp_path / "results"
    real.mkdir()
    (tmp_path / "link").symlink_to(real, target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    spellings = [Path("results"), Path("./results/"), real, tmp_path / "link", Path("link")]
    spellings.append(tmp_path / "link" / ".." / "results")
    for first in spellings:
        with directory_lock(first, "first"):
            for second in spellings:
                with (
                    pytest.raises(LockedError, match="first"),
                    directory_lock(second, "second"),
                ):
                    pass
    with directory_lock(tmp_path / "link", "again"):  # each was released
        pass
