"""The shared embedding pipeline: dedup, cache, length-sorted batches, OOM back-off, progress,
multi-process sharding, L2 normalisation. Backends implement only ``_encode_*`` on one batch.

The cache is written on a background thread (its own SQLite connection): the embedding loop only
hands each finished batch over, the thread stores whatever has queued up in one transaction, so
the model never waits for the disk, and a killed run loses at most the batches in flight.
"""

from __future__ import annotations

import copy
import hashlib
import queue
import sys
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from bindkit._io import canonical_json
from bindkit._progress import progress as progress_bar
from bindkit._progress import progress_enabled
from bindkit.embed import distributed
from bindkit.embed.cache import EmbeddingCache
from bindkit.embed.images import ImageInput, ImagePolicy, content_key, load_image
from bindkit.embed.protocol import ROLES, Modality, Role
from bindkit.embed.video import VideoInput, VideoRef, as_video_ref
from bindkit.errors import BindkitError

T = TypeVar("T")


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CUDA/MPS/CPU allocator failures, whatever the framework's exception class."""
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


def l2_normalize(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    normalized: np.ndarray = vectors / np.maximum(norms, 1e-12)
    return normalized


def text_key(text: str) -> str:
    return "txt:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


class BaseEmbedder(ABC):
    """Implements :class:`~bindkit.embed.protocol.Embedder` around two per-batch hooks.

    Subclasses set ``modalities`` and implement :meth:`_describe`, :meth:`_encode_texts` and/or
    :meth:`_encode_images`, and :meth:`prompt_key` when roles or instructions change the input.
    Without an explicit ``batch_size`` the first call asks :meth:`suggested_batch_size`.
    """

    modalities: frozenset[Modality] = frozenset({"text"})
    #: how image files become pixels (EXIF, transparency); recorded in :meth:`describe`
    image_policy: ImagePolicy = ImagePolicy()

    def __init__(
        self,
        *,
        spec: str,
        batch_size: int | None = None,
        cache: EmbeddingCache | None = None,
        progress: bool | None = None,
    ) -> None:
        if batch_size is not None and (
            isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1
        ):
            raise BindkitError(f"batch_size={batch_size!r}: use a whole number of at least 1")
        self.spec = spec
        self.batch_size = batch_size or 32
        self._batch_size_chosen = batch_size is not None
        self.cache = cache
        self.progress = progress_enabled(progress)
        self.stats = {"embedded": 0, "cached": 0, "duplicates": 0}
        self._fingerprint: str | None = None
        self._description: dict[str, Any] | None = None

    # -- what subclasses provide -------------------------------------------------------------
    @abstractmethod
    def _describe(self) -> dict[str, Any]:
        """Everything besides role and instruction that changes a vector."""

    def suggested_batch_size(self) -> int:
        """The batch size used when the caller gives none (backends tune it per device)."""
        return 32

    def describe(self) -> dict[str, Any]:
        """Everything besides role and instruction that changes a vector (hashed into the
        fingerprint and written into result files). Computed once: it may digest weight files."""
        if self._description is None:
            self._description = self._describe()
        return copy.deepcopy(self._description)

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        """Everything besides the input that the model sees for this role and instruction."""
        return canonical_json({"modality": modality, "role": role, "instruction": instruction})

    def _encode_texts(
        self, texts: list[str], role: Role, instruction: str | None
    ) -> np.ndarray:  # pragma: no cover - per backend
        raise BindkitError(f"{self.spec} does not embed text")

    def _encode_images(
        self, images: list[Any], role: Role, instruction: str | None
    ) -> np.ndarray:  # pragma: no cover - per backend
        raise BindkitError(
            f"{self.spec} does not embed images; it embeds {sorted(self.modalities)}"
        )

    def _encode_videos(
        self, videos: list[Any], role: Role, instruction: str | None
    ) -> np.ndarray:  # pragma: no cover - per backend
        raise BindkitError(
            f"{self.spec} does not embed videos; it embeds {sorted(self.modalities)}"
        )

    def video_key(self, video: VideoRef) -> str:
        """Cache key of one video: its content plus everything that samples it (per backend)."""
        raise BindkitError(f"{self.spec} does not embed videos")  # pragma: no cover

    def video_tokens(self, video: VideoRef) -> int:
        """What one video costs a batch (tokens), for :attr:`video_batch_tokens`."""
        return 1

    #: token budget of one batch of videos (a video costs frames x tokens per frame)
    video_batch_tokens: int = 16384

    def text_length(self, text: str) -> int:
        return len(text)

    # -- the protocol ------------------------------------------------------------------------
    @property
    def fingerprint(self) -> str:
        if self._fingerprint is None:
            # describe() may digest weight files: call it once
            description = canonical_json(self.describe())
            self._fingerprint = hashlib.sha256(description.encode("utf-8")).hexdigest()[:24]
            if self.cache is not None:
                self.cache.register(self._fingerprint, self.spec, description)
        return self._fingerprint

    def embed_texts(
        self, texts: Sequence[str], *, role: Role = "query", instruction: str | None = None
    ) -> np.ndarray:
        self._check("text", role)
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise BindkitError(f"text #{i} is {type(text).__name__}, not str")
        return self._run(
            texts,
            keys=[text_key(t) for t in texts],
            lengths=[self.text_length(t) for t in texts],
            encode=lambda batch: self._encode_texts(batch, role, instruction),
            prompt=self.prompt_key("text", role, instruction),
            what="texts",
        )

    def embed_images(
        self,
        images: Sequence[ImageInput],
        *,
        role: Role = "query",
        instruction: str | None = None,
    ) -> np.ndarray:
        self._check("image", role)
        images = list(images)
        return self._run(
            images,
            keys=[content_key(im) for im in images],
            lengths=[0] * len(images),
            encode=lambda batch: self._encode_images(
                [load_image(im, self.image_policy) for im in batch], role, instruction
            ),
            prompt=self.prompt_key("image", role, instruction),
            what="images",
        )

    def embed_videos(
        self,
        videos: Sequence[VideoInput],
        *,
        role: Role = "query",
        instruction: str | None = None,
    ) -> np.ndarray:
        """Videos (files, or folders of frames) to vectors: dedup and cache by content and
        sampling settings, batches sized by tokens (:attr:`video_batch_tokens`)."""
        self._check("video", role)
        refs = [as_video_ref(v) for v in videos]
        keys = [self.video_key(ref) for ref in refs]
        return self._run(
            list(zip(refs, keys, strict=True)),
            keys=keys,
            lengths=[0] * len(refs),
            encode=lambda batch: self._encode_videos(batch, role, instruction),
            prompt=self.prompt_key("video", role, instruction),
            what="videos",
            cost=lambda item: self.video_tokens(item[0]),
        )

    # -- the pipeline ------------------------------------------------------------------------
    def _check(self, modality: Modality, role: str) -> None:
        if modality not in self.modalities:
            raise BindkitError(
                f"{self.spec} cannot embed {modality}s; "
                f"it embeds {', '.join(sorted(self.modalities))}"
            )
        if role not in ROLES:
            raise BindkitError(f"role {role!r}: use 'query' or 'document'")

    def _run(
        self,
        inputs: list[T],
        *,
        keys: list[str],
        lengths: list[int],
        encode: Callable[[list[T]], np.ndarray],
        prompt: str,
        what: str,
        cost: Callable[[T], int] | None = None,
    ) -> np.ndarray:
        if not inputs:
            return np.zeros((0, 0), dtype=np.float32)
        first: dict[str, int] = {}
        for index, key in enumerate(keys):
            first.setdefault(key, index)
        self.stats["duplicates"] += len(keys) - len(first)
        prompt_hash = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:24]
        found = (
            self.cache.get_many(self.fingerprint, prompt_hash, list(first)) if self.cache else {}
        )
        self.stats["cached"] += len(found)
        missing = [key for key in first if key not in found]
        costs = {k: cost(inputs[first[k]]) for k in missing} if cost is not None else None
        # longest first: an out-of-memory error shows up on the first batch, not the last
        missing.sort(key=lambda k: -(costs[k] if costs is not None else lengths[first[k]]))
        rank, size = distributed.world()
        mine = distributed.shard(missing, rank, size) if size > 1 else missing
        writer = _CacheWriter(self.cache, self.fingerprint, prompt_hash)
        try:
            computed = self._encode_all(
                [inputs[first[k]] for k in mine],
                mine,
                encode,
                what,
                writer.put,
                costs=None if costs is None else [costs[k] for k in mine],
            )
        except BaseException:
            writer.close(raise_errors=False)  # what was embedded before the failure stays
            raise
        writer.close()  # every computed vector is committed before embed_* returns
        self.stats["embedded"] += len(mine)
        if size > 1:
            merged = distributed.gather(dict(zip(mine, computed, strict=True)))
            return _in_order(keys, {**found, **merged})
        return _in_order(keys, found, mine, computed)

    def _encode_all(
        self,
        items: list[T],
        keys: list[str],
        encode: Callable[[list[T]], np.ndarray],
        what: str,
        store: Callable[[list[str], np.ndarray], None] | None = None,
        costs: list[int] | None = None,
    ) -> np.ndarray:
        """Encode ``items`` in batches of at most :attr:`batch_size`; with ``costs`` (videos)
        also at most :attr:`video_batch_tokens` tokens a batch (at least one item) and
        progress reported per item. Returns one row per item, in order; ``store`` gets each
        finished batch (its keys and rows) as it is done."""
        if not items:
            return np.zeros((0, 0), dtype=np.float32)
        done: list[np.ndarray] = []
        if not self._batch_size_chosen:
            self.batch_size = max(1, int(self.suggested_batch_size()))
            self._batch_size_chosen = True
        enabled = self.progress and (len(items) > self.batch_size or costs is not None)
        bar = progress_bar(len(items), f"embedding {what} ({self.spec})", enabled=enabled)
        start, batch_size = 0, self.batch_size
        try:
            while start < len(items):
                end = min(len(items), start + batch_size)
                if costs is not None:
                    end, spent = start + 1, costs[start]
                    while end < min(len(items), start + batch_size):
                        if spent + costs[end] > self.video_batch_tokens:
                            break
                        spent += costs[end]
                        end += 1
                batch = items[start:end]
                try:
                    vectors = l2_normalize(encode(batch))
                except Exception as exc:  # back off on out-of-memory, re-raise anything else
                    if not is_out_of_memory(exc) or batch_size == 1 or len(batch) == 1:
                        raise
                    _free_accelerator_memory()
                    batch_size = max(1, (len(batch) if costs is not None else batch_size) // 2)
                    print(
                        f"bindkit: out of memory at batch size {len(batch)}; "
                        f"retrying with {batch_size}",
                        file=sys.stderr,
                    )
                    continue
                if len(vectors) != len(batch):
                    raise RuntimeError(
                        f"backend returned {len(vectors)} vectors for {len(batch)} inputs"
                    )
                done.append(vectors)
                if store is not None:
                    store(keys[start : start + len(batch)], vectors)
                start += len(batch)
                bar.update(len(batch))
        finally:
            bar.close()
        self.batch_size = batch_size  # remember what fits
        return np.concatenate(done)


def _in_order(
    keys: list[str],
    found: dict[str, np.ndarray],
    computed_keys: Sequence[str] = (),
    computed: np.ndarray | None = None,
) -> np.ndarray:
    """One row per key, in ``keys``' order (duplicates repeated), from the cached vectors and
    the freshly computed rows."""
    parts = [np.stack(list(found.values()))] if found else []
    if computed is not None and len(computed):
        parts.append(computed)
    table = np.concatenate(parts).astype(np.float32, copy=False)
    row = {key: index for index, key in enumerate([*found, *computed_keys])}
    return table[[row[key] for key in keys]]


_Batch = tuple[list[str], np.ndarray]


class _CacheWriter:
    """Stores the finished batches of one call in the cache from one background thread.

    :meth:`put` only queues the batch's keys and rows (no per-vector work in the embedding
    loop). The thread opens its own connection (SQLite connections stay in the thread that made
    them) and writes everything queued since its last write in one transaction, so a fast device
    does not pay a commit per batch.

    Durability: :meth:`close` returns once every batch handed over is committed, so the vectors
    of an ``embed_*`` call are on disk when it returns, and when it raises (what was embedded
    before the failure is kept). A process killed outright loses only the batches still queued,
    never half a row (each write is a transaction); the next run recomputes them. The first
    write error is raised by the next :meth:`put`, so the run stops rather than embedding for
    nothing, and by :meth:`close`.
    """

    def __init__(self, cache: EmbeddingCache | None, model: str, prompt: str) -> None:
        self.cache, self.model, self.prompt = cache, model, prompt
        self._queue: queue.SimpleQueue[_Batch | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None

    def put(self, keys: list[str], vectors: np.ndarray) -> None:
        if self._error is not None:
            raise self._error
        if self.cache is None or not keys:
            return
        if str(self.cache.path) == ":memory:":  # a second connection would see another database
            self.cache.put_many(self.model, self.prompt, dict(zip(keys, vectors, strict=True)))
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._drain, name="bindkit-cache", daemon=True)
            self._thread.start()
        self._queue.put((keys, vectors))

    def _drain(self) -> None:
        """The thread: write what is queued, batch after batch, until :meth:`close`'s None."""
        assert self.cache is not None
        own: EmbeddingCache | None = None
        try:
            while True:
                batches = [self._queue.get()]
                while batches[-1] is not None and not self._queue.empty():
                    batches.append(self._queue.get())
                finished = batches[-1] is None
                rows = {
                    key: vector
                    for batch in batches
                    if batch is not None
                    for key, vector in zip(*batch, strict=True)
                }
                if rows:
                    own = own or EmbeddingCache(self.cache.path)
                    own.put_many(self.model, self.prompt, rows)
                if finished:
                    return
        except BaseException as exc:  # handed to the caller by put() and close()
            self._error = exc
        finally:
            if own is not None:
                own.close()

    def close(self, *, raise_errors: bool = True) -> None:
        """Wait until every queued batch is committed; re-raise the thread's error."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None
        if self._error is not None and raise_errors:
            raise self._error


def _free_accelerator_memory() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()
