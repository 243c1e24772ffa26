"""Render a SABER directory's images with any backend, resumably.

Every item's scene goes to ``DIR/images/<item id>.png``, mirrored when the item's ``flip`` flag is
set (the file on disk is final; the manifest records ``flip_applied``). Each PNG carries what it
was drawn for (text chunks: the hash of the item's prompt, bindings, realisations and flip; the
redo counter; the backend's description), so an image is kept only while it decodes completely
and still shows its item: a killed render continues where it stopped, a corrupt file is redone,
and an item whose data changed since (``saber generate --overwrite``) is drawn again. ``--redo``
raises the item's redo counter, which enters the backend's seed: a new variant. Images are
written atomically. At the end ``saber.jsonl`` gets the ``image`` fields and the manifest an
``images`` section: backend, model, options (only when every image shares them), count, set
hash, ``renders`` (each description by key) and ``items`` (per image: ``sha256``,
``prompt_sha256``, ``redo``, ``render``).
"""

from __future__ import annotations

import io
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from bindkit._lock import directory_lock
from bindkit.errors import BindkitError, path_error
from bindkit.saber.io import IMAGES_DIR, MCQ, Item, drawn_for_sha256, read_saber, write_saber

# PNG text chunks: what the image was drawn for
DRAWN_FOR, REDO, RENDER = "bindkit:prompt_sha256", "bindkit:redo", "bindkit:render"


class RenderBackend(Protocol):
    """What :func:`render_saber` needs from a backend."""

    name: str
    parallel: str  # "process" (CPU-bound), "thread" (network-bound) or "none" (one device)

    def describe(self) -> dict[str, Any]: ...

    def check(self, mcqs: Sequence[MCQ]) -> None: ...

    def render(self, item: Item, mcq: MCQ, variant: int = 0) -> Any:
        """The item's scene; ``variant`` (the redo counter) > 0 asks for a different draw."""
        ...


@dataclass
class RenderSummary:
    """What a render did, for the CLI's final table and for tests."""

    items: int = 0
    rendered: int = 0
    kept: int = 0
    redone: int = 0  # existing files that were corrupt, or listed in --redo
    stale: int = 0  # valid files drawn for other data (or by a render that did not record it)
    failed: list[tuple[str, str]] = field(default_factory=list)
    manifest: dict[str, Any] | None = None

    def table(self) -> str:
        rows = [
            ("items", self.items),
            ("rendered now", self.rendered),
            ("kept (already valid)", self.kept),
            ("redone (corrupt or --redo)", self.redone),
            ("redrawn (data changed)", self.stale),
            ("failed", len(self.failed)),
        ]
        return "\n".join(f"  {name:<28}{value:>8}" for name, value in rows)


def image_name(item: Item) -> str:
    return f"{IMAGES_DIR}/{item.id}.png"


def is_valid_image(path: Path, size: tuple[int, int] | None = None) -> bool:
    """True when ``path`` decodes completely (and has ``size``, if given)."""
    return image_record(path, size) is not None


def image_record(path: Path, size: tuple[int, int] | None = None) -> dict[str, str] | None:
    """The text chunks of a PNG that decodes completely (and has ``size``); None otherwise."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            image.load()
            if size is not None and image.size != size:
                return None
            return dict(getattr(image, "text", {}) or {})
    except (OSError, SyntaxError, ValueError):
        return None


def read_rejects(path: str | Path) -> set[str]:
    """Item ids from a rejects file: one id per line (``#`` comments) or the review page's JSON
    export (``{"rejected": [ids]}``)."""
    import json

    path = Path(path)
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BindkitError(f"--redo {path}: cannot read ({exc}); pass the rejects file") from exc
    if text.lstrip().startswith("{"):
        try:
            ids = json.loads(text).get("rejected")
        except (ValueError, AttributeError) as exc:
            raise BindkitError(f"--redo {path}: corrupt JSON ({exc}); export it again") from exc
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise BindkitError(f"--redo {path}: 'rejected' must be a list of item ids")
        return set(ids)
    return {line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")}


def _encode_png(image: Any, flip: bool, chunks: dict[str, str]) -> bytes:
    from PIL import ImageOps
    from PIL.PngImagePlugin import PngInfo

    if flip:
        image = ImageOps.mirror(image)
    info = PngInfo()
    for key, value in chunks.items():
        info.add_text(key, value)
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="PNG", compress_level=3, pnginfo=info)
    return buffer.getvalue()


def write_image(path: Path, data: bytes) -> None:
    """Temp file + rename, like :func:`bindkit._io.atomic_write_bytes` but without fsync: a
    killed render never leaves a partial file under the final name, and a file damaged by a
    power cut fails :func:`is_valid_image` and is redone. One fsync per image made a 9,000-image
    render disk-bound (8 min wall for 1.8 min of CPU here)."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise path_error(exc, path) from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk: one line naming the image, the render stops
            raise path_error(exc, path) from exc
        raise


@dataclass(frozen=True)
class _Todo:
    item: Item
    mcq: MCQ
    path: str
    chunks: dict[str, str]  # what the image is drawn for, stored in the PNG

    @property
    def variant(self) -> int:
        return int(self.chunks[REDO])


def _job(backend: RenderBackend, todo: _Todo) -> str | None:
    """Render one item to its path; return the error message instead of raising."""
    try:
        if todo.variant:
            image = backend.render(todo.item, todo.mcq, todo.variant)
        else:
            image = backend.render(todo.item, todo.mcq)
        write_image(Path(todo.path), _encode_png(image, todo.item.flip, todo.chunks))
    except BindkitError as exc:
        if getattr(exc, "fatal", False) or isinstance(exc, OSError):  # a deadline, a full disk
            raise
        return str(exc)
    return None


def _executor(backend: RenderBackend, workers: int) -> Executor | None:
    if workers <= 1 or backend.parallel == "none":
        return None
    if backend.parallel == "process":
        return ProcessPoolExecutor(max_workers=workers)
    return ThreadPoolExecutor(max_workers=workers)


def _results(
    backend: RenderBackend, todo: list[_Todo], workers: int
) -> Iterator[tuple[Item, str | None]]:
    executor = _executor(backend, workers)
    if executor is None:
        for job in todo:
            yield job.item, _job(backend, job)
        return
    with executor:
        futures = {executor.submit(_job, backend, job): job.item for job in todo}
        from concurrent.futures import as_completed

        for future in as_completed(futures):
            yield futures[future], future.result()


def render_saber(
    directory: str | Path,
    backend: RenderBackend,
    *,
    redo: Iterable[str] = (),
    workers: int = 1,
    progress: bool = True,
    on_image: Callable[[str], None] | None = None,
) -> RenderSummary:
    """Render every item of a SABER directory that has no valid image yet.

    Args:
        directory: A directory made by ``bindkit saber generate``.
        backend: A :class:`RenderBackend` (procedural, diffusers, openai).
        redo: Item ids to render again even if their image is valid (a review's rejects).
        workers: Parallel renders: processes for the procedural backend, concurrent requests
            for the API backend; the diffusers backend renders one at a time.
        progress: Show a progress bar on stderr.
        on_image: Called with each finished item id (tests use it to interrupt a render).

    Returns:
        A :class:`RenderSummary`; ``failed`` lists items whose backend gave up (their ``image``
        stays null and a rerun tries them again).

    Raises:
        BindkitError: unknown ``redo`` ids, a backend that cannot draw the data, or the
            directory is in use by another command.
    """
    directory = Path(directory)
    if workers < 1:
        raise BindkitError(f"--workers {workers}: must be at least 1")
    with directory_lock(directory, "bindkit saber render"):
        data = read_saber(directory)
        if not data.mcqs:  # nothing to draw: refuse rather than rewrite the manifest
            raise BindkitError(
                f"{directory}/saber.jsonl: holds no MCQs; run `bindkit saber generate`"
            )
        backend.check(data.mcqs)
        redo = set(redo)
        known = {item.id for mcq in data.mcqs for item in mcq.items}
        unknown = sorted(redo - known)
        if unknown:
            raise BindkitError(
                f"--redo: {len(unknown)} id(s) not in {directory} (first: {unknown[0]}); "
                "pass a rejects file exported from this directory's review page"
            )
        summary = RenderSummary(items=len(known))
        description = _canonical(backend.describe())
        done: set[str] = set()
        chunks: dict[str, dict[str, str]] = {}  # per item: the record of its image
        todo: list[_Todo] = []
        for mcq in data.mcqs:
            for item in mcq.items:
                path = directory / image_name(item)
                drawn_for = drawn_for_sha256(item, mcq)
                found = image_record(path) if path.exists() else None
                shows_item = found is not None and found.get(DRAWN_FOR) == drawn_for
                if found is not None and shows_item and item.id not in redo and _complete(found):
                    summary.kept += 1
                    done.add(item.id)
                    chunks[item.id] = found
                    continue
                variant = _redo_count(found) if shows_item else 0
                if item.id in redo and shows_item:
                    variant += 1
                if found is not None and not shows_item:
                    summary.stale += 1
                elif path.exists():
                    summary.redone += 1
                record = {DRAWN_FOR: drawn_for, REDO: str(variant), RENDER: description}
                chunks[item.id] = record
                todo.append(_Todo(item, mcq, str(path), record))
        (directory / IMAGES_DIR).mkdir(exist_ok=True)
        bar = _progress(len(todo), f"rendering ({backend.name})", progress)
        for item, error in _results(backend, todo, workers):
            bar.update(1)
            if error is None:
                summary.rendered += 1
                done.add(item.id)
                if on_image is not None:
                    on_image(item.id)
            else:
                summary.failed.append((item.id, error))
        bar.close()
        section = _section(backend, {i: chunks[i] for i in sorted(done)})
        summary.manifest = write_saber(
            directory, _with_images(data.mcqs, done), {"images": section}
        )
    return summary


def _canonical(described: dict[str, Any]) -> str:
    from bindkit._io import canonical_json

    return canonical_json(
        {k: described.get(k) for k in ("backend", "model")}
        | {"options": described.get("options", {})}
    )


def _complete(found: dict[str, str] | None) -> bool:
    """The record names a redo counter and a parseable render description."""
    import json

    if found is None or not found.get(REDO, "").isdigit():
        return False
    try:
        return isinstance(json.loads(found.get(RENDER, "")), dict)
    except ValueError:
        return False


def _redo_count(found: dict[str, str] | None) -> int:
    try:
        return max(int((found or {}).get(REDO, "0")), 0)
    except ValueError:
        return 0


def _section(backend: RenderBackend, chunks: dict[str, dict[str, str]]) -> dict[str, Any]:
    """The manifest's images section: each distinct render description once (by a short key),
    and per image what it was drawn for; top-level options only when every image shares them."""
    import hashlib
    import json

    renders: dict[str, Any] = {}
    items: dict[str, dict[str, Any]] = {}
    for item_id, found in chunks.items():
        text = found[RENDER]
        key = hashlib.sha256(text.encode()).hexdigest()[:12]
        renders.setdefault(key, json.loads(text))
        items[item_id] = {
            "prompt_sha256": found[DRAWN_FOR],
            "redo": _redo_count(found),
            "render": key,
        }
    described = backend.describe()
    shared = next(iter(renders.values())) if len(renders) == 1 else None
    return {
        "backend": described["backend"],
        "model": described.get("model"),
        "options": shared["options"] if shared is not None else None,
        "flip_applied": True,
        "renders": renders,
        "items": items,
    }


def _with_images(mcqs: Sequence[MCQ], done: set[str]) -> list[MCQ]:
    """Point every item in ``done`` at its image file, every other item at nothing."""

    def update(item: Item) -> Item:
        return replace(item, image=image_name(item) if item.id in done else None)

    out = []
    for mcq in mcqs:
        items = [update(item) for item in mcq.items]
        out.append(replace(mcq, query=items[0], candidates=tuple(items[1:])))
    return out


class _NoBar:
    def update(self, _n: int) -> None: ...

    def close(self) -> None: ...


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled or total == 0:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="image", file=sys.stderr)
