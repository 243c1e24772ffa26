"""Exact average precision over large galleries, in bounded memory.

With R relevant items and s_r the score of relevant item r::

    AP = (1/R) * sum_r  #{relevant with score >= s_r} / #{gallery items with score >= s_r}

Without ties this is the usual AP; items tied with a relevant item (within
:data:`bindkit.metrics.TIE_EPS`) are retrieved together with it, as in scikit-learn's threshold
definition, so ties never favour a model by accident of storage order.

Only "how many gallery items score at least s" is needed per relevant score s;
:func:`count_at_least` accumulates it over (query block x gallery block) tiles, so the full
queries x gallery score matrix is never held in memory.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from bindkit.metrics import TIE_EPS


def _no_progress(_n: int) -> None:
    return None


def count_at_least(
    queries: np.ndarray,
    gallery: np.ndarray,
    thresholds: np.ndarray,
    *,
    query_block: int = 256,
    gallery_block: int = 65536,
    progress: Callable[[int], None] = _no_progress,
) -> np.ndarray:
    """#{g : <queries[q], gallery[g]> >= thresholds[q, j] - TIE_EPS} for every q and column j.

    ``thresholds`` has shape (queries, T); pad short rows with +inf (counts 0). Peak extra memory
    is one float32 tile of query_block x gallery_block (64 MiB with the defaults).
    """
    queries = np.asarray(queries, dtype=np.float32)
    gallery = np.asarray(gallery, dtype=np.float32)
    limits = np.asarray(thresholds, dtype=np.float32) - np.float32(TIE_EPS)
    counts = np.zeros(limits.shape, dtype=np.int64)
    for q0 in range(0, len(queries), query_block):
        q1 = min(q0 + query_block, len(queries))
        block_q, block_t = queries[q0:q1], limits[q0:q1]
        for g0 in range(0, len(gallery), gallery_block):
            tile = block_q @ gallery[g0 : g0 + gallery_block].T
            for j in range(block_t.shape[1]):
                counts[q0:q1, j] += np.count_nonzero(tile >= block_t[:, j, None], axis=1)
        progress(q1 - q0)
    return counts


def relevant_scores(
    queries: np.ndarray, gallery: np.ndarray, relevant: Sequence[Sequence[int]]
) -> np.ndarray:
    """Scores of each query's relevant gallery items as a (queries, max R) array, +inf padded."""
    width = max((len(r) for r in relevant), default=1)
    out = np.full((len(relevant), max(width, 1)), np.inf, dtype=np.float32)
    for q, items in enumerate(relevant):
        if len(items):
            out[q, : len(items)] = gallery[np.asarray(items)] @ np.asarray(queries[q], np.float32)
    return out


def average_precision_from_counts(scores: np.ndarray, at_least: np.ndarray) -> np.ndarray:
    """AP per query from its relevant scores ((queries, R), +inf padded) and the gallery counts
    at those scores (:func:`count_at_least`); NaN for a query without relevant items."""
    out = np.full(len(scores), np.nan, dtype=np.float64)
    for q in range(len(scores)):
        valid = np.isfinite(scores[q])
        s, n = scores[q][valid].astype(np.float64), at_least[q][valid]
        if len(s):
            relevant_at_least = (s[None, :] >= s[:, None] - TIE_EPS).sum(axis=1)
            out[q] = float(np.mean(relevant_at_least / n))
    return out


def average_precision(
    queries: np.ndarray,
    gallery: np.ndarray,
    relevant: Sequence[Sequence[int]],
    *,
    query_block: int = 256,
    gallery_block: int = 65536,
    progress: Callable[[int], None] = _no_progress,
) -> np.ndarray:
    """Exact AP of every query against the whole gallery, blocked (see the module docstring)."""
    scores = relevant_scores(queries, gallery, relevant)
    counts = count_at_least(
        queries,
        gallery,
        scores,
        query_block=query_block,
        gallery_block=gallery_block,
        progress=progress,
    )
    return average_precision_from_counts(scores, counts)


def average_precision_dense(scores: np.ndarray, is_relevant: np.ndarray) -> float:
    """Plain AP of one dense ranking: sort, walk down, average precision at each hit, items with
    equal scores retrieved together. The reference the blocked version is tested against."""
    order = np.argsort(-scores, kind="stable")
    scores, is_relevant = scores[order], np.asarray(is_relevant, bool)[order]
    n_relevant = int(is_relevant.sum())
    if n_relevant == 0:
        return float("nan")
    total, i = 0.0, 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and scores[j + 1] >= scores[i] - TIE_EPS:
            j += 1
        hits = int(is_relevant[i : j + 1].sum())
        total += hits / n_relevant * int(is_relevant[: j + 1].sum()) / (j + 1)
        i = j + 1
    return total
