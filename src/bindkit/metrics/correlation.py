"""Rank correlation for STS-style evaluation."""

from __future__ import annotations

import numpy as np

from bindkit.metrics.pairwise import Ties, beats


def average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks with ties sharing their average rank."""
    values = np.asarray(values, dtype=np.float64)
    order = np.argsort(values, kind="stable")
    ranks = np.empty(len(values), dtype=np.float64)
    sorted_values = values[order]
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and sorted_values[j + 1] == sorted_values[i]:
            j += 1
        ranks[order[i : j + 1]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


def spearman(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman's rho: the Pearson correlation of average ranks (NaN when a side is constant)."""
    x, y = np.asarray(x), np.asarray(y)
    if len(x) != len(y) or len(x) < 2:
        raise ValueError("spearman needs two sequences of equal length >= 2")
    rx, ry = average_ranks(x), average_ranks(y)
    rx -= rx.mean()
    ry -= ry.mean()
    denominator = float(np.sqrt((rx * rx).sum() * (ry * ry).sum()))
    return float("nan") if denominator == 0 else float((rx * ry).sum() / denominator)


def triplet_accuracy(positive: np.ndarray, negative: np.ndarray, ties: Ties = "wrong") -> float:
    """Mean credit of cos(q, p) over cos(q, n) under ``ties`` (:func:`~bindkit.metrics.pairwise.
    beats`; ``wrong``: strictly above); NaN for no triplets."""
    positive, negative = np.asarray(positive), np.asarray(negative)
    return float(beats(positive, negative, ties).mean()) if positive.size else float("nan")
