"""One writer per output directory: an OS file lock, and a lock file that names its holder.

Commands that write into a directory (synth runs, eval results, renders, training runs) hold
``DIR/.bindkit.lock`` while they work. A second writer gets a one-line error naming the holder's
command and PID.

The exclusion itself is a :class:`filelock.FileLock` (``flock``) on a file in the host's lock
folder, keyed by the directory's resolved path: the kernel drops it when its process dies, so a
killed writer never blocks the next one, and two processes that both find a stale lock cannot
both take it. The file in ``DIR`` only says who holds it: it is written once the OS lock is held
and removed on release; one left behind by a killed process on this host is taken over silently.
A holder on another host (a shared file system) is respected while its file is there, since an
OS lock on one host does not reach the others.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bindkit._io import atomic_write_text, make_dirs
from bindkit.errors import BindkitError, path_error

if TYPE_CHECKING:
    from filelock import BaseFileLock

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


def host_lock_path(key: str) -> Path:
    """The host-wide lock file for ``key`` (a resolved path): one per key, in a folder every user
    of the host can write (sticky, like /tmp), so no lock file is left in an output folder."""
    folder = Path(tempfile.gettempdir()) / "bindkit-locks"
    if not folder.is_dir():
        folder.mkdir(mode=0o1777, exist_ok=True)
        with contextlib.suppress(OSError):  # another user's folder: theirs to set
            os.chmod(folder, 0o1777)  # mkdir's mode is masked by the umask
    return folder / (hashlib.sha256(key.encode("utf-8")).hexdigest()[:32] + ".lock")


def os_lock(path: Path, *, blocking: bool) -> BaseFileLock:
    """A :class:`filelock.FileLock` on ``path`` (mode 0666, so every user of the host can take
    it); with ``blocking``, ``acquire()`` waits, else it raises :class:`filelock.Timeout`."""
    from filelock import FileLock

    return FileLock(str(path), mode=0o666, timeout=-1 if blocking else 0)


def _locked_message(directory: Path, path: Path, holder: dict[str, object] | None) -> str:
    if holder is None or not isinstance(holder.get("pid"), int):
        return (
            f"{directory}: in use by another bindkit command; wait for it to finish, or delete "
            f"{path} if no bindkit command is running"
        )
    where = "" if holder.get("host") == socket.gethostname() else f" on {holder.get('host')}"
    return (
        f"{directory}: in use by {holder.get('command', 'another bindkit command')}"
        f" (PID {holder['pid']}{where}); wait for it to finish, or delete {path} if that"
        " process is gone"
    )


@contextmanager
def directory_lock(directory: Path, command: str) -> Iterator[Path]:
    """Hold ``directory/.bindkit.lock`` for the duration of the ``with`` block.

    Args:
        directory: the output directory (created if missing).
        command: what is writing, for the error message (e.g. ``"bindkit synth generate"``).

    Raises:
        LockedError: a live process holds the lock (on this host: its OS lock; on another host:
            its lock file).
        PathError: the directory cannot be created or written.
    """
    from filelock import Timeout

    make_dirs(directory)
    path = directory / LOCK_NAME
    guard = os_lock(host_lock_path(str(directory.resolve())), blocking=False)
    try:
        guard.acquire()
    except Timeout:
        # the holder writes its file right after taking the OS lock: give it a moment
        holder = _read_holder(path)
        for _ in range(10):
            if holder is not None:
                break
            time.sleep(0.1)
            holder = _read_holder(path)
        raise LockedError(_locked_message(directory, path, holder)) from None
    except OSError as exc:
        raise path_error(exc, directory) from exc
    me = {
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "command": command,
        "since": time.time(),
    }
    try:
        holder = _read_holder(path)
        # on this host the OS lock is ours, so a holder file of this host is a killed writer's
        if (
            holder is not None
            and isinstance(holder.get("pid"), int)
            and holder.get("host") != me["host"]
        ):
            raise LockedError(_locked_message(directory, path, holder))
        atomic_write_text(path, json.dumps(me))
        try:
            yield path
        finally:
            holder = _read_holder(path)
            if holder is not None and holder.get("pid") == me["pid"]:
                path.unlink(missing_ok=True)
    finally:
        guard.release()
