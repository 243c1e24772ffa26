"""What a set of clusters holds: false negatives, latent high-risk negatives, sizes, leftovers.

- false-negative rate (where labels exist): the share of negatives of labelled anchors whose
  candidate (the negative pair's positive) is owned by any row with the anchor's label (seed 002,
  Table VIIIa): a candidate that is the positive of a same-label row is a false negative even
  when the pair written for it belongs to a row of another label.
- latent high-risk rate: the share of negatives whose owner query has cosine ≥ ``threshold``
  (0.90) with the anchor (seed 002, Table VIIIb).
- hardness vs safety (seed 002, Fig. 5): x = anchor–candidate similarity (how hard),
  y = anchor–owner similarity (how risky).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.mining.pool import Cluster, Pool

HIGH_RISK = 0.90


@dataclass
class Diagnostics:
    """Counts over one or more tasks; rates are derived so that tasks add up."""

    rows: int = 0
    clusters: int = 0
    phase2_clusters: int = 0
    negatives: int = 0
    labelled_negatives: int = 0
    false_negatives: int = 0
    high_risk: int = 0
    uncovered: int = 0
    reused: int = 0
    dropped: int = 0
    sizes: Counter[int] = field(default_factory=Counter)
    hardness: list[float] = field(default_factory=list)
    owner_similarity: list[float] = field(default_factory=list)

    def add(self, other: Diagnostics) -> None:
        for name in (
            "rows",
            "clusters",
            "phase2_clusters",
            "negatives",
            "labelled_negatives",
            "false_negatives",
            "high_risk",
            "uncovered",
            "reused",
            "dropped",
        ):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.sizes.update(other.sizes)
        self.hardness += other.hardness
        self.owner_similarity += other.owner_similarity

    @property
    def false_negative_rate(self) -> float | None:
        if not self.labelled_negatives:
            return None
        return self.false_negatives / self.labelled_negatives

    @property
    def high_risk_rate(self) -> float | None:
        return self.high_risk / self.negatives if self.negatives else None

    def summary(self) -> dict[str, Any]:
        """JSON-ready numbers (no per-negative points)."""
        sizes = sorted(self.sizes.elements())
        return {
            "rows": self.rows,
            "clusters": self.clusters,
            "phase2_clusters": self.phase2_clusters,
            "negatives": self.negatives,
            "false_negative_rate": self.false_negative_rate,
            "labelled_negatives": self.labelled_negatives,
            "high_risk_rate": self.high_risk_rate,
            "high_risk_threshold": HIGH_RISK,
            "mean_hardness": float(np.mean(self.hardness)) if self.hardness else None,
            "mean_owner_similarity": (
                float(np.mean(self.owner_similarity)) if self.owner_similarity else None
            ),
            "mean_cluster_size": float(np.mean(sizes)) if sizes else None,
            "cluster_sizes": {str(s): c for s, c in sorted(self.sizes.items())},
            "uncovered_rows": self.uncovered,
            "reused_rows": self.reused,
            "dropped_singletons": self.dropped,
        }


def drop_singletons(clusters: Sequence[Cluster]) -> tuple[list[Cluster], int]:
    """The clusters that have negatives, and how many had none.

    A cluster of one pair (an anchor for which no valid negative was left, e.g. a SaHa phase-2
    leftover in an exhausted pool) gives zero loss but still counts in a training mean, so
    ``bindkit mine`` does not write it; the number dropped is reported.
    """
    kept = [c for c in clusters if c.negatives]
    return kept, len(clusters) - len(kept)


def diagnose(
    pool: Pool, clusters: Sequence[Cluster], threshold: float = HIGH_RISK, dropped: int = 0
) -> Diagnostics:
    """Diagnostics of ``clusters`` mined from ``pool``; labels are read from the pool.

    ``dropped``: how many clusters without negatives were left out (see :func:`drop_singletons`).
    """
    out = Diagnostics(rows=len(pool), clusters=len(clusters), dropped=dropped)
    appearances: Counter[int] = Counter()
    for cluster in clusters:
        appearances.update(cluster.rows)
        out.sizes[len(cluster.rows)] += 1
        out.phase2_clusters += cluster.phase == 2
        if not cluster.negatives:
            continue
        negatives = np.asarray(cluster.negatives)
        anchor = pool.queries[cluster.anchor]
        owner_sims = pool.queries[negatives] @ anchor
        hardness = pool.candidates[pool.positive[negatives]] @ anchor
        out.negatives += len(negatives)
        out.high_risk += int(np.sum(owner_sims >= threshold))
        out.hardness += hardness.tolist()
        out.owner_similarity += owner_sims.tolist()
        label = pool.label(cluster.anchor)
        if label is not None:
            out.labelled_negatives += len(negatives)
            out.false_negatives += sum(
                pool.shares_label(cluster.anchor, int(pool.positive[n])) for n in negatives
            )
    out.uncovered = len(pool) - len(appearances)
    out.reused = sum(1 for count in appearances.values() if count > 1)
    return out


def _fmt(value: float | None, percent: bool = False) -> str:
    if value is None:
        return "-"
    return f"{100 * value:.2f}%" if percent else f"{value:.3f}"


def format_table(results: dict[str, Diagnostics]) -> str:
    """A plain-text table, one line per name (a method or a task)."""
    head = (
        f"{'':<14} {'rows':>7} {'clusters':>8} {'phase2':>6} {'size':>5} {'FN rate':>8} "
        f"{'high-risk':>9} {'hardness':>8} {'owner sim':>9} {'uncovered':>9} {'reused':>7} "
        f"{'dropped':>7}"
    )
    lines = [head]
    for name, d in results.items():
        s = d.summary()
        lines.append(
            f"{name[:14]:<14} {d.rows:>7} {d.clusters:>8} {d.phase2_clusters:>6} "
            f"{_fmt(s['mean_cluster_size']):>5} {_fmt(d.false_negative_rate, True):>8} "
            f"{_fmt(d.high_risk_rate, True):>9} {_fmt(s['mean_hardness']):>8} "
            f"{_fmt(s['mean_owner_similarity']):>9} {d.uncovered:>9} {d.reused:>7} {d.dropped:>7}"
        )
    return "\n".join(lines)


#: points drawn per name in the scatter; beyond it a seeded uniform sample (the means and rates
#: in the table use every negative)
SCATTER_POINTS = 20_000


def scatter_sample(d: Diagnostics, limit: int = SCATTER_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """The (hardness, owner similarity) points to draw: all, or ``limit`` drawn without
    replacement with a fixed seed (drawing 140,000 points took longer than the mining)."""
    x, y = np.asarray(d.hardness), np.asarray(d.owner_similarity)
    if len(x) <= limit:
        return x, y
    keep = np.sort(np.random.default_rng(0).choice(len(x), limit, replace=False))
    return x[keep], y[keep]


def scatter_png(path: Path, points: dict[str, Diagnostics], threshold: float = HIGH_RISK) -> bool:
    """Hardness-vs-safety scatter (one colour per name, at most :data:`SCATTER_POINTS` points
    each); False when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    from bindkit._io import atomic_write_figure

    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    for name, d in points.items():
        x, y = scatter_sample(d)
        ax.scatter(x, y, s=4, alpha=0.4, label=name)
    ax.axhline(threshold, color="grey", linestyle="--", linewidth=1)
    ax.set_xlabel("hardness: anchor–candidate similarity")
    ax.set_ylabel("risk: anchor–owner similarity")
    ax.set_title("Hardness vs safety of mined negatives")
    ax.legend(loc="lower right", markerscale=3)
    fig.tight_layout()
    atomic_write_figure(fig, path)
    return True
