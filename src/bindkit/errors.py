"""User-facing errors: each one is a single line that names the culprit and says what to do."""

from __future__ import annotations

import errno
import os


class BindkitError(Exception):
    """An error caused by the user's input (a file, field or option), not by a bug.

    The CLI prints ``bindkit: error: <message>`` on one line and exits with status 2.
    """


class VocabularyError(BindkitError):
    """A vocabulary directory is malformed or too small for the requested options."""


class DataFormatError(BindkitError):
    """A data file (e.g. ``saber.jsonl``) cannot be parsed or does not follow its schema."""


class TrainingDivergedError(BindkitError):
    """A training run's loss or weights became non-finite; nothing was written.

    A sweep records such a trial as failed and goes on.
    """


class PathError(BindkitError, OSError):
    """A file system operation on a user-chosen path failed (permission, read-only, disk full).

    It is also an :class:`OSError`, so code that handles file errors keeps working.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# errno -> what to do about it; the strerror says what happened
_ADVICE = {
    errno.EACCES: "make it writable or choose another path",
    errno.EPERM: "it may be immutable or owned by someone else; choose another path",
    errno.EROFS: "choose a path on a writable disk",
    errno.ENOSPC: "free space or choose another disk",
    errno.EDQUOT: "free space or choose another disk",
    errno.ENOTDIR: "a parent of it is a regular file; choose another path",
    errno.EISDIR: "give a file path, not a directory",
    errno.EEXIST: "a file is in the way; remove it or choose another path",
    errno.ENOENT: "it does not exist; check the path",
    errno.ENAMETOOLONG: "the name is too long; choose a shorter path",
}


def describe_os_error(exc: OSError, path: object | None = None) -> str:
    """One line for an :class:`OSError`: ``PATH: what happened; what to do``.

    Args:
        exc: the error, e.g. from ``open`` or ``mkdir``.
        path: the path to name; default: the error's own ``filename``.
    """
    name = path if path is not None else exc.filename
    what = exc.strerror or (os.strerror(exc.errno) if exc.errno else type(exc).__name__)
    advice = _ADVICE.get(exc.errno or 0, "check the path and its permissions")
    return f"{name}: {what.lower()}; {advice}" if name is not None else f"{what}; {advice}"


def path_error(exc: OSError, path: object | None = None) -> PathError:
    """The :class:`PathError` to raise ``from exc`` for a failed file operation on ``path``."""
    error = PathError(describe_os_error(exc, path))
    error.errno = exc.errno
    error.filename = str(path) if path is not None else exc.filename
    return error
