"""The Pareto front of points whose every coordinate is maximised (pure)."""

from __future__ import annotations

from collections.abc import Sequence


def dominates(a: Sequence[float], b: Sequence[float]) -> bool:
    """True if ``a`` is at least as good as ``b`` everywhere and better somewhere (maximising).

    Example:
        >>> dominates([2, 1], [1, 1]), dominates([2, 0], [1, 1])
        (True, False)
    """
    return all(x >= y for x, y in zip(a, b, strict=True)) and any(
        x > y for x, y in zip(a, b, strict=True)
    )


def pareto_front(points: Sequence[Sequence[float]]) -> list[bool]:
    """For each point, whether no other point dominates it (equal points are all kept).

    Example:
        >>> pareto_front([(1, 3), (2, 2), (1, 1), (3, 0)])
        [True, True, False, True]
    """
    return [not any(dominates(other, point) for other in points) for point in points]
