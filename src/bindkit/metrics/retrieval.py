"""Exact average precision over large galleries, in bounded memory, under one tie rule.

**Tie rule** (:data:`bindkit.metrics.TIE_EPS` = 1e-6). Two scores are tied when they are at most
``TIE_EPS`` apart: ``higher - lower <= TIE_EPS``, computed in float64, so a difference of exactly
``TIE_EPS`` is a tie. Ties chain: a *tie group* is a maximal run of the sorted scores in which
each score is at most ``TIE_EPS`` below the one before it. This is the transitive closure of
"tied", so two tied scores always share a group, and a score's group does not depend on which
scores lie far above it. (Groups anchored at their top item have neither property: with 0.5,
0.5 - 0.6e-6 and 0.5 - 1.2e-6, the last two are tied but would be split, and adding a score
above can move every boundary below it.) A group can span more than ``TIE_EPS`` when several
scores chain; in a gallery so dense that neighbouring scores are routinely closer than
``TIE_EPS`` (millions of random vectors) whole stretches of low-ranked items form one group.

**AP.** A ranking retrieves whole tie groups. With R relevant items and ``e_r`` the rank at which
relevant item r's tie group ends (:func:`group_ends`)::

    AP = (1/R) * sum_r  #{relevant r' with e_r' <= e_r} / e_r

Without ties this is the usual AP; items tied with a relevant item are retrieved together with it
(scikit-learn's threshold definition, with thresholds at group floors), so ties never favour a
model by accident of storage order. :func:`average_precision_dense` is the plain reference.

Scores are computed for a block of queries against the whole gallery at a time, the block sized
so that its scores take at most ``ROW_BUDGET`` bytes: the full queries x gallery matrix is never
held. Every score of one query, the relevant items' included, comes from that one product, so a
(query, item) pair has one score however it is used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from bindkit.metrics import TIE_EPS

ROW_BUDGET = 64 * 2**20  # bytes of float32 scores per query block


def _no_progress(_n: int) -> None:
    return None


def tie_group_ends(scores: np.ndarray, values: np.ndarray) -> np.ndarray:
    """For each of ``values`` (scores that occur in the 1-D ``scores``): the rank, counted from
    the top of ``scores`` sorted in descending order, at which its tie group ends, i.e. the
    number of scores at or above the group's floor.

    Only the scores from just below the lowest value up to the highest are sorted; the whole
    row is sorted only when a tie group reaches the bottom of that window.

    Example:
        >>> tie_group_ends(np.array([0.9, 0.5, 0.5 - 6e-7, 0.1]), np.array([0.9, 0.5])).tolist()
        [1, 3]
    """
    scores = np.asarray(scores)
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    # bounds in the scores' dtype (the values occur in the scores; the lower bound is rounded
    # there), so the comparisons are exact under any numpy casting rules
    high = np.asarray(values.max(), dtype=scores.dtype)
    low = np.asarray(values.min() - WINDOW, dtype=scores.dtype)
    window = scores[(scores >= low) & (scores <= high)]
    floors = _group_floors(window, values)
    if (floors - float(low) > TIE_EPS).all():  # no group can reach below the window
        above = np.count_nonzero(scores > high)
        return above + _at_least(window, floors)
    floors = _group_floors(scores, values)
    return _at_least(scores, floors)


def _at_least(scores: np.ndarray, floors: np.ndarray) -> np.ndarray:
    """#{scores >= f} for each floor f (floors are float64 copies of values in ``scores``)."""
    as_scores = floors.astype(scores.dtype)  # exact: each floor is one of the scores
    counts: np.ndarray = (scores[None, :] >= as_scores[:, None]).sum(axis=1)
    return counts


WINDOW = 64 * TIE_EPS  # how far below the lowest value tie_group_ends looks first


def _group_floors(scores: np.ndarray, values: np.ndarray) -> np.ndarray:
    """The lowest score of each value's tie group among ``scores`` (values occur in them)."""
    # sort in the scores' own precision (faster for float32), compare in float64
    ascending = np.sort(scores).astype(np.float64)
    # a group starts (in ascending order) where the score below is more than TIE_EPS lower
    starts = np.flatnonzero(np.r_[True, ascending[1:] - ascending[:-1] > TIE_EPS])
    position = np.searchsorted(ascending, values, side="left")
    floors: np.ndarray = ascending[starts[np.searchsorted(starts, position, side="right") - 1]]
    return floors


def group_ends(
    queries: np.ndarray,
    gallery: np.ndarray,
    items: Sequence[Sequence[int]],
    *,
    query_block: int | None = None,
    progress: Callable[[int], None] = _no_progress,
) -> list[np.ndarray]:
    """For every query q: the rank at which the tie group of each gallery item in ``items[q]``
    ends in q's ranking of the whole gallery (:func:`tie_group_ends`).

    ``query_block`` queries are scored at a time (default: as many as fit in ``ROW_BUDGET``
    bytes of float32 scores, at most 256).
    """
    queries = np.asarray(queries, dtype=np.float32)
    gallery = np.asarray(gallery, dtype=np.float32)
    if query_block is None:
        query_block = int(min(256, max(1, ROW_BUDGET // (4 * max(len(gallery), 1)))))
    out: list[np.ndarray] = []
    for q0 in range(0, len(queries), query_block):
        rows = queries[q0 : q0 + query_block] @ gallery.T
        for offset, row in enumerate(rows):
            wanted = np.asarray(items[q0 + offset], dtype=np.int64)
            out.append(tie_group_ends(row, row[wanted]) if len(wanted) else wanted)
        progress(len(rows))
    return out


def average_precision_from_ends(ends: Sequence[np.ndarray]) -> np.ndarray:
    """AP per query from the group ends of its relevant items (:func:`group_ends`); NaN for a
    query without relevant items."""
    out = np.full(len(ends), np.nan, dtype=np.float64)
    for q, e in enumerate(ends):
        if len(e):
            relevant_at_or_above = (e[None, :] <= e[:, None]).sum(axis=1)
            out[q] = float(np.mean(relevant_at_or_above / e))
    return out


def average_precision(
    queries: np.ndarray,
    gallery: np.ndarray,
    relevant: Sequence[Sequence[int]],
    *,
    query_block: int | None = None,
    progress: Callable[[int], None] = _no_progress,
) -> np.ndarray:
    """Exact AP of every query against the whole gallery, in query blocks (see the module
    docstring)."""
    ends = group_ends(queries, gallery, relevant, query_block=query_block, progress=progress)
    return average_precision_from_ends(ends)


def average_precision_dense(scores: np.ndarray, is_relevant: np.ndarray) -> float:
    """Plain AP of one dense ranking: sort, cut into tie groups (a new group wherever a score is
    more than ``TIE_EPS`` below the one before it), walk down, and credit each group's hits with
    the precision at the group's last rank. The reference the blocked version is tested against."""
    scores = np.asarray(scores, dtype=np.float64)
    order = np.argsort(-scores, kind="stable")
    scores, is_relevant = scores[order], np.asarray(is_relevant, bool)[order]
    n_relevant = int(is_relevant.sum())
    if n_relevant == 0:
        return float("nan")
    total, i = 0.0, 0
    while i < len(scores):
        j = i
        while j + 1 < len(scores) and scores[j] - scores[j + 1] <= TIE_EPS:
            j += 1
        hits = int(is_relevant[i : j + 1].sum())
        total += hits / n_relevant * int(is_relevant[: j + 1].sum()) / (j + 1)
        i = j + 1
    return total


def top_k(
    queries: np.ndarray, gallery: np.ndarray, k: int = 5, *, query_block: int | None = None
) -> np.ndarray:
    """The gallery indices of each query's ``k`` best-scoring items, best first (equal scores
    in gallery order), scored in query blocks like :func:`group_ends`; shape (queries, k')
    with k' = min(k, gallery size).

    Example:
        >>> top_k(np.eye(2, dtype=np.float32), np.array([[0, 1], [1, 0], [1, 1]]), 2).tolist()
        [[1, 2], [0, 2]]
    """
    queries = np.asarray(queries, dtype=np.float32)
    gallery = np.asarray(gallery, dtype=np.float32)
    k = min(k, len(gallery))
    if query_block is None:
        query_block = int(min(256, max(1, ROW_BUDGET // (4 * max(len(gallery), 1)))))
    out = np.zeros((len(queries), k), dtype=np.int64)
    for q0 in range(0, len(queries), query_block):
        rows = queries[q0 : q0 + query_block] @ gallery.T
        out[q0 : q0 + len(rows)] = best_k(rows, k)
    return out


def best_k(rows: np.ndarray, k: int) -> np.ndarray:
    """Per row, the indices of its ``k`` largest values, largest first and equal values in index
    order: ``np.argsort(-rows, axis=1, kind="stable")[:, :k]`` without sorting whole rows (a
    partition finds each row's k-th largest value; only the values at or above it are sorted).

    Example:
        >>> best_k(np.array([[0.1, 0.9, 0.9, 0.5]]), 2).tolist()
        [[1, 2]]
    """
    n = rows.shape[1]
    if k <= 0:
        return np.zeros((len(rows), 0), dtype=np.int64)
    if 4 * k >= n or np.isnan(rows).any():  # short rows, or NaN: the plain sort
        return np.argsort(-rows, axis=1, kind="stable")[:, :k]
    kth = np.partition(rows, n - k, axis=1)[:, n - k]
    out = np.empty((len(rows), k), dtype=np.int64)
    for i, row in enumerate(rows):
        candidates = np.flatnonzero(row >= kth[i])  # every tie of the k-th value, in order
        out[i] = candidates[np.argsort(-row[candidates], kind="stable")[:k]]
    return out
