"""One writer per output directory: a lock file that names its holder.

Commands that write into a directory (synth runs, eval results, renders) hold
``DIR/.bindkit.lock`` while they work. A second writer gets a one-line error naming the holder's
PID; a lock left behind by a killed process (its PID is gone) is taken over silently.
"""

from __future__ import annotations

import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from bindkit._io import make_dirs
from bindkit.errors import BindkitError, path_error

LOCK_NAME = ".bindkit.lock"


class LockedError(BindkitError):
    """Another live process holds the directory's lock."""


def process_alive(pid: int) -> bool:
    """Whether a process with this id runs on this host (one we may not signal counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _read_holder(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


@contextmanager
def directory_lock(directory: Path, command: str) -> Iterator[Path]:
    """Hold ``directory/.bindkit.lock`` for the duration of the ``with`` block.

    Args:
        directory: the output directory (created if missing).
        command: what is writing, for the error message (e.g. ``"bindkit synth generate"``).

    Raises:
        LockedError: a live process on this host holds the lock.
        PathError: the directory cannot be created or written.
    """
    make_dirs(directory)
    path = directory / LOCK_NAME
    me = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": command,
        "since": time.time(),
    }
    for _ in range(3):
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            holder = _read_holder(path)
            pid = holder.get("pid") if holder else None
            same_host = holder is not None and holder.get("host") == me["host"]
            if isinstance(pid, int) and (not same_host or process_alive(pid)):
                assert holder is not None
                where = "" if same_host else f" on {holder.get('host')}"
                raise LockedError(
                    f"{directory}: in use by {holder.get('command', 'another bindkit command')}"
                    f" (PID {pid}{where}); wait for it to finish, or delete {path} if that"
                    " process is gone"
                ) from None
            if holder is None and time.time() - path.stat().st_mtime < 2:
                time.sleep(0.2)  # a writer may be between creating and filling the file
                continue
            path.unlink(missing_ok=True)  # stale: its process is gone
            continue
        except OSError as exc:
            raise path_error(exc, directory) from exc
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(me, handle)
        except OSError as exc:  # e.g. the disk is full: leave no empty lock behind
            path.unlink(missing_ok=True)
            raise path_error(exc, path) from exc
        break
    else:
        raise LockedError(
            f"{path}: lock file is held and unreadable; delete it if no bindkit command is running"
        )
    try:
        yield path
    finally:
        holder = _read_holder(path)
        if holder is not None and holder.get("pid") == me["pid"]:
            path.unlink(missing_ok=True)
