"""LiNeS α rules of a recipe for an adapter the trainer did not choose one for (a soup).

``val-tolerance`` is the trainer's rule (:meth:`bindkit.train.trainer._Run.sweep` without an STS
file): among α in :data:`bindkit.train.trainer.SWEEP` and 1, the smallest whose accuracy on the
recipe's validation triplets is within ``tolerance`` points of the raw adapter's (α 1).

``dev-sts-slack`` is issue 18's search rule (``benchmarks/recipe/search.py``): among the α scored
on a dev panel, the largest (the least LiNeS shrinking) whose dev STS stays within ``slack`` of
the base model's; if none does, the α with the best dev STS.
"""

from __future__ import annotations

from pathlib import Path


def choose_alpha(accuracies: dict[float, float], tolerance: float) -> float:
    """The smallest α whose accuracy is at least the raw adapter's (α 1) minus ``tolerance``
    points.

    Example:
        >>> choose_alpha({0.0: 0.70, 0.5: 0.79, 1.0: 0.80}, 2.0)
        0.5
    """
    floor = accuracies[1.0] - tolerance / 100
    return min(alpha for alpha, accuracy in accuracies.items() if accuracy >= floor)


def val_tolerance_alpha(
    model: str, adapter: Path, val: Path, tolerance: float, work: Path
) -> float:
    """Score ``adapter`` at each α of the trainer's sweep on ``val`` and apply
    :func:`choose_alpha` (LiNeS copies under ``WORK/lines-sweep/``)."""
    import shutil

    from bindkit.adapters.lines import apply_lines
    from bindkit.recipes.panel import PanelEntry, score_panel
    from bindkit.train.trainer import SWEEP

    entry = (PanelEntry("val", "triplets", "triplet_accuracy", data=str(val)),)
    results = work / "lines-sweep"
    accuracies = {}
    for alpha in (*SWEEP, 1.0):
        copy = results / f"alpha-{alpha}"
        if alpha == 1.0:
            copy = adapter
        else:
            apply_lines(adapter, copy, alpha=alpha, overwrite=True)
        spec = f"{model}+adapter={copy}"
        accuracies[alpha] = score_panel(spec, entry, results / "results", cache=False)["val"]
    shutil.rmtree(results, ignore_errors=True)
    return choose_alpha(accuracies, tolerance)


def dev_sts_slack_alpha(sts: dict[float, float], base: float, slack: float) -> float:
    """The largest α whose dev STS (``sts[α]``) is at least ``base - slack``; if no α is, the
    α with the best dev STS. Scores and ``slack`` in one unit (Spearman, not points).

    Example:
        >>> dev_sts_slack_alpha({1.0: 0.80, 0.6: 0.815, 0.3: 0.82}, 0.82, 0.006)
        0.6
        >>> dev_sts_slack_alpha({1.0: 0.70, 0.3: 0.75}, 0.82, 0.006)
        0.3
    """
    floor = base - slack
    kept = [alpha for alpha, score in sts.items() if score >= floor]
    if kept:
        return max(kept)
    return max(sts, key=lambda alpha: sts[alpha])
