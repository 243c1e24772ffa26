"""The sweep's outputs: ``sweep.csv`` and ``sweep.md`` (one row per trial and LiNeS α, every
panel score, the Pareto front marked, Optuna's own ``best_trials``), ``sweep.png`` (the first two
objectives, base model and front marked, every point named by its trial and α) and
``sweep_optuna.png`` (Optuna's matplotlib view of the study, axes named by the objectives)."""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_bytes, atomic_write_text
from bindkit.sweep.config import SweepConfig
from bindkit.sweep.front import pareto_front


def rows(study: Any, config: SweepConfig) -> list[dict[str, Any]]:
    """One row per completed trial and α (and one per unfinished trial), the front marked."""
    table: list[dict[str, Any]] = []
    params = [p.name for p in config.search]
    for trial in study.get_trials(deepcopy=False):
        common = {
            "trial": trial.number,
            "state": trial.state.name,
            **{name: trial.params.get(name, "") for name in params},
            "dir": trial.user_attrs.get("dir", ""),
            "note": _note(trial),
        }
        points = trial.user_attrs.get("points") if trial.state.name == "COMPLETE" else None
        if not points:
            table.append({**common, "alpha": ""})
            continue
        for point in points:
            table.append(
                {
                    **common,
                    "alpha": point["alpha"],
                    **point["scores"],
                    **point["objectives"],
                    "changes": point.get("changes"),  # not a column: front_changes reads it
                }
            )
    scored = [r for r in table if r["alpha"] != ""]
    flags = pareto_front([[r[name] for name in config.objectives] for r in scored])
    for row, flag in zip(scored, flags, strict=True):
        row["front"] = "yes" if flag else ""
    base = study.user_attrs.get("base")
    if base:
        table.insert(
            0,
            {"trial": "base", "state": "", "alpha": "", "note": "the base model",
             **base["scores"], **base["objectives"]},
        )  # fmt: skip
    return table


def _note(trial: Any) -> str:
    """Why a trial failed, and which trial it retries (ours after a kill, or Optuna's after a
    stale heartbeat, which records the original in ``failed_trial``)."""
    notes = [str(trial.user_attrs["failure"])] if trial.user_attrs.get("failure") else []
    retried = trial.user_attrs.get("retry_of", trial.system_attrs.get("failed_trial"))
    if retried is not None:
        notes.append(f"retry of trial {retried}")
    return "; ".join(notes)


def columns(config: SweepConfig) -> list[str]:
    return [
        "trial", "state", *[p.name for p in config.search], "alpha",
        *[p.name for p in config.panel], *config.objectives, "front", "dir", "note",
    ]  # fmt: skip


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write_outputs(study: Any, config: SweepConfig, out: Path) -> list[Path]:
    """Write ``OUT/sweep.csv``, ``sweep.md`` and ``sweep.png`` (atomically); returns the paths."""
    from bindkit import __version__

    table = rows(study, config)
    names = columns(config)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=names, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    atomic_write_text(out / "sweep.csv", buffer.getvalue())

    front = [r for r in table if r.get("front") == "yes"]
    first = next(iter(config.objectives))
    front.sort(key=lambda r: -float(r[first]))
    lines = [
        f"# Sweep `{config.name}`",
        "",
        f"Config `{config.path}`; sampler {config.sampler}; objectives (maximised): "
        + "; ".join(f"{k} = mean of {', '.join(v)}" for k, v in config.objectives.items())
        + f"; bindkit {__version__}. Full rows: `sweep.csv`; plot: `sweep.png`.",
        "",
        f"## Pareto front ({len(front)} points)",
        "",
        *_markdown(front, names),
        "",
        "Optuna's own best trials (`study.best_trials`, over the raw adapters it ranks; the "
        "front above also holds the LiNeS points): "
        + (", ".join(f"T{n}" for n in optuna_best(study)) or "none yet")
        + ". Its view of the study: `sweep_optuna.png`.",
        "",
        "## All trials",
        "",
        *_markdown(table, names),
        "",
    ]
    lines += front_changes(front, config)
    atomic_write_text(out / "sweep.md", "\n".join(lines))
    plot = out / "sweep.png"
    atomic_write_bytes(plot, _plot(table, config))
    written = [out / "sweep.md", out / "sweep.csv", plot]
    optuna_view = _optuna_plot(study, config)
    if optuna_view is not None:
        atomic_write_bytes(out / "sweep_optuna.png", optuna_view)
        written.append(out / "sweep_optuna.png")
    return written


def front_changes(front: list[dict[str, Any]], config: SweepConfig) -> list[str]:
    """Each front point's change vs the base model on every panel entry, with its 95 % paired
    bootstrap interval (:func:`bindkit.recipes.panel.panel_changes`: the same items resampled
    for both), as the trial's worker recorded it when it scored the point: how sure each point
    of the front is, not only where it lies. Points scored before changes were recorded are
    left out."""
    from bindkit.recipes.runner import change_table

    changes = {
        f"T{row['trial']} α {float(row['alpha']):g}": row["changes"]
        for row in front
        if row.get("changes")
    }
    if not changes:
        return []
    return [
        "## The front against the base model",
        *change_table([p.name for p in config.panel], changes)[1:],
        "",
    ]


def _markdown(table: list[dict[str, Any]], names: list[str]) -> list[str]:
    if not table:
        return ["(none yet)"]
    shown = [n for n in names if n != "dir"]
    return [
        "| " + " | ".join(shown) + " |",
        "|" + "---|" * len(shown),
        *("| " + " | ".join(_cell(r.get(n, "")) for n in shown) + " |" for r in table),
    ]


def point_names(
    scored: list[dict[str, Any]], x_name: str, y_name: str
) -> dict[tuple[float, float], str]:
    """Each plotted position → the points on it, ``T3`` for trial 3's raw adapter and
    ``T3 α0.5`` for a LiNeS copy; equal points share one label (``T0, T1 α0.5``)."""
    names: dict[tuple[float, float], list[str]] = {}
    for r in scored:
        position = (float(r[x_name]), float(r[y_name]))
        alpha = float(r["alpha"])
        name = f"T{r['trial']}" if alpha == 1.0 else f"T{r['trial']} α{alpha:g}"
        names.setdefault(position, []).append(name)
    return {position: ", ".join(found) for position, found in names.items()}


def name_metrics(study: Any, names: list[str]) -> None:
    """Name the study's objectives in its storage, so Optuna's dataframe, dashboard and plots
    say "binding" and "general", not "values_0" / "Objective 0"."""
    import warnings

    import optuna

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        study.set_metric_names(names)


def optuna_best(study: Any) -> list[int]:
    """Optuna's own best trials (its Pareto front over the raw adapters it was told about)."""
    try:
        return sorted(t.number for t in study.best_trials)
    except ValueError:  # no completed trial yet
        return []


def _optuna_plot(study: Any, config: SweepConfig) -> bytes | None:
    """Optuna's matplotlib view of the study (its Pareto front with two or more objectives,
    its optimisation history with one), named with the objectives; None before any trial."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as views

    if not any(t.state.name == "COMPLETE" for t in study.get_trials(deepcopy=False)):
        return None
    objectives = list(config.objectives)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optuna marks its matplotlib views experimental
        if len(objectives) >= 2:
            axes = views.plot_pareto_front(study, target_names=objectives)
        else:
            axes = views.plot_optimization_history(study, target_name=objectives[0])
    figure: Any = axes.get_figure()
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    plt.close(figure)
    return buffer.getvalue()


def _plot(table: list[dict[str, Any]], config: SweepConfig) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    objectives = list(config.objectives)
    scored = [r for r in table if r.get("alpha", "") != ""]
    base = next((r for r in table if r["trial"] == "base"), None)

    def label(name: str) -> str:
        members = config.objectives[name]
        return name if members == (name,) else f"{name} (mean of {', '.join(members)})"

    figure, axes = plt.subplots(figsize=(6, 4.5))
    if len(objectives) >= 2:
        x_name, y_name = objectives[:2]

        def xy(rows: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
            return [float(r[x_name]) for r in rows], [float(r[y_name]) for r in rows]

        axes.set_xlabel(label(x_name))
        axes.set_ylabel(label(y_name))
    else:
        x_name, y_name = "trial", objectives[0]

        def xy(rows: list[dict[str, Any]]) -> tuple[list[float], list[float]]:
            return [-1.0 if r["trial"] == "base" else float(r["trial"]) for r in rows], [
                float(r[y_name]) for r in rows
            ]

        axes.set_xlabel("trial (base = -1)")
        axes.set_ylabel(label(y_name))
    if base:  # hollow and underneath, so a trial scoring as the base model stays visible
        axes.scatter(
            *xy([base]), marker="*", s=260, facecolors="none", edgecolors="black", zorder=1,
            label="base model",
        )  # fmt: skip
    if scored:
        axes.scatter(*xy(scored), s=18, color="0.45", label="trial × LiNeS α", zorder=3)
    front = sorted((r for r in scored if r.get("front") == "yes"), key=lambda r: float(r[x_name]))
    if front:
        axes.plot(*xy(front), "o-", color="tab:red", ms=5, label="Pareto front", zorder=2)
    names = point_names(scored, x_name, y_name)
    for (x, y), name in names.items():
        axes.annotate(name, (x, y), xytext=(4, 4), textcoords="offset points", fontsize=7)
    axes.set_title(
        f"sweep {config.name}: {len(scored)} points at {len(names)} positions", fontsize=10
    )
    axes.legend(loc="best", fontsize=8)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=120)
    plt.close(figure)
    return buffer.getvalue()
