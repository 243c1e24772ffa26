"""Multiple-choice accuracy with tie-aware credit.

When the correct option is in the top tie group with k - 1 others, it earns 1/k: the expected
accuracy under a uniformly random tie-break. A model that cannot tell the options apart (equal
scores) therefore scores exactly chance, never 0 or 1 by accident of ordering. The top tie group
follows the rule of :mod:`bindkit.metrics.retrieval`: the highest score and every score chained
below it by steps of at most :data:`bindkit.metrics.TIE_EPS` (float64).
"""

from __future__ import annotations

import numpy as np

from bindkit.metrics import TIE_EPS


def winner_shares(scores: np.ndarray) -> np.ndarray:
    """For scores of shape (questions, options): each option's share of the win per question.

    Every option in the top tie group (k options) gets 1/k, the others 0; each row sums to 1.

    Example:
        >>> winner_shares(np.array([[0.9, 0.9, 0.1]])).tolist()
        [[0.5, 0.5, 0.0]]
    """
    scores = np.asarray(scores, dtype=np.float64)
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise ValueError(f"scores must have shape (questions, options), got {scores.shape}")
    ranked = -np.sort(-scores, axis=1)
    chained = np.cumprod(ranked[:, :-1] - ranked[:, 1:] <= TIE_EPS, axis=1)
    size = 1 + chained.sum(axis=1)
    floor = ranked[np.arange(len(ranked)), size - 1]
    top = scores >= floor[:, None]
    shares: np.ndarray = top / top.sum(axis=1, keepdims=True)
    return shares


def mcq_credit(scores: np.ndarray, correct: int | np.ndarray = 0) -> np.ndarray:
    """Per-question credit of the correct option (column ``correct``), 1/k on a k-way tie."""
    shares = winner_shares(scores)
    index = np.broadcast_to(np.asarray(correct), (shares.shape[0],))
    credit: np.ndarray = shares[np.arange(shares.shape[0]), index]
    return credit


def mcq_accuracy(scores: np.ndarray, correct: int | np.ndarray = 0) -> float:
    """Mean tie-aware credit; see :func:`mcq_credit`."""
    return float(mcq_credit(scores, correct).mean())
