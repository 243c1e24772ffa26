"""One task's training pairs as vectors, and the owner map shared by every miner.

A *candidate* is a distinct positive (identical positives are one candidate); its *owners* are the
rows whose positive it is (the seed's D2Q map). Miners return :class:`Cluster` objects that name
rows, so a cluster is k+1 (query, positive) pairs: the anchor's own pair first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True)
class Cluster:
    """An anchor row and the rows whose positives are its negatives.

    Attributes:
        anchor: row index of the anchor.
        negatives: row indices of the negative pairs, in the order they were selected.
        phase: SaHa phase that built it (1 primary, 2 leftover); 0 for the baselines.
    """

    anchor: int
    negatives: tuple[int, ...]
    phase: int = 0

    @property
    def rows(self) -> tuple[int, ...]:
        return (self.anchor, *self.negatives)


@dataclass
class Pool:
    """Vectors of one task.

    Attributes:
        queries: ``[n, d]`` unit vectors of the rows' queries.
        candidates: ``[c, d]`` unit vectors of the distinct positives.
        positive: ``[n]`` candidate index of each row's positive.
        labels: optional class label per row (None where a row has none).
    """

    queries: np.ndarray
    candidates: np.ndarray
    positive: np.ndarray
    labels: Sequence[str | None] | None = None
    owners: list[np.ndarray] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.positive = np.asarray(self.positive, dtype=np.int64)
        order = np.argsort(self.positive, kind="stable")
        bounds = np.searchsorted(self.positive[order], np.arange(len(self.candidates) + 1))
        self.owners = [order[bounds[c] : bounds[c + 1]] for c in range(len(self.candidates))]

    def __len__(self) -> int:
        return len(self.queries)

    def label(self, row: int) -> str | None:
        return None if self.labels is None else self.labels[row]

    def pick_owner(self, anchor: int, candidate: int, label_filter: bool) -> int | None:
        """The owner of ``candidate`` most similar to ``anchor`` (Algorithm 1, line 15).

        None when the candidate is the anchor's own positive (so co-owners of the anchor's
        positive never become its negatives) or, with ``label_filter``, when every owner shares
        the anchor's label.
        """
        owners = self.owners[candidate]
        if candidate == self.positive[anchor] or len(owners) == 0:
            return None
        mine = self.label(anchor)
        if label_filter and mine is not None:
            owners = owners[[self.label(int(o)) != mine for o in owners]]
            if len(owners) == 0:
                return None
        if len(owners) == 1:
            return int(owners[0])
        sims = self.queries[owners] @ self.queries[anchor]
        return int(owners[int(np.argmax(sims))])

    def owner_list(self, anchor: int, candidates: np.ndarray, label_filter: bool) -> list[int]:
        """Owners of retrieved ``candidates`` in retrieval order, each once (the set Q_adj)."""
        seen: set[int] = set()
        out: list[int] = []
        for cand in candidates:
            if cand < 0:  # an approximate index may return fewer hits
                continue
            owner = self.pick_owner(anchor, int(cand), label_filter)
            if owner is None or owner == anchor or owner in seen:
                continue
            seen.add(owner)
            out.append(owner)
        return out
