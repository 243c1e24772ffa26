"""Instance-retrieval mAP as the revisited Oxford/Paris code computes it (filipradenovic/revisitop,
python/evaluate.py ``compute_ap`` / ``compute_map``).

- Junk images are removed from the ranking: a positive's 0-based rank is reduced by the number
  of junk images ranked above it.
- AP is the trapezoid rule over the precision-recall curve: for the j-th positive (0-based) at
  rank r, precision before it is j / r (1 when r = 0) and after it (j + 1) / (r + 1); AP sums
  their mean times the recall step 1 / #positives.
- A query without positives is left out of the mean.

The same functions serve INSTRE-style relevance (positives only, no junk).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

#: revisitop's three protocols: which ground-truth lists are positive and which are junk.
SETTINGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "easy": (("easy",), ("junk", "hard")),
    "medium": (("easy", "hard"), ("junk",)),
    "hard": (("hard",), ("junk", "easy")),
}


def trapezoid_ap(positive_ranks: np.ndarray, n_positives: int) -> float:
    """AP from the sorted 0-based ranks of the positives (junk already removed)."""
    ranks = np.asarray(positive_ranks, np.float64)
    j = np.arange(len(ranks), dtype=np.float64)
    before = np.where(ranks == 0, 1.0, j / np.maximum(ranks, 1))
    after = (j + 1) / (ranks + 1)
    return float(((before + after) / 2).sum() / n_positives)


def query_ap(ranking: np.ndarray, positives: Sequence[int], junk: Sequence[int] = ()) -> float:
    """AP of one ranking (database indices, best first); NaN when there are no positives."""
    if len(positives) == 0:
        return float("nan")
    ranking = np.asarray(ranking)
    pos = np.flatnonzero(np.isin(ranking, positives))
    bad = np.flatnonzero(np.isin(ranking, junk)) if len(junk) else np.empty(0, np.int64)
    shifted = pos - np.searchsorted(bad, pos)  # junk ranked above each positive
    return trapezoid_ap(shifted, len(positives))


def rankings(similarity: np.ndarray) -> np.ndarray:
    """(queries, database) similarities → database indices per query, best first (stable)."""
    order: np.ndarray = np.argsort(-np.asarray(similarity, np.float64), axis=1, kind="stable")
    return order


def mean_ap(
    similarity: np.ndarray,
    positives: Sequence[Sequence[int]],
    junk: Sequence[Sequence[int]] | None = None,
) -> tuple[float, np.ndarray]:
    """(mAP over queries with positives, per-query AP with NaN for the rest)."""
    order = rankings(similarity)
    aps = np.array(
        [
            query_ap(order[q], positives[q], () if junk is None else junk[q])
            for q in range(len(order))
        ]
    )
    valid = ~np.isnan(aps)
    return (float(aps[valid].mean()) if valid.any() else float("nan")), aps


def revisited_maps(
    similarity: np.ndarray, gnd: Sequence[Mapping[str, Sequence[int]]]
) -> dict[str, float]:
    """``map_easy``, ``map_medium``, ``map_hard`` from (queries, database) similarities and the
    revisited ground truth (per query: ``easy``, ``hard``, ``junk`` index lists)."""
    out = {}
    for setting, (ok, bad) in SETTINGS.items():
        positives = [[i for key in ok for i in g.get(key, ())] for g in gnd]
        junk = [[i for key in bad for i in g.get(key, ())] for g in gnd]
        out[f"map_{setting}"] = mean_ap(similarity, positives, junk)[0]
    return out
