"""Containment analysis for nested retrieval: does one candidate outrank another for the same
query (a subset scene the exact match, a superset scene the exact match, a subset scene a
superset scene)? Each kind of comparison is one share over its own (query, candidate, other)
triples, pooled over queries; scores at most :data:`bindkit.metrics.TIE_EPS` apart tie, and a tie
counts 1/2 (the chance it ranks above under a random tie-break)."""

from __future__ import annotations

import numpy as np

from bindkit.metrics import TIE_EPS


def fraction_above(other: np.ndarray, exact: np.ndarray) -> float:
    """Share of pairs where ``other`` scores above ``exact`` (ties 1/2: ``|other - exact| <=
    TIE_EPS`` in float64); NaN for no pairs."""
    other, exact = np.asarray(other, np.float64), np.asarray(exact, np.float64)
    if other.size == 0:
        return float("nan")
    tie = np.abs(other - exact) <= TIE_EPS
    return float(((other > exact) & ~tie).mean() + 0.5 * tie.mean())
