"""Whole-folder outputs (an export, a site): staged under a unique name, renamed into place.

Two writers of one output must never share a staging folder: each stages into its own
``.{out}.{tag}-{pid}-XXXXXXXX`` beside the target (the pid says whose it is), and only folders
whose writer is gone are cleaned up. The finished folder replaces the target by renames only,
so a reader sees the old folder or a whole new one; when another writer puts its folder in
place between our two renames, we try again a bounded number of times (the last writer wins).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
from pathlib import Path

from bindkit._io import _umask, make_dirs
from bindkit._lock import process_alive
from bindkit.errors import BindkitError, path_error

ATTEMPTS = 8


def _prefix(out: Path, tag: str) -> str:
    return f".{out.name}.{tag}-"


def _owner(name: str, prefix: str) -> int | None:
    """The pid in a staging folder's name, None when the name is not one of ours."""
    pid, _, rest = name[len(prefix) :].partition("-")
    return int(pid) if pid.isdigit() and rest else None


def remove_dead_staging(out: Path, tag: str) -> list[Path]:
    """Delete staging folders of ``out`` left by writers that were killed; returns them.

    A folder of a live process (another writer at work) is never touched.
    """
    parent, prefix = out.parent, _prefix(out, tag)
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for path in parent.iterdir():
        if not path.name.startswith(prefix) or not path.is_dir() or path.is_symlink():
            continue
        pid = _owner(path.name, prefix)
        if pid is not None and pid != os.getpid() and not process_alive(pid):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def new_staging(out: Path, tag: str) -> Path:
    """A fresh, empty folder beside ``out`` that only this call owns (mode as ``mkdir``)."""
    parent = out.parent if str(out.parent) else Path(".")
    make_dirs(parent)
    remove_dead_staging(out, tag)
    try:
        staging = Path(tempfile.mkdtemp(prefix=f"{_prefix(out, tag)}{os.getpid()}-", dir=parent))
        staging.chmod(0o777 & ~_umask())  # not mkdtemp's owner-only mode
    except OSError as exc:
        raise path_error(exc, parent / f"{_prefix(out, tag)}{os.getpid()}-*") from exc
    return staging


def swap_into_place(staging: Path, out: Path, *, replace: bool, taken: str | None = None) -> None:
    """Rename ``staging`` to ``out``; an existing ``out`` is replaced whole only when
    ``replace`` (it is moved aside first and deleted after), else refused with one line
    (``taken``: what that line says after ``--out OUT:``). If the last rename fails for another
    reason, the old ``out`` is put back.

    Raises:
        BindkitError: ``out`` appeared (another writer) and ``replace`` is false, or other
            writers kept replacing it for :data:`ATTEMPTS` tries.
    """
    aside: list[Path] = []
    try:
        for attempt in range(ATTEMPTS):
            if replace and out.exists():
                old = staging.with_name(f"{staging.name}.old{attempt}")
                try:
                    os.rename(out, old)
                    aside.append(old)
                except FileNotFoundError:
                    pass  # another writer moved it aside first
            try:
                os.rename(staging, out)  # onto nothing, or onto an empty folder
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOTDIR):
                    if aside and not out.exists():
                        with contextlib.suppress(OSError):  # best effort: the old one back
                            os.rename(aside.pop(), out)
                    raise path_error(exc, out) from exc
                if not replace:
                    raise BindkitError(
                        f"--out {out}: "
                        + (
                            taken
                            or "another run wrote it meanwhile; pass --overwrite to replace it, "
                            "or choose another --out"
                        )
                    ) from None
        raise BindkitError(f"--out {out}: other runs keep replacing it; run again when they end")
    finally:
        for old in aside:
            shutil.rmtree(old, ignore_errors=True)
