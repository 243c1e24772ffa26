"""The shared embedding pipeline: dedup, cache, length-sorted batches, OOM back-off, progress,
multi-process sharding, L2 normalisation. Backends implement only ``_encode_*`` on one batch."""

from __future__ import annotations

import hashlib
import os
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

from bindkit._io import canonical_json
from bindkit.embed import distributed
from bindkit.embed.cache import EmbeddingCache
from bindkit.embed.images import ImageInput, content_key, load_image
from bindkit.embed.protocol import ROLES, Modality, Role
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

    Subclasses set ``modalities`` and implement :meth:`describe`, :meth:`_encode_texts` and/or
    :meth:`_encode_images`, and :meth:`prompt_key` when roles or instructions change the input.
    """

    modalities: frozenset[Modality] = frozenset({"text"})

    def __init__(
        self,
        *,
        spec: str,
        batch_size: int = 32,
        cache: EmbeddingCache | None = None,
        progress: bool | None = None,
    ) -> None:
        if batch_size < 1:
            raise BindkitError(f"batch_size {batch_size}: must be at least 1")
        self.spec = spec
        self.batch_size = batch_size
        self.cache = cache
        env = os.environ.get("BINDKIT_PROGRESS")
        self.progress = progress if progress is not None else env not in ("0", "false")
        self.stats = {"embedded": 0, "cached": 0, "duplicates": 0}
        self._fingerprint: str | None = None

    # -- what subclasses provide -------------------------------------------------------------
    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """Everything besides role and instruction that changes a vector (hashed into the
        fingerprint and written into result files)."""

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
                [load_image(im) for im in batch], role, instruction
            ),
            prompt=self.prompt_key("image", role, instruction),
            what="images",
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
        # longest first: an out-of-memory error shows up on the first batch, not the last
        missing.sort(key=lambda k: -lengths[first[k]])
        rank, size = distributed.world()
        mine = distributed.shard(missing, rank, size) if size > 1 else missing
        computed = self._encode_all([inputs[first[k]] for k in mine], mine, encode, what)
        if size > 1:
            computed = distributed.gather(computed)
        self.stats["embedded"] += len(mine)
        if self.cache is not None and computed and rank == 0:
            self.cache.put_many(self.fingerprint, prompt_hash, computed)
        vectors = {**found, **computed}
        return np.stack([vectors[key] for key in keys]).astype(np.float32, copy=False)

    def _encode_all(
        self,
        items: list[T],
        keys: list[str],
        encode: Callable[[list[T]], np.ndarray],
        what: str,
    ) -> dict[str, np.ndarray]:
        out: dict[str, np.ndarray] = {}
        if not items:
            return out
        enabled = self.progress and len(items) > self.batch_size
        bar = _progress(len(items), f"embedding {what} ({self.spec})", enabled)
        start, batch_size = 0, self.batch_size
        while start < len(items):
            batch = items[start : start + batch_size]
            try:
                vectors = l2_normalize(encode(batch))
            except Exception as exc:  # back off on out-of-memory, re-raise anything else
                if not is_out_of_memory(exc) or batch_size == 1:
                    raise
                _free_accelerator_memory()
                batch_size = max(1, batch_size // 2)
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
            for key, vector in zip(keys[start : start + len(batch)], vectors, strict=True):
                out[key] = vector
            start += len(batch)
            bar.update(len(batch))
        bar.close()
        self.batch_size = batch_size  # remember what fits
        return out


def _free_accelerator_memory() -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


class _NoBar:
    def update(self, _n: int) -> None: ...

    def close(self) -> None: ...


def _progress(total: int, desc: str, enabled: bool) -> Any:
    if not enabled:
        return _NoBar()
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="input", leave=False)
