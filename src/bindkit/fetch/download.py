"""Resumable HTTP downloads with checksums, and archive extraction into a task's layout.

A download streams into ``DEST.part``; a rerun after a killed or cut-off transfer asks for the
rest with a ``Range`` request (a server that ignores it sends the whole file, which then
replaces the part). Only a complete file whose hash matches the pinned one is renamed to
``DEST``: a mismatch removes the part and is one line naming both hashes.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO

from bindkit.errors import BindkitError

CHUNK = 1 << 20
TIMEOUT = 60.0


def _agent() -> str:
    from bindkit import __version__

    return f"bindkit/{__version__}"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def download(url: str, dest: Path, *, sha256: str | None = None, progress: bool = False) -> Path:
    """Download ``url`` to ``dest``, resuming ``dest.part`` if an earlier run left one.

    Raises:
        BindkitError: the server refuses or the connection drops (the part is kept: run again
            to resume), or the content's sha256 is not ``sha256`` (nothing is kept).
    """
    from bindkit._io import make_dirs
    from bindkit._progress import progress as reporter

    if dest.is_file():  # renamed into place only once complete and checked, or put there
        if sha256 is not None and _sha256_file(dest) != sha256:
            raise BindkitError(
                f"{dest}: not the file published at {url} (sha256 differs from the pinned "
                f"{sha256}); remove it to download it again"
            )
        return dest
    make_dirs(dest.parent)
    part = dest.with_name(dest.name + ".part")
    offset = part.stat().st_size if part.is_file() else 0
    headers = {"User-Agent": _agent()}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        response = urllib.request.urlopen(
            urllib.request.Request(url, headers=headers), timeout=TIMEOUT
        )
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:  # the part is already whole: check it below
            response = None
        else:
            raise BindkitError(
                f"{url}: HTTP {exc.code} {exc.reason}; check the URL or try later"
            ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BindkitError(
            f"{url}: cannot connect ({reason}); check the network and run again"
        ) from None
    if response is not None:
        with response:
            resumed = response.status == 206
            if offset and not resumed:
                offset = 0  # the server sent the whole file
            length = response.headers.get("Content-Length")
            expected = None if length is None else offset + int(length)
            bar = reporter(expected or 0, dest.name, unit="B", initial=offset, enabled=progress)
            received = offset
            try:
                with part.open("ab" if resumed else "wb") as handle:
                    for block in _blocks(response):
                        handle.write(block)
                        received += len(block)
                        bar.update(len(block))
            except OSError as exc:
                raise BindkitError(
                    f"{url}: the transfer broke off after {received} bytes ({exc}); run again "
                    f"to resume from {part}"
                ) from None
            finally:
                bar.close()
            if expected is not None and received < expected:
                raise BindkitError(
                    f"{url}: the connection closed after {received} of {expected} bytes; run "
                    f"again to resume from {part}"
                )
    if sha256 is not None:
        found = _sha256_file(part)
        if found != sha256:
            part.unlink()
            raise BindkitError(
                f"{url}: sha256 {found} is not the pinned {sha256}; the download was removed "
                "(the publisher changed the file? report it)"
            )
    part.replace(dest)
    return dest


def _blocks(response: IO[bytes]) -> Iterator[bytes]:
    while True:
        try:
            block = response.read(CHUNK)
        except (ConnectionError, TimeoutError) as exc:
            raise OSError(str(exc)) from None
        except Exception as exc:  # http.client.IncompleteRead and friends
            if type(exc).__module__ == "http.client":
                raise OSError(f"{type(exc).__name__}") from None
            raise
        if not block:
            return
        yield block


# -- archives ---------------------------------------------------------------------------------
def member_target(name: str, *, strip: int = 0, flatten: bool = False) -> PurePosixPath | None:
    """Where an archive member lands relative to the extraction folder; None to skip it
    (folders' own entries, macOS resource forks, members inside the stripped levels).

    Raises:
        BindkitError: a member whose path is absolute or climbs out with ``..``.
    """
    path = PurePosixPath(name.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        raise BindkitError(f"archive member {name!r} leaves the folder; the archive is unsafe")
    parts = path.parts
    if not parts or parts[0] == "__MACOSX" or path.name.startswith("._"):
        return None
    if flatten:
        return PurePosixPath(path.name)
    if len(parts) <= strip:
        return None
    return PurePosixPath(*parts[strip:])


def extract(archive: Path, folder: Path, *, strip: int = 0, flatten: bool = False) -> int:
    """Unpack a zip or tar archive's regular files into ``folder``; returns the file count.

    Each file is written beside its target and renamed into place, so an interrupted
    extraction leaves whole files only; a rerun writes them again.
    """
    count = 0
    if zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as zf:
            for info in zf.infolist():
                target = (
                    None
                    if info.is_dir()
                    else member_target(info.filename, strip=strip, flatten=flatten)
                )
                if target is not None:
                    with zf.open(info) as source:
                        _write(source, folder / target)
                    count += 1
        return count
    if tarfile.is_tarfile(archive):
        with tarfile.open(archive) as tf:
            for member in tf:
                if not member.isfile():
                    continue
                target = member_target(member.name, strip=strip, flatten=flatten)
                data = tf.extractfile(member)
                if target is not None and data is not None:
                    with data:
                        _write(data, folder / target)
                    count += 1
        return count
    raise BindkitError(f"{archive}: neither a zip nor a tar archive; remove it and run again")


def _write(source: IO[bytes], target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("wb") as handle:
        shutil.copyfileobj(source, handle, CHUNK)
    tmp.replace(target)
