"""Pairwise and argmax comparisons under a declared tie rule (a task's ``ties`` metadata).

Native protocols differ on ties: SugarCrepe, SugarCrepe++ and Winoground compare with a strict
``>`` (a tie is wrong); ARO-Order and MMEB take ``argmax`` and check index 0, and an argmax keeps
the first of equal maxima, so a tie there is right; ARO-Relation checks ``argmax == 1`` over
``[false, true]``, so a tie is wrong. ``share`` credits 1/k for a k-way tie within
:data:`bindkit.metrics.TIE_EPS` (the expected accuracy under a random tie-break).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from bindkit.metrics import TIE_EPS

Ties = Literal["wrong", "correct", "share"]
TIE_RULES: tuple[Ties, ...] = ("wrong", "correct", "share")


def beats(a: np.ndarray, b: np.ndarray, ties: Ties = "wrong") -> np.ndarray:
    """Per item credit for ``a`` over ``b``: 1 above, 0 below, and on a tie 0 (``wrong``),
    1 (``correct``) or 1/2 (``share``, ties within ``TIE_EPS``).

    Example:
        >>> beats(np.array([0.5, 0.5, 0.2]), np.array([0.4, 0.5, 0.3])).tolist()
        [1.0, 0.0, 0.0]
    """
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if ties == "wrong":
        return (a > b).astype(np.float64)
    if ties == "correct":
        return (a >= b).astype(np.float64)
    if ties == "share":
        tie = np.abs(a - b) <= TIE_EPS
        return np.where(tie, 0.5, (a > b).astype(np.float64))
    raise ValueError(f"ties must be wrong, correct or share, got {ties!r}")


def hit_at_1(scores: np.ndarray, correct: int | np.ndarray = 0, ties: Ties = "wrong") -> np.ndarray:
    """Per row of ``scores`` (items, options): credit for the ``correct`` column being the top.

    ``wrong``: strictly above every other option; ``correct``: at least every other option (an
    argmax that returns the first index, with the answer first); ``share``: 1/k of a k-way tie
    for the top within ``TIE_EPS``.
    """
    scores = np.asarray(scores, np.float64)
    if scores.ndim != 2 or scores.shape[1] == 0:
        raise ValueError(f"scores must have shape (items, options), got {scores.shape}")
    rows = np.arange(len(scores))
    index = np.broadcast_to(np.asarray(correct), (len(scores),))
    target = scores[rows, index]
    others = scores.copy()
    others[rows, index] = -np.inf
    best_other = others.max(axis=1) if scores.shape[1] > 1 else np.full(len(scores), -np.inf)
    if ties == "share":
        from bindkit.metrics.mcq import mcq_credit

        return mcq_credit(scores, index)
    return beats(target, best_other, ties)


def rowdot(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise dot products in float64 (cosines, for unit vectors)."""
    out: np.ndarray = np.einsum("nd,nd->n", np.asarray(a, np.float64), np.asarray(b, np.float64))
    return out
