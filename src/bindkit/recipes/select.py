"""LiNeS α rules of a recipe for an adapter the trainer did not choose one for (a soup).

``val-tolerance`` is the trainer's rule (:func:`bindkit.train.evaluation.choose_lines_alpha`
without an STS file): among α in :data:`bindkit.train.evaluation.SWEEP` and 1, the smallest whose
accuracy on the recipe's validation triplets is within ``tolerance`` points of the raw adapter's
(α 1).

``dev-sts-slack`` is issue 18's search rule (``benchmarks/recipe/search.py``): among the α scored
on a dev panel, the largest (the least LiNeS shrinking) whose dev STS stays within ``slack`` of
the base model's; if none does, the α with the best dev STS.

``wang-tradeoff`` is the default single-task setting of LiNeS's authors (Wang et al., ICLR 2025;
their code's ``single_task`` method with ``apply_lines``): β = 1 − α, α from 0, 0.1, …, 1 picked
on validation data by the largest 2 × (target accuracy / the finetuned model's) + (control
accuracy / the base model's), a tie going to the larger α (:func:`wang_tradeoff_alpha`). Seed 000
applies LiNeS "using the default setting of Wang et al. (2025)"; bindkit's target is the recipe's
validation triplets and its control the trainer's STS file (``train.sts``), where the seed's
general-capability measure is MMEB-v3 (not in bindkit).
"""

from __future__ import annotations

from pathlib import Path

from bindkit.errors import BindkitError


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
    from bindkit.train.evaluation import SWEEP

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


#: the weight of the target task in Wang et al.'s single-task trade-off (``tradeoff_target_weight``)
WANG_TARGET_WEIGHT = 2.0


def wang_tradeoff_alpha(
    points: dict[float, tuple[float, float]],
    target_raw: float,
    control_base: float,
    weight: float = WANG_TARGET_WEIGHT,
) -> float:
    """The α of ``points`` (α → (target, control) score) with the largest
    ``weight x target / target_raw + control / control_base``; a tie goes to the larger α.

    ``target_raw`` is the finetuned (α 1) model's target score, ``control_base`` the base
    model's control score: the two normalisations of Wang et al.'s trade-off.

    Example:
        >>> points = {1.0: (0.90, 0.70), 0.5: (0.88, 0.80), 0.0: (0.60, 0.82)}
        >>> wang_tradeoff_alpha(points, 0.90, 0.82)
        0.5
    """
    if target_raw <= 0 or control_base <= 0:
        raise BindkitError(
            f"LiNeS wang-tradeoff: the finetuned target score ({target_raw:g}) and the base "
            f"control score ({control_base:g}) must be positive to normalise by them"
        )

    def tradeoff(alpha: float) -> float:
        target, control = points[alpha]
        return weight * target / target_raw + control / control_base

    return max(sorted(points, reverse=True), key=tradeoff)


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
