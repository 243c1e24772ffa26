"""Self-aware Hard Negative Sampling (SaHa): Algorithm 1 of seed 002, step by step.

1. Candidate mining: retrieve the anchor's top ``m·k`` candidates from one index over all distinct
   positives of the task.
2. Owner identification: map each candidate to the owner query most similar to the anchor
   (identical candidates are one entry with several owners); the anchor's own positive is skipped.
3. Self-aware filtering: keep the ``k`` owners least similar to the anchor. For an anchor with a
   class label the similarity is bypassed: a candidate is dropped when any of its owners shares the
   anchor's label ("discard candidates whose owner queries share the same class label") and the
   first ``k`` others are kept in retrieval order (the hardest candidates).

Clusters are built in two phases: phase 1 walks every query and uses each query at most once
(as anchor or negative); phase 2 walks the leftovers, which may reuse phase-1 queries but not each
other's negatives.

One reading differs from the printed pseudocode, where line 28 marks every phase-1 anchor as
used whatever it found: taken literally, no query is ever left over and phase 2 never runs. We
read phase 1 as keeping only full clusters (k negatives) and leaving an anchor that cannot fill
one for phase 2, which is what the text's "ensure all samples are assigned without excessive
redundancy" needs. Phase-2 clusters may be smaller than k+1 when a task's pool is exhausted
(the seed notes this for classification tasks).
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from bindkit.mining.index import IndexConfig, search
from bindkit.mining.pool import Cluster, Pool


def select_negatives(
    pool: Pool, anchor: int, owners: list[int], k: int, label_filter: bool
) -> tuple[int, ...]:
    """Step 3: the ``k`` owners least similar to the anchor (stable: ties keep retrieval order).

    With ``label_filter`` and a labelled anchor, candidates owned by a row of the anchor's label
    were already discarded, so the first ``k`` in retrieval order are kept instead.
    """
    if not owners:
        return ()
    if label_filter and pool.label(anchor) is not None:
        return tuple(owners[:k])
    sims = pool.queries[np.asarray(owners)] @ pool.queries[anchor]
    order = np.argsort(sims, kind="stable")[:k]
    return tuple(owners[int(i)] for i in order)


def construct_clusters(
    pool: Pool,
    anchors: Iterable[int],
    retrieved: np.ndarray,
    used: set[int],
    k: int,
    allow_redundancy: bool,
    label_filter: bool,
) -> list[Cluster]:
    """``ConstructClusters`` of Algorithm 1; updates ``used`` (U_global) in place."""
    used_local: set[int] = set()
    clusters: list[Cluster] = []
    phase = 2 if allow_redundancy else 1
    for anchor in anchors:
        if anchor in used:
            continue
        owners = pool.owner_list(anchor, retrieved[anchor], label_filter)
        blocked = used_local if allow_redundancy else used
        owners = [o for o in owners if o not in blocked]
        negatives = select_negatives(pool, anchor, owners, k, label_filter)
        if not allow_redundancy and len(negatives) < k:
            continue  # not a full cluster without overlap: a leftover for phase 2
        clusters.append(Cluster(anchor, negatives, phase))
        used.add(anchor)
        used.update(negatives)
        if allow_redundancy:
            used_local.update(negatives)
    return clusters


def saha(
    pool: Pool,
    k: int = 7,
    m: int = 4,
    index: IndexConfig | None = None,
    label_filter: bool = True,
) -> list[Cluster]:
    """Mine SaHa clusters of up to ``k + 1`` rows over one task.

    Args:
        pool: the task's query and candidate vectors.
        k: negatives per cluster.
        m: pool multiplier: ``m·k`` candidates are retrieved per anchor.
        index: how candidates are searched (default: exact).
        label_filter: use row labels (where present) to drop same-label owners.

    Returns:
        Phase-1 clusters in row order, then phase-2 clusters of the leftovers.

    Example:
        >>> import numpy as np
        >>> v = np.array([[1, 0], [0.8, 0.6], [0, 1]], dtype=np.float32)
        >>> [c.rows for c in saha(Pool(v, v, np.arange(3)), k=1, m=2)]
        [(0, 1), (2, 1)]
    """
    _, retrieved = search(pool.queries, pool.candidates, m * k, index)
    return saha_from_retrieved(pool, retrieved, k, label_filter)


def saha_from_retrieved(
    pool: Pool, retrieved: np.ndarray, k: int, label_filter: bool = True
) -> list[Cluster]:
    """Steps 2-3 and both phases, given each anchor's retrieved candidate ids (step 1)."""
    used: set[int] = set()
    clusters = construct_clusters(pool, range(len(pool)), retrieved, used, k, False, label_filter)
    leftovers = [row for row in range(len(pool)) if row not in used]
    clusters += construct_clusters(pool, leftovers, retrieved, used, k, True, label_filter)
    return clusters
