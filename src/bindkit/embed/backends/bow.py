"""An order-blind bag-of-words baseline: the sum of fixed random word vectors.

It is the reference point for binding: any two texts with the same words (in any order, any case)
get bit-identical vectors, so on SABER it scores exactly the tie-aware chance level.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from typing import Any

import numpy as np

from bindkit.embed.base import BaseEmbedder
from bindkit.embed.protocol import Modality, Role
from bindkit.errors import BindkitError

_TOKEN = re.compile(r"[a-z0-9]+")
MAX_DIM = 65_536


class BagOfWordsEmbedder(BaseEmbedder):
    """Hashed bag of words: each lower-cased word maps to a fixed Gaussian vector."""

    modalities = frozenset({"text"})

    def __init__(self, *, dim: int = 512, **kwargs: Any) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_DIM:
            raise BindkitError(f"bow: dim={dim!r}: use a whole number from 1 to {MAX_DIM:,}")
        super().__init__(**kwargs)
        self.dim = dim
        self._vectors: dict[str, np.ndarray] = {}

    def _describe(self) -> dict[str, Any]:
        return {"backend": "bow", "dim": self.dim, "tokenizer": _TOKEN.pattern, "version": 1}

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        return "bow"  # roles and instructions do not change a bag of words

    def word_vector(self, word: str) -> np.ndarray:
        vector = self._vectors.get(word)
        if vector is None:
            seed = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            vector = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float64)
            self._vectors[word] = vector
        return vector

    def _encode_texts(self, texts: list[str], role: Role, instruction: str | None) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float64)
        for row, text in enumerate(texts):
            counts = Counter(_TOKEN.findall(text.lower()))
            # summing in sorted word order makes the float result independent of word order
            for word in sorted(counts):
                out[row] += counts[word] * self.word_vector(word)
        return out.astype(np.float32)
