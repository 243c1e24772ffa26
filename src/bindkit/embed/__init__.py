"""One embedder interface for text encoders, CLIP dual encoders and multimodal-LLM embedders.

Example:
    >>> from bindkit.embed import load_embedder
    >>> model = load_embedder("bow", cache=False)
    >>> vectors = model.embed_texts(["a red cube", "cube red a"])
    >>> bool((vectors[0] == vectors[1]).all())
    True
"""

from __future__ import annotations

from bindkit.embed.cache import EmbeddingCache
from bindkit.embed.images import ImageRef
from bindkit.embed.protocol import Embedder
from bindkit.embed.registry import list_backends, load_embedder

__all__ = ["Embedder", "EmbeddingCache", "ImageRef", "list_backends", "load_embedder"]
