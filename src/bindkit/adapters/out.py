"""Where ``bindkit soup`` and ``bindkit lines`` write a new adapter: one policy for both.

An adapter directory is a unit (its config, its weights and its card must belong together), so
it is never updated file by file. The new adapter is written into a staging directory with a
unique name next to ``--out`` (``.OUT.XXXXXXXX.tmp``; two writers never share one) and moved
into place with one ``rename``:

- ``--out`` missing (or an empty directory): the rename publishes the whole adapter at once. If
  another writer published there meanwhile, the rename fails and this writer refuses with one
  line, leaving the other's adapter as it is.
- ``--out`` holding an adapter: refused unless ``--overwrite``; with it, the old directory is
  renamed aside, the new one renamed in, and the old one deleted, so no file of the old adapter
  (its README.md, a note) is left beside the new weights. Between the two renames ``--out`` is
  briefly missing; it never holds a mix. With two ``--overwrite`` writers the last one wins.

A killed writer leaves at most its own ``.OUT.*.tmp`` (or ``.OUT.*.tmp.old*``) directory beside
``--out``; ``--out`` itself is always either the old adapter or a whole new one. The renames are
:func:`bindkit._staging.swap_into_place`, the same as ``bindkit export`` and the results site use.
"""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bindkit._io import (
    _umask,
    check_can_create,
    check_not_input,
    make_dirs,
    removed_if_failed_empty,
)
from bindkit.errors import BindkitError, path_error

CONFIG = "adapter_config.json"


def check_out(out: Path, inputs: Iterable[Path], *, overwrite: bool) -> None:
    """Refuse an ``--out`` the command may not write, before anything is read or computed.

    Raises:
        BindkitError: ``out`` overlaps an input (is inside one, or holds one), lies under a
            regular file, is a file, is a non-empty directory without ``--overwrite``, or, with
            ``--overwrite``, a non-empty directory that is not a peft adapter (it is replaced
            whole, so only an adapter may be).
    """
    check_not_input(out, list(inputs))
    if out.exists() and not out.is_dir():
        raise path_error(OSError(errno.EEXIST, "File exists"), out)
    check_can_create(out)
    if not out.exists():
        return
    if not any(out.iterdir()):
        return
    is_adapter = (out / CONFIG).is_file()
    if not overwrite:
        what = "holds an adapter" if is_adapter else "exists and is not empty"
        raise BindkitError(
            f"--out {out}: {what}; pass --overwrite to replace it whole, or choose another path"
        )
    if not is_adapter:
        raise BindkitError(
            f"--out {out}: exists and is not a peft adapter directory (no {CONFIG}); "
            "--overwrite only replaces an adapter; choose another path"
        )


def check_finite(tensors: Mapping[str, Any], where: Path) -> None:
    """Refuse a NaN or an infinity in any tensor, naming the file and the tensor.

    Raises:
        BindkitError: ``where: tensor KEY holds NaN or inf; ...``.
    """
    import torch

    for key in sorted(tensors):
        if not bool(torch.isfinite(tensors[key]).all()):
            raise BindkitError(
                f"{where}: tensor {key} holds NaN or inf; retrain or re-copy the adapter"
            )


@contextmanager
def staged(out: Path, *, overwrite: bool) -> Iterator[Path]:
    """Yield an empty staging directory next to ``out``; when the body succeeds, publish it as
    ``out`` (module docstring). On failure the staging directory is deleted, and so are the
    parents of ``out`` this call created while still empty.

    Raises:
        BindkitError: ``out`` appeared while writing and ``overwrite`` is off.
        PathError: the parent cannot be created or written (read-only, immutable, full disk).
    """
    with removed_if_failed_empty(out.parent):
        make_dirs(out.parent)
        try:
            stage = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent))
        except OSError as exc:
            raise path_error(exc, out) from exc
        try:
            yield stage
            _sync_files(stage)
            os.chmod(stage, 0o777 & ~_umask())  # mkdtemp makes 0700; a plain mkdir would not
            _publish(stage, out, overwrite=overwrite)
        except BaseException as exc:
            shutil.rmtree(stage, ignore_errors=True)
            if isinstance(exc, OSError) and not isinstance(exc, BindkitError):
                raise path_error(exc, out) from exc
            raise


def _publish(stage: Path, out: Path, *, overwrite: bool) -> None:
    from bindkit._staging import swap_into_place

    swap_into_place(
        stage,
        out,
        replace=overwrite,
        taken="another writer created it meanwhile; its adapter is kept; pass --overwrite to "
        "replace it, or choose another path",
    )


def _sync_files(directory: Path) -> None:
    """Flush the staged files to disk, so the published adapter survives a power cut whole."""
    for path in directory.iterdir():
        if path.is_file():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
