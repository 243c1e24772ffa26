"""Small file helpers shared by every command: atomic writes, stray-file cleanup, hashes."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError, path_error


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` so that readers see either the old file or the whole new one.

    The bytes go to a temporary file in the same directory, are flushed to disk, and the file is
    renamed over ``path``; an interrupted write leaves at most a stray ``.tmp`` file behind
    (:func:`remove_stray_temps` cleans those up).

    Raises:
        PathError: the file cannot be written (permissions, read-only or full disk, a regular
            file where a directory should be); one line naming the path and what to do.
    """
    make_dirs(path.parent)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp creates 0600 files; give the result the mode a plain open() would (umask).
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise path_error(exc, path) from exc
        raise


def atomic_write_figure(figure: Any, path: Path, *, dpi: int = 120) -> Path:
    """Save a matplotlib ``figure`` as a PNG at ``path`` atomically (:func:`atomic_write_bytes`)
    and close it; returns ``path``."""
    import io

    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        figure.savefig(buffer, format="png", dpi=dpi)
    finally:
        plt.close(figure)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def make_dirs(directory: Path) -> None:
    """``mkdir -p`` that fails with one line (:class:`~bindkit.errors.PathError`) naming it."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except FileExistsError as exc:  # a regular file holds the name of the directory
        raise path_error(OSError(errno.ENOTDIR, "Not a directory"), directory) from exc
    except OSError as exc:
        raise path_error(exc, directory) from exc


def check_can_create(path: Path) -> None:
    """Fail early, before long work, when ``path`` cannot be a directory we write into.

    Finds the nearest existing ancestor: a regular file there means the path can never be
    created. Permissions are checked by the write itself (root ignores mode bits).
    """
    for parent in (path, *path.parents):
        if parent.exists():
            if not parent.is_dir():
                raise path_error(OSError(errno.ENOTDIR, "Not a directory"), path)
            return


def check_not_input(out: Path, inputs: Iterable[Path], *, option: str = "--out") -> None:
    """Refuse an output path that would replace or land inside an input, before any work.

    ``out`` and each input are compared as resolved paths (symlinks and ``..`` followed), and
    as the same file on disk when both exist (hard links). Equal paths are refused, and so is an
    output inside an input directory or an output directory holding an input: pass exactly the
    files and directories the command reads (a data *directory* whose files must not be
    touched, or just the data files when outputs may sit beside them).

    Raises:
        BindkitError: ``out`` overlaps an input; one line naming both and what to do.
    """
    target = Path(out).resolve()
    for given in inputs:
        source = Path(given).resolve()
        if target == source or _same_file(target, source):
            why = f"is the input {given}"
        elif target.is_relative_to(source):
            why = f"is inside the input directory {given}"
        elif source.is_relative_to(target):
            why = f"holds the input {given}"
        else:
            continue
        raise BindkitError(
            f"{option} {out}: {why}; choose another path (an output never replaces an input)"
        )


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


@contextmanager
def removed_if_failed_empty(directory: Path) -> Iterator[None]:
    """Run the body; if it fails, delete ``directory`` and the parents it created, when empty.

    A command that fails (a bad model, a corrupt input) must not leave behind an empty output
    directory it created itself; one that existed before, or holds anything, is kept.
    """
    created = [p for p in (Path(directory), *Path(directory).parents) if not p.exists()]
    try:
        yield
    except BaseException:
        for path in created:  # deepest first
            try:
                path.rmdir()  # only succeeds when empty
            except OSError:
                break
        raise


def stray_temps(directory: Path, names: Iterable[str]) -> list[Path]:
    """Temporary files that :func:`atomic_write_bytes` left in ``directory`` for ``names``.

    A killed writer leaves ``.NAME.XXXXXXXX.tmp`` behind; the caller must hold the directory's
    lock (:func:`bindkit._lock.directory_lock`) before deleting them, so no live writer owns one.
    """
    if not directory.is_dir():
        return []
    prefixes = tuple(f".{name}." for name in names)
    return sorted(
        p
        for p in directory.iterdir()
        if p.name.startswith(prefixes) and p.name.endswith(".tmp") and p.is_file()
    )


def remove_stray_temps(directory: Path, names: Iterable[str]) -> list[Path]:
    """Delete :func:`stray_temps` of ``names`` in ``directory``; returns the paths removed."""
    found = stray_temps(directory, names)
    for path in found:
        try:
            path.unlink(missing_ok=True)
        except OSError as exc:
            raise path_error(exc, path) from exc
    return found


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write_text(path: Path, text: str) -> None:
    """UTF-8 variant of :func:`atomic_write_bytes`."""
    atomic_write_bytes(path, text.encode("utf-8"))


def canonical_json(obj: Any) -> str:
    """JSON with sorted keys and no insignificant whitespace: stable bytes for hashing."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def jsonl_bytes(rows: Iterable[Any]) -> bytes:
    """Serialise rows as JSON Lines (one compact object per line, keys in insertion order)."""
    return b"".join(
        json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        for row in rows
    )


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path, chunk: int = 1 << 20) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def tree_digest(
    root: Path,
    *,
    keep: Callable[[Path], bool] | None = None,
    digest: Callable[[Path], str] = sha256_file,
) -> str:
    """sha256 over a folder's files: one ``relative/name=digest`` line per file, sorted by name.

    The one folder digest (a recipe's input folders, a model folder's fingerprint): a file's
    name counts as much as its content, so two files that swap names change it. ``keep``
    (given the path relative to ``root``) leaves files out; ``digest`` hashes one file (a
    remembered digest for multi-GB weights).
    """
    hasher = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if path.is_file() and (keep is None or keep(relative)):
            hasher.update(f"{relative.as_posix()}={digest(path)}\n".encode())
    return hasher.hexdigest()
