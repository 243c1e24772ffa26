"""Nearest-neighbour search by inner product over unit vectors (cosine similarity).

FAISS does the search when it is installed (``pip install 'bindkit[mining]'``): an exact
``IndexFlatIP`` by default, or the approximate ``ivf`` / ``hnsw`` indexes for large corpora. Without
FAISS, an exact numpy search in blocks gives the same neighbours (ties aside) and the same scores.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from bindkit.errors import BindkitError

IndexKind = Literal["flat", "ivf", "hnsw"]
KINDS: tuple[IndexKind, ...] = ("flat", "ivf", "hnsw")
BACKENDS = ("auto", "faiss", "numpy")


@dataclass(frozen=True)
class IndexConfig:
    """How candidates are searched.

    Attributes:
        kind: ``flat`` (exact inner product), ``ivf`` (inverted lists, approximate) or ``hnsw``
            (graph, approximate). The approximate kinds need FAISS.
        backend: ``auto`` (FAISS when installed, else numpy), ``faiss`` or ``numpy``.
        nlist: IVF: number of inverted lists (clipped to the corpus size).
        nprobe: IVF: lists visited per query.
        hnsw_m: HNSW: neighbours per graph node.
        ef_search: HNSW: search depth.
        block: queries per block of the numpy search (bounds its memory to block × corpus floats).
    """

    kind: IndexKind = "flat"
    backend: str = "auto"
    nlist: int = 1024
    nprobe: int = 32
    hnsw_m: int = 32
    ef_search: int = 128
    block: int = 4096

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise BindkitError(f"--index {self.kind!r}: use one of {', '.join(KINDS)}")
        if self.backend not in BACKENDS:
            raise BindkitError(f"index backend {self.backend!r}: use one of {', '.join(BACKENDS)}")
        for name in ("nlist", "nprobe", "hnsw_m", "ef_search", "block"):
            if int(getattr(self, name)) < 1:
                raise BindkitError(f"index option {name} must be a positive integer")

    def resolved_backend(self) -> str:
        """``faiss`` or ``numpy``: what :meth:`search` will actually use."""
        has_faiss = importlib.util.find_spec("faiss") is not None
        if self.backend == "faiss" or self.kind != "flat":
            if not has_faiss:
                what = f"--index {self.kind}" if self.kind != "flat" else "backend faiss"
                raise BindkitError(f"{what} needs FAISS; pip install 'bindkit[mining]'")
            return "faiss"
        if self.backend == "numpy":
            return "numpy"
        return "faiss" if has_faiss else "numpy"


def numpy_search(
    queries: np.ndarray, corpus: np.ndarray, n: int, block: int = 4096
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``n`` inner-product search in blocks of queries.

    Returns ``(scores, ids)``, both ``[len(queries), n]``, best first; ties go to the lower id.
    """
    n = min(n, len(corpus))
    scores = np.empty((len(queries), n), dtype=np.float32)
    ids = np.empty((len(queries), n), dtype=np.int64)
    for start in range(0, len(queries), block):
        sims = queries[start : start + block] @ corpus.T
        if n < sims.shape[1]:
            part = np.argpartition(-sims, n - 1, axis=1)[:, :n]
        else:
            part = np.broadcast_to(np.arange(sims.shape[1]), sims.shape).copy()
        part_scores = np.take_along_axis(sims, part, axis=1)
        # Sort by score descending, then id ascending, so results are deterministic.
        order = np.lexsort((part, -part_scores), axis=1)
        ids[start : start + block] = np.take_along_axis(part, order, axis=1)
        scores[start : start + block] = np.take_along_axis(part_scores, order, axis=1)
    return scores, ids


def _faiss_index(corpus: np.ndarray, config: IndexConfig) -> Any:
    import faiss

    dim = corpus.shape[1]
    index: Any
    if config.kind == "flat":
        index = faiss.IndexFlatIP(dim)
    elif config.kind == "ivf":
        nlist = max(1, min(config.nlist, len(corpus) // 39 or 1))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(corpus)
        index.nprobe = min(config.nprobe, nlist)
    else:
        index = faiss.IndexHNSWFlat(dim, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = config.ef_search
    index.add(corpus)
    return index


def search(
    queries: np.ndarray, corpus: np.ndarray, n: int, config: IndexConfig | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``n`` candidates of each query by inner product.

    Args:
        queries: ``[nq, d]`` float32 unit vectors.
        corpus: ``[nc, d]`` float32 unit vectors.
        n: neighbours per query (clipped to ``nc``).
        config: index kind and backend (default: exact, FAISS if installed).

    Returns:
        ``(scores, ids)`` of shape ``[nq, min(n, nc)]``, best first. An approximate index may
        return fewer hits for some queries; their missing slots hold id -1.
    """
    config = config or IndexConfig()
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    corpus = np.ascontiguousarray(corpus, dtype=np.float32)
    n = min(n, len(corpus))
    if n == 0 or len(queries) == 0:
        return np.empty((len(queries), n), np.float32), np.empty((len(queries), n), np.int64)
    if config.resolved_backend() == "numpy":
        return numpy_search(queries, corpus, n, config.block)
    index = _faiss_index(corpus, config)
    scores, ids = index.search(queries, n)
    return scores.astype(np.float32), ids.astype(np.int64)
