"""A fake image–text embedder for task tests: vectors are chosen by the test, per text and per
image file name, so each protocol's comparisons (and ties) can be set up exactly."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


class TableEmbedder:
    """Looks texts up by content and images by file name; unknown inputs get a fixed random
    unit vector from their hash. Records every call."""

    spec = "fake:table"

    def __init__(self, vectors: Mapping[str, Sequence[float]] | None = None, dim: int = 8) -> None:
        self.dim = dim
        self.vectors = {k: np.asarray(v, np.float32) for k, v in (vectors or {}).items()}
        self.calls: list[tuple[str, int, str | None]] = []

    @property
    def modalities(self) -> frozenset[str]:
        return frozenset({"text", "image"})

    @property
    def fingerprint(self) -> str:
        return "fake-table"

    def describe(self) -> dict[str, Any]:
        return {"backend": "fake"}

    def _vector(self, key: str) -> np.ndarray:
        if key in self.vectors:
            v = self.vectors[key]
        else:
            seed = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_texts(
        self, texts: Sequence[str], *, role: str = "query", instruction: str | None = None
    ) -> np.ndarray:
        self.calls.append(("text", len(texts), instruction))
        return (
            np.stack([self._vector(t) for t in texts])
            if texts
            else np.zeros((0, self.dim), np.float32)
        )

    def embed_images(
        self, images: Sequence[Any], *, role: str = "query", instruction: str | None = None
    ) -> np.ndarray:
        self.calls.append(("image", len(images), instruction))
        names = []
        for image in images:
            if hasattr(image, "getpixel"):  # a PIL image: keyed by its top-left colour
                names.append("rgb" + "-".join(map(str, image.convert("RGB").getpixel((0, 0)))))
                continue
            path = Path(getattr(image, "path", image))
            if not path.is_file():
                raise AssertionError(f"{path}: the task passed a missing image")
            names.append(path.name)
        return (
            np.stack([self._vector(n) for n in names])
            if names
            else np.zeros((0, self.dim), np.float32)
        )


class TextOnly(TableEmbedder):
    @property
    def modalities(self) -> frozenset[str]:
        return frozenset({"text"})
