"""Resumable HTTP downloads with checksums, and archive extraction into a task's layout.

A download streams into ``DEST.part`` (its sidecar ``DEST.part.json`` names the URL and the
server's validators); a rerun after a killed or cut-off transfer asks for the rest with a
``Range`` request (a server that ignores it, or whose file changed, sends the whole file, which
then replaces the part). Only a complete file whose hash matches the pinned one (or, unpinned,
whose length and first bytes are right) is renamed to ``DEST``: a mismatch removes the part
and is one line.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

from bindkit.errors import BindkitError

CHUNK = 1 << 20
TIMEOUT = 60.0  # seconds per socket operation (connect, each read)
STALL_SECONDS = 60.0  # a window in which fewer than STALL_BYTES arrive ends the transfer
STALL_BYTES = 1024
PART_DEADLINE = 6 * 3600.0  # seconds one file may take in one run (the part is kept: resume)
HTML_START = (b"<!doctype html", b"<html", b"<head", b"<?xml")


def _agent() -> str:
    from bindkit import __version__

    return f"bindkit/{__version__}"


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _meta_path(part: Path) -> Path:
    return part.with_name(part.name + ".json")


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        meta = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return meta if isinstance(meta, dict) else None


def _resumable(part: Path, url: str) -> tuple[int, dict[str, Any]]:
    """Bytes of ``part`` that may be resumed and what its sidecar records of the server's
    file; 0 (and the part removed) for a part this function did not write for ``url``, or one
    longer than the file it was for: appending to a foreign prefix would build a wrong file."""
    meta = _read_meta(_meta_path(part)) if part.is_file() else None
    if part.is_file():
        size = part.stat().st_size
        length = meta.get("length") if meta is not None else None
        if (
            meta is not None
            and meta.get("url") == url
            and not (isinstance(length, int) and size > length)
        ):
            return size, meta
        part.unlink()
    _meta_path(part).unlink(missing_ok=True)
    return 0, {}


def _open(url: str, offset: int, meta: dict[str, Any]) -> Any:
    """The server's response (None: 416, the part already holds the whole file)."""
    headers = {"User-Agent": _agent()}
    if offset:
        headers["Range"] = f"bytes={offset}-"
        validator = meta.get("etag") or meta.get("last_modified")
        if isinstance(validator, str):
            headers["If-Range"] = validator  # the file changed: the server sends all of it
    try:
        return urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=TIMEOUT)
    except urllib.error.HTTPError as exc:
        if exc.code == 416 and offset:
            return None
        raise BindkitError(
            f"{url}: HTTP {exc.code} {exc.reason}; check the URL or try later"
        ) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            raise BindkitError(
                f"{url}: no answer within {TIMEOUT:g} s; check the network and run again"
            ) from None
        raise BindkitError(
            f"{url}: cannot connect ({reason}); check the network and run again"
        ) from None


def download(url: str, dest: Path, *, sha256: str | None = None, progress: bool = False) -> Path:
    """Download ``url`` to ``dest``, resuming ``dest.part`` if an earlier run left one.

    The part's sidecar (``dest.part.json``) names the URL and the server's validators, so only
    a part written for this URL is resumed (with ``If-Range``). A transfer that stalls (fewer
    than :data:`STALL_BYTES` in :data:`STALL_SECONDS`) or outlasts :data:`PART_DEADLINE` stops
    with the part kept. An unpinned file is checked for its length and its kind (an HTML page
    or a file whose first bytes are not of its type is refused); a pinned one for its sha256.

    Raises:
        BindkitError: the server refuses, the connection drops or stalls (the part is kept:
            run again to resume), or the content is not the file (nothing is kept).
    """
    from bindkit._io import make_dirs

    if dest.is_file():  # renamed into place only once complete and checked, or put there
        if sha256 is not None and _sha256_file(dest) != sha256:
            raise BindkitError(
                f"{dest}: not the file published at {url} (sha256 differs from the pinned "
                f"{sha256}); remove it to download it again"
            )
        return dest
    make_dirs(dest.parent)
    part = dest.with_name(dest.name + ".part")
    offset, meta = _resumable(part, url)
    response = _open(url, offset, meta)
    if response is None and meta.get("length") != offset:  # 416, yet not the file's length
        _discard(part)
        response = _open(url, 0, {})
    if response is not None:
        with response:
            meta = _transfer(response, url, part, offset, progress)
    if sha256 is not None:
        found = _sha256_file(part)
        if found != sha256:
            _discard(part)
            raise BindkitError(
                f"{url}: sha256 {found} is not the pinned {sha256}; the download was removed "
                "(the publisher changed the file? report it)"
            )
    else:
        problem = content_problem(part, dest.name)
        if problem is not None:
            _discard(part)
            raise BindkitError(
                f"{url}: {problem}, not {dest.name}; the download was removed (an error or "
                "login page?); check the URL or try later"
            )
    part.replace(dest)
    _meta_path(part).unlink(missing_ok=True)
    return dest


def _discard(part: Path) -> None:
    part.unlink(missing_ok=True)
    _meta_path(part).unlink(missing_ok=True)


def _transfer(response: Any, url: str, part: Path, offset: int, progress: bool) -> dict[str, Any]:
    """Stream ``response`` into ``part`` (appending after ``offset`` on a 206); returns the
    sidecar it wrote. Raises a one-line error when the transfer breaks off, stalls or
    outlasts :data:`PART_DEADLINE`, the part kept for the next run."""
    from bindkit._io import atomic_write_text
    from bindkit._progress import progress as reporter
    from bindkit.errors import path_error

    resumed = response.status == 206
    if offset and not resumed:
        offset = 0  # the server sent the whole file
    length = response.headers.get("Content-Length")
    expected = None if length is None or not length.isdigit() else offset + int(length)
    meta = {
        "url": url,
        "length": expected,
        "etag": response.headers.get("ETag"),
        "last_modified": response.headers.get("Last-Modified"),
    }
    try:
        handle = part.open("ab" if resumed else "wb")
        atomic_write_text(_meta_path(part), json.dumps(meta) + "\n")
    except OSError as exc:
        raise path_error(exc, part) from exc
    name = part.name.removesuffix(".part")
    bar = reporter(expected or 0, name, unit="B", initial=offset, enabled=progress)
    received = offset
    start = window = time.monotonic()
    in_window = 0
    resume = f"run again to resume from {part}"
    try:
        with handle:
            for block in _blocks(response):
                handle.write(block)
                received += len(block)
                in_window += len(block)
                bar.update(len(block))
                now = time.monotonic()
                if now - start > PART_DEADLINE:
                    raise BindkitError(
                        f"{url}: still downloading after {PART_DEADLINE:g} s (the limit per "
                        f"file; {received} bytes so far); {resume}"
                    )
                if now - window >= STALL_SECONDS:
                    if in_window < STALL_BYTES:
                        raise BindkitError(
                            f"{url}: too slow ({in_window} bytes in the last {now - window:.0f} "
                            f"s, {received} so far); {resume}"
                        )
                    window, in_window = now, 0
    except OSError as exc:
        raise BindkitError(
            f"{url}: the transfer broke off after {received} bytes ({exc}); {resume}"
        ) from None
    finally:
        bar.close()
    if expected is not None and received < expected:
        raise BindkitError(
            f"{url}: the connection closed after {received} of {expected} bytes; {resume}"
        )
    return meta


# the first bytes a file of each kind starts with
MAGIC: dict[str, tuple[bytes, ...]] = {
    ".pkl": (b"\x80",),
    ".zip": (b"PK\x03\x04", b"PK\x05\x06"),
    ".tgz": (b"\x1f\x8b",),
    ".gz": (b"\x1f\x8b",),
    ".json": (b"{", b"["),
    ".mat": (b"MATLAB",),  # MAT-file v5 and v7.3 headers
}
TAR_MAGIC = b"ustar"  # at offset 257 of a tar archive's first header


def content_problem(path: Path, name: str) -> str | None:
    """What shows that ``path`` is not a file called ``name`` (an HTML page, or first bytes
    unlike its kind's: see :data:`MAGIC`; a ``.tar`` by its ustar header), or None. For
    unpinned files, whose hash is unknown."""
    with path.open("rb") as handle:
        head = handle.read(512)
    if not head:
        return "the server sent an empty file"
    text, suffix = head.lstrip().lower(), Path(name).suffix.lower()
    if suffix not in (".html", ".htm", ".xml") and text.startswith(HTML_START):
        kind = "an XML document" if text.startswith(b"<?xml") else "an HTML page"
        return f"the server sent {kind}"
    if suffix == ".tar" and head[257:262] != TAR_MAGIC:
        return "the server sent a file that does not start like a .tar file"
    magic = MAGIC.get(suffix)
    if magic is not None and not (text if suffix == ".json" else head).startswith(magic):
        return f"the server sent a file that does not start like a {suffix} file"
    return None


def _blocks(response: IO[bytes]) -> Iterator[bytes]:
    """What the server sent, as it arrives (``read1``: one socket read, so a trickle is seen)."""
    read = getattr(response, "read1", response.read)
    while True:
        try:
            block = read(CHUNK)
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
