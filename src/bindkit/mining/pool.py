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

    The vectors may be memory-mapped arrays (``np.load(..., mmap_mode="r")``): the miners read
    rows by index and search in blocks, so a pool larger than RAM works.

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
    _order: np.ndarray = field(init=False, repr=False)
    _bounds: np.ndarray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.positive = np.asarray(self.positive, dtype=np.int64)
        # the owner map as two flat arrays (CSR): rows sorted by candidate, and where each
        # candidate's run starts; a list of per-candidate arrays costs ~100 bytes per candidate
        self._order = np.argsort(self.positive, kind="stable")
        self._bounds = np.searchsorted(
            self.positive[self._order], np.arange(len(self.candidates) + 1)
        )

    def __len__(self) -> int:
        return len(self.queries)

    @property
    def owner_order(self) -> np.ndarray:
        """Row ids sorted by candidate (the CSR values of the owner map)."""
        return self._order

    @property
    def owner_bounds(self) -> np.ndarray:
        """``[c + 1]``: candidate ``c``'s owners are ``owner_order[bounds[c]:bounds[c + 1]]``."""
        return self._bounds

    def owners(self, candidate: int) -> np.ndarray:
        """The rows whose positive is ``candidate``, in row order (the seed's D2Q map)."""
        return self._order[self._bounds[candidate] : self._bounds[candidate + 1]]

    def positive_scores(self, block: int = 65_536) -> np.ndarray:
        """``[n]`` similarity of each query to its own positive, ``block`` rows at a time (a
        memory-mapped pool is never gathered whole)."""
        out = np.empty(len(self), dtype=np.float32)
        for start in range(0, len(self), block):
            stop = start + block
            q = np.asarray(self.queries[start:stop], dtype=np.float32)
            c = np.asarray(self.candidates[self.positive[start:stop]], dtype=np.float32)
            out[start:stop] = np.einsum("nd,nd->n", q, c)
        return out

    def label(self, row: int) -> str | None:
        return None if self.labels is None else self.labels[row]

    def shares_label(self, anchor: int, candidate: int) -> bool:
        """True when the anchor is labelled and some owner of ``candidate`` has its label."""
        mine = self.label(anchor)
        return mine is not None and any(self.label(int(o)) == mine for o in self.owners(candidate))

    def pick_owner(self, anchor: int, candidate: int, label_filter: bool) -> int | None:
        """The owner of ``candidate`` most similar to ``anchor`` (Algorithm 1, line 15).

        None when the candidate is the anchor's own positive (so co-owners of the anchor's
        positive never become its negatives) or, with ``label_filter``, when any owner shares
        the anchor's label: the seed discards *candidates* whose owner has the anchor's class,
        so a candidate that is also the positive of a same-label row is no negative, whichever
        of its owners would represent it.
        """
        owners = self.owners(candidate)
        if candidate == self.positive[anchor] or len(owners) == 0:
            return None
        if label_filter and self.shares_label(anchor, candidate):
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
