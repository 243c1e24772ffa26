"""Hard-negative mining: a FAISS/numpy index, SaHa (seed 002, Algorithm 1), baselines, diagnostics.

``mine(model, data, out, MineConfig(...))`` is the library form of ``bindkit mine``.
"""

from __future__ import annotations

from bindkit.mining.pipeline import METHODS, MineConfig, mine
from bindkit.mining.pool import Cluster, Pool

__all__ = ["METHODS", "Cluster", "MineConfig", "Pool", "mine"]
