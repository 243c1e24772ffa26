"""Containment analysis for nested retrieval: does a subset or a superset scene outrank the exact
match? Comparisons are pooled over all (query, exact match, other) triples; a tie counts 1/2
(the chance it ranks above under a random tie-break)."""

from __future__ import annotations

import numpy as np

from bindkit.metrics import TIE_EPS


def fraction_above(other: np.ndarray, exact: np.ndarray) -> float:
    """Share of pairs where ``other`` scores above ``exact`` (ties 1/2); NaN for no pairs."""
    other, exact = np.asarray(other, np.float64), np.asarray(exact, np.float64)
    if other.size == 0:
        return float("nan")
    tie = np.abs(other - exact) <= TIE_EPS
    return float(((other > exact) & ~tie).mean() + 0.5 * tie.mean())
