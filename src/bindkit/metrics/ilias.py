"""ILIAS' mAP@k (Kordopatis-Zilos et al., CVPR 2025; ilias-vrg/ilias, evaluation/src/dataset.py
``_compute_AP``), restated.

For one query, take its ``k`` best database images (the kNN search's list, best first):

- a query with no positive among them scores 0 (it stays in the mean);
- otherwise AP is scikit-learn's ``average_precision_score`` over those ``k`` images (a step at
  each distinct score: tied scores are one threshold, so their order does not matter), times
  ``hits / min(k, #positives)``. The product is
  ``sum over distinct scores s of hits_at(s) * precision_at(s) / min(k, #positives)``, i.e. AP
  normalised by the number of positives that could fit in the list, not by those found;
- mAP is the plain mean over every query.
"""

from __future__ import annotations

import numpy as np

#: the official default list length (evaluate.py ``--k``)
DEFAULT_K = 1000


def ap_at_k(scores: np.ndarray, relevant: np.ndarray, n_positives: int, k: int) -> float:
    """ILIAS' AP of one query from its retrieved list.

    Args:
        scores: the retrieved images' similarities, any order (at least the ``k`` best).
        relevant: whether each retrieved image is a positive of the query's instance.
        n_positives: the instance's positives in the whole database.
        k: the list length the metric looks at.

    Example:
        >>> ap_at_k(np.array([0.9, 0.8, 0.7]), np.array([False, True, True]), 4, 3)
        0.38888888888888884
    """
    scores = np.asarray(scores, dtype=np.float64)
    relevant = np.asarray(relevant, dtype=bool)
    order = np.argsort(-scores, kind="stable")[:k]
    scores, relevant = scores[order], relevant[order]
    hits = int(relevant.sum())
    if hits == 0 or n_positives <= 0:
        return 0.0
    # one threshold per distinct score: precision where each run of equal scores ends
    ends = np.r_[np.flatnonzero(np.diff(scores) != 0), len(scores) - 1]
    found = np.cumsum(relevant)[ends]
    step = np.diff(np.r_[0, found])
    precision = found / (ends + 1)
    return float((step * precision).sum() / min(k, n_positives))


def mean_ap_at_k(
    top_scores: np.ndarray,
    top_ids: np.ndarray,
    positives: list[set[int]],
    k: int = DEFAULT_K,
) -> tuple[float, np.ndarray]:
    """(mAP, per-query AP) from each query's retrieved list.

    Args:
        top_scores, top_ids: ``[queries, n]`` scores and database indices of the search.
        positives: per query, the database indices of its instance's positives.
        k: the list length the metric looks at (``n`` may be shorter when the database is).
    """
    aps = np.array(
        [
            ap_at_k(s, np.isin(i, list(pos)), len(pos), k)
            for s, i, pos in zip(top_scores, top_ids, positives, strict=True)
        ],
        dtype=np.float64,
    )
    return (float(aps.mean()) if len(aps) else float("nan")), aps
