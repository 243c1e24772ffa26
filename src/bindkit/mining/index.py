"""Nearest-neighbour search by inner product over unit vectors (cosine), in bounded memory.

FAISS does the search when it is installed (``pip install 'bindkit[mining]'``): exact by default,
or the approximate ``ivf`` / ``hnsw`` indexes for large corpora. Without FAISS, an exact numpy
search gives the same neighbours (ties aside) and the same scores.

The exact search streams: queries and corpus are cut into blocks sized from
``IndexConfig.memory`` (the scratch budget), each query block is scored against one corpus block
at a time, and the running top-``n`` is merged block by block; the corpus is never copied, and
the pages of a memory-mapped corpus (``np.load(path, mmap_mode="r")``) are released after each
block, so a corpus larger than RAM is searched with a resident set of about the budget. The
approximate indexes hold their own copy of the corpus (FAISS's design): about ``4·d`` bytes per
vector for IVF-Flat and HNSW-Flat, plus HNSW's graph (``8·hnsw_m`` bytes per vector).
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
#: the smallest scratch budget: one block must hold a few rows of a 4,096-d corpus
MIN_MEMORY = 1 << 20
#: bytes of scratch per query-candidate pair in a numpy block: the float32 score and the
#: int64 position ``argpartition`` returns
PAIR_BYTES = 12


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
        memory: bytes of scratch the exact search may use (blocks are sized from it; the
            returned ``[nq, n]`` scores and ids come on top).
    """

    kind: IndexKind = "flat"
    backend: str = "auto"
    nlist: int = 1024
    nprobe: int = 32
    hnsw_m: int = 32
    ef_search: int = 128
    memory: int = 1 << 30

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise BindkitError(f"--index {self.kind!r}: use one of {', '.join(KINDS)}")
        if self.backend not in BACKENDS:
            raise BindkitError(f"index backend {self.backend!r}: use one of {', '.join(BACKENDS)}")
        for name in ("nlist", "nprobe", "hnsw_m", "ef_search"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise BindkitError(f"index option {name} must be a positive integer")
        if isinstance(self.memory, bool) or not isinstance(self.memory, int):
            raise BindkitError(f"index memory {self.memory!r}: give a number of bytes")
        if self.memory < MIN_MEMORY:
            raise BindkitError(
                f"search memory {self.memory} bytes is below the minimum of 1 MiB; raise it"
            )

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


def block_sizes(
    n_queries: int, n_corpus: int, dim: int, memory: int, pair_bytes: int = PAIR_BYTES
) -> tuple[int, int]:
    """``(query_block, corpus_block)`` rows for an exact search within ``memory`` bytes.

    A quarter of the budget goes to a corpus block (its pages, when memory-mapped), a quarter
    to a query block, and half to the block's ``pair_bytes`` per query-candidate pair (0 for
    ``faiss.knn``, whose own scratch is a fixed 4,096 × 1,024 floats).
    """
    row = 4 * dim
    corpus_block = max(1, min(n_corpus, memory // 4 // row))
    query_block = max(1, min(n_queries, memory // 4 // row))
    if pair_bytes:
        query_block = max(1, min(query_block, memory // 2 // (pair_bytes * corpus_block)))
    return query_block, corpus_block


def release_pages(array: np.ndarray) -> None:
    """Drop a read-only memory-mapped array's pages from this process's resident set.

    The data stays on disk (and usually in the page cache); the next read maps it back. Without
    this, every mapped page read counts in the process's RSS until the kernel needs the memory.
    Arrays that are not read-only maps are left alone.
    """
    mm = getattr(array, "_mmap", None)
    if mm is None or getattr(array, "mode", None) != "r" or array.nbytes == 0:
        return
    import mmap

    base = np.frombuffer(mm, dtype=np.uint8)
    start = array.__array_interface__["data"][0] - base.__array_interface__["data"][0]
    del base
    page = mmap.PAGESIZE
    first = start // page * page
    mm.madvise(mmap.MADV_DONTNEED, first, min(len(mm), start + array.nbytes) - first)


def _sorted_top(scores: np.ndarray, ids: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row the ``n`` best of ``scores``: score descending, then id ascending."""
    order = np.lexsort((ids, -scores), axis=1)[:, :n]
    return np.take_along_axis(scores, order, axis=1), np.take_along_axis(ids, order, axis=1)


def _merge(
    best: tuple[np.ndarray, np.ndarray] | None, scores: np.ndarray, ids: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    if best is not None:
        scores = np.concatenate([best[0], scores], axis=1)
        ids = np.concatenate([best[1], ids], axis=1)
    return _sorted_top(scores, ids, n)


def _exact_block(
    queries: np.ndarray, corpus: np.ndarray, n: int, backend: str
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``n`` of one query block against one corpus block (ids local to the block)."""
    n = min(n, len(corpus))
    if backend == "faiss":
        import faiss

        scores, ids = faiss.knn(queries, corpus, n, metric=faiss.METRIC_INNER_PRODUCT)
        return scores, ids
    sims = queries @ corpus.T
    if n < sims.shape[1]:
        part = np.argpartition(sims, sims.shape[1] - n, axis=1)[:, -n:]
        return np.take_along_axis(sims, part, axis=1), part
    return sims, np.broadcast_to(np.arange(sims.shape[1]), sims.shape)


def exact_search(
    queries: np.ndarray, corpus: np.ndarray, n: int, memory: int = 1 << 30, backend: str = "numpy"
) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-``n`` inner-product search, streamed in blocks within ``memory`` bytes.

    Returns ``(scores, ids)``, both ``[len(queries), n]``, best first; equal scores are ordered
    by id (across blocks the lower id wins a tie for the last place; inside one corpus block
    ``argpartition`` picks among scores tied exactly at the ``n``-th place). ``backend`` scores
    a block with numpy (BLAS) or ``faiss.knn``; blocks and merging are the same.
    """
    n = min(n, len(corpus))
    scores = np.empty((len(queries), n), dtype=np.float32)
    ids = np.empty((len(queries), n), dtype=np.int64)
    pair_bytes = 0 if backend == "faiss" else PAIR_BYTES
    query_block, corpus_block = block_sizes(
        len(queries), len(corpus), corpus.shape[1], memory, pair_bytes
    )
    for q0 in range(0, len(queries), query_block):
        block = np.ascontiguousarray(queries[q0 : q0 + query_block], dtype=np.float32)
        best: tuple[np.ndarray, np.ndarray] | None = None
        for c0 in range(0, len(corpus), corpus_block):
            part = np.ascontiguousarray(corpus[c0 : c0 + corpus_block], dtype=np.float32)
            s, i = _exact_block(block, part, n, backend)
            best = _merge(best, s, i + c0, n)
            release_pages(corpus[c0 : c0 + corpus_block])
        release_pages(queries[q0 : q0 + query_block])
        assert best is not None
        scores[q0 : q0 + len(block)], ids[q0 : q0 + len(block)] = best
    return scores, ids


def numpy_search(
    queries: np.ndarray, corpus: np.ndarray, n: int, memory: int = 1 << 30
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`exact_search` with numpy only."""
    return exact_search(queries, corpus, n, memory, "numpy")


def _sample(corpus: np.ndarray, size: int, seed: int = 0) -> np.ndarray:
    if len(corpus) <= size:
        return np.ascontiguousarray(corpus, dtype=np.float32)
    rows = np.sort(np.random.default_rng(seed).choice(len(corpus), size, replace=False))
    return np.ascontiguousarray(corpus[rows], dtype=np.float32)


def faiss_index(corpus: np.ndarray, config: IndexConfig) -> Any:
    """An IVF or HNSW index, trained on a sample and filled block by block."""
    import faiss

    dim = corpus.shape[1]
    index: Any
    if config.kind == "ivf":
        nlist = max(1, min(config.nlist, len(corpus) // 39 or 1))
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        # k-means on 64 points per list (FAISS warns below 39 and subsamples above 256)
        index.train(_sample(corpus, 64 * nlist))
        index.nprobe = min(config.nprobe, nlist)
    else:
        index = faiss.IndexHNSWFlat(dim, config.hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = config.ef_search
    _, corpus_block = block_sizes(1, len(corpus), dim, config.memory)
    for c0 in range(0, len(corpus), corpus_block):
        index.add(np.ascontiguousarray(corpus[c0 : c0 + corpus_block], dtype=np.float32))
        release_pages(corpus[c0 : c0 + corpus_block])
    return index


def search(
    queries: np.ndarray, corpus: np.ndarray, n: int, config: IndexConfig | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Top-``n`` candidates of each query by inner product.

    Args:
        queries: ``[nq, d]`` float32 unit vectors (may be memory-mapped).
        corpus: ``[nc, d]`` float32 unit vectors (may be memory-mapped; never copied whole by
            the exact search).
        n: neighbours per query (clipped to ``nc``).
        config: index kind, backend and scratch memory (default: exact, FAISS if installed).

    Returns:
        ``(scores, ids)`` of shape ``[nq, min(n, nc)]``, best first. An approximate index may
        return fewer hits for some queries; their missing slots hold id -1.
    """
    config = config or IndexConfig()
    n = min(n, len(corpus))
    if n == 0 or len(queries) == 0:
        return np.empty((len(queries), n), np.float32), np.empty((len(queries), n), np.int64)
    backend = config.resolved_backend()
    if config.kind == "flat":
        return exact_search(queries, corpus, n, config.memory, backend)
    index = faiss_index(corpus, config)
    scores = np.empty((len(queries), n), dtype=np.float32)
    ids = np.empty((len(queries), n), dtype=np.int64)
    query_block, _ = block_sizes(len(queries), len(corpus), corpus.shape[1], config.memory, 0)
    for q0 in range(0, len(queries), query_block):
        block = np.ascontiguousarray(queries[q0 : q0 + query_block], dtype=np.float32)
        s, i = index.search(block, n)
        scores[q0 : q0 + len(block)], ids[q0 : q0 + len(block)] = s, i
        release_pages(queries[q0 : q0 + query_block])
    return scores, ids
