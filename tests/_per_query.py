"""Read the per-query scores a result stored, and check them against its main score."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bindkit.records.per_query import PerQuery, read_per_query
from bindkit.results.store import collect_paths


def stored(out: Path, record: dict[str, Any]) -> dict[str, PerQuery]:
    """The per-query scores stored with ``record`` under ``out``, by metric."""
    (path, found), *others = [
        (p, r)
        for p, r in collect_paths(out)
        if (r["task"], r["subset"], r["pairing"], r["model"])
        == (record["task"], record["subset"], record["pairing"], record["model"])
    ]
    assert not others and found["created"] == record["created"]
    items = read_per_query(path, found)
    assert items is not None, f"{path}: no per-query scores"
    return {p.metric: p for p in items}


def mean_is_score(out: Path, record: dict[str, Any], metric: str, score: str) -> PerQuery:
    """The stored per-query ``metric`` averages (NaN left out) to the stored ``score``."""
    scores = stored(out, record)[metric]
    assert float(np.nanmean(scores.values)) == pytest.approx(record["scores"][score], abs=1e-12)
    return scores
