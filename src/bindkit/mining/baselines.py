"""The miners SaHa is compared with, writing the same clusters (one per row).

- ``hn``: the ``k`` candidates most similar to the anchor (its own positive excluded).
- ``hn-margin``: the same, skipping candidates scored above ``s⁺ − |s⁺|·margin``, where ``s⁺`` is
  the anchor's similarity to its own positive (sentence-transformers' ``relative_margin``;
  UniME's β).
- ``random``: ``k`` distinct candidates drawn uniformly (the anchor's own positive excluded).

Each negative candidate is written as the pair of its owner most similar to the anchor, the
same owner rule as SaHa's, so the diagnostics compare like with like.
"""

from __future__ import annotations

import numpy as np

from bindkit.mining.index import IndexConfig, search
from bindkit.mining.pool import Cluster, Pool


def _from_candidates(pool: Pool, anchor: int, candidates: np.ndarray, k: int) -> Cluster:
    negatives = pool.owner_list(anchor, candidates, label_filter=False)
    return Cluster(anchor, tuple(negatives[:k]))


def hard_negatives(
    pool: Pool,
    k: int = 7,
    m: int = 4,
    index: IndexConfig | None = None,
    relative_margin: float | None = None,
) -> list[Cluster]:
    """Top-``k`` hard negatives per anchor among its ``m·k`` nearest candidates.

    Args:
        pool: the task's vectors.
        k: negatives per cluster.
        m: pool multiplier (candidates searched per anchor, so the margin has room to skip).
        index: how candidates are searched.
        relative_margin: if set, skip candidates scored above ``s⁺ − |s⁺|·relative_margin``.
    """
    scores, retrieved = search(pool.queries, pool.candidates, max(m * k, k + 1), index)
    if relative_margin is not None:
        positive = pool.positive_scores()
        threshold = positive - np.abs(positive) * relative_margin
        retrieved = np.where(scores > threshold[:, None], -1, retrieved)
    return _owners_of_retrieved(pool, retrieved, k)


def _owners_of_retrieved(pool: Pool, retrieved: np.ndarray, k: int) -> list[Cluster]:
    """``_from_candidates`` for every anchor, with array operations where each retrieved
    candidate has one owner (the common case: distinct positives); anchors that retrieved a
    candidate with several owners go through :meth:`Pool.owner_list`. Distinct candidates have
    distinct owners (a row owns one positive), so no owner repeats within a row."""
    safe = np.clip(retrieved, 0, None)
    counts = np.diff(pool.owner_bounds)[safe]
    valid = (retrieved >= 0) & (retrieved != pool.positive[:, None]) & (counts > 0)
    owner = pool.owner_order[pool.owner_bounds[safe]]
    shared = np.any(valid & (counts > 1), axis=1)
    clusters = []
    for a in range(len(pool)):
        if shared[a]:
            clusters.append(_from_candidates(pool, a, retrieved[a], k))
        else:
            clusters.append(Cluster(a, tuple(owner[a][valid[a]][:k].tolist())))
    return clusters


def random_negatives(pool: Pool, k: int = 7, seed: int = 0) -> list[Cluster]:
    """``k`` uniformly drawn distinct candidates per anchor (never its own positive)."""
    rng = np.random.default_rng(seed)
    n_candidates = len(pool.candidates)
    take = min(k, n_candidates - 1)
    clusters = []
    for anchor in range(len(pool)):
        drawn = rng.choice(n_candidates - 1, size=take, replace=False)
        own = pool.positive[anchor]
        drawn = drawn + (drawn >= own)  # skip over the anchor's own positive
        clusters.append(_from_candidates(pool, anchor, drawn, k))
    return clusters
