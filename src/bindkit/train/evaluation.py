"""Evaluation during training, through the evaluation library: the scores a run records before
training, every ``--eval-every`` steps and after (:func:`scores`: triplet accuracy on ``--val``,
Spearman on ``--sts``), and the LiNeS α sweep that picks α by them (:func:`choose_lines_alpha`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bindkit.tasks.base import Dataset

__all__ = ["SWEEP", "choose_lines_alpha", "scores", "sts_spearman", "triplet_accuracy"]

SWEEP = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
"""The LiNeS αs a run scores besides 1 (the raw adapter)."""


def triplet_accuracy(embedder: Any, rows: list[dict[str, Any]], name: str = "val") -> float:
    """Triplet accuracy through the evaluation library (the ``triplets`` task)."""
    from bindkit.tasks.base import EvalContext
    from bindkit.tasks.text.triplets import TripletTask

    dataset = Dataset(name, "", name, rows)
    result = TripletTask().evaluate(embedder, dataset, name, "tt", EvalContext())
    return float(result["scores"]["triplet_accuracy"])


def sts_spearman(embedder: Any, dataset: Dataset) -> float:
    """Spearman on an STS dataset through the evaluation library (the ``sts`` task)."""
    from bindkit.tasks.base import EvalContext
    from bindkit.tasks.text.sts import STSTask

    result = STSTask().evaluate(embedder, dataset, dataset.name, "tt", EvalContext())
    return float(result["scores"]["spearman"])


def scores(
    embedder: Any, val: list[dict[str, Any]] | None, sts: Dataset | None
) -> dict[str, float]:
    """The embedder's scores in eval mode: ``val_triplet_accuracy`` with ``val``,
    ``sts_spearman`` with ``sts`` (empty with neither)."""
    embedder.module.eval()
    result: dict[str, float] = {}
    if val is not None:
        result["val_triplet_accuracy"] = triplet_accuracy(embedder, val)
    if sts is not None:
        result["sts_spearman"] = sts_spearman(embedder, sts)
    return result


def choose_lines_alpha(
    model: Any,
    depth: int,
    raw: dict[str, float],
    tolerance: float,
    score: Callable[[], dict[str, float]],
    say: Callable[[str], None],
) -> tuple[float, list[dict[str, float]]]:
    """Choose LiNeS α: among the αs whose val accuracy is within ``tolerance`` points of the
    raw adapter's (``raw``), the best STS Spearman when an STS file is given, else the smallest
    α. Each α of :data:`SWEEP` is set live on ``model`` (``depth`` layers) and scored by
    ``score``; the model is left unscaled. Returns the α and every point scored."""
    from bindkit.adapters.lines import lines_factors, scale_live

    points: list[dict[str, float]] = []
    for alpha in SWEEP:
        scale_live(model, lines_factors(depth, alpha), alpha)
        points.append({"alpha": alpha, **score()})
        # each point is a full validation pass: a long, otherwise silent phase
        shown = ", ".join(f"{k} {v:.4f}" for k, v in points[-1].items() if k != "alpha")
        say(f"LiNeS: alpha {alpha} ({len(points)}/{len(SWEEP)}): {shown}")
    scale_live(model, None)
    points.append({"alpha": 1.0, **raw})
    floor = raw["val_triplet_accuracy"] - tolerance / 100
    kept = [p for p in points if p["val_triplet_accuracy"] >= floor]
    if "sts_spearman" in raw:
        best = max(kept, key=lambda p: (p["sts_spearman"], -p["alpha"]))
    else:
        best = min(kept, key=lambda p: p["alpha"])
    say(f"LiNeS: alpha {best['alpha']} chosen from {len(points)} points")
    return float(best["alpha"]), points
