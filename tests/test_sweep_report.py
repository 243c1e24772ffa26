"""The sweep's outputs on a hand-made Optuna study: every point named, the base model drawn
under the trials, Optuna's metric names, best trials and view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("matplotlib")

from bindkit.sweep.config import load_config  # noqa: E402
from bindkit.sweep.report import (  # noqa: E402
    name_metrics,
    optuna_best,
    point_names,
    write_outputs,
)
from test_sweep import write_sweep  # noqa: E402


def _point(alpha: float, binding: float, general: float) -> dict[str, Any]:
    return {
        "alpha": alpha,
        "scores": {"bind": binding, "sts": general},
        "objectives": {"binding": binding, "general": general},
    }


def _study(points: list[list[dict[str, Any]]]) -> Any:
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(directions=["maximize", "maximize"])
    name_metrics(study, ["binding", "general"])
    study.set_user_attr("base", _point(1.0, 0.5, 0.5))
    lr = optuna.distributions.FloatDistribution(1e-3, 1e-1, log=True)
    for number, trial_points in enumerate(points):
        raw = trial_points[0]["objectives"]
        study.add_trial(
            optuna.trial.create_trial(
                params={"lr": 0.01 * (number + 1)},
                distributions={"lr": lr},
                values=[raw["binding"], raw["general"]],
                user_attrs={"points": trial_points, "dir": f"trials/p-{number}"},
            )
        )
    return study


def test_point_names_merge_equal_points() -> None:
    rows = [
        {"trial": 0, "alpha": 1.0, "binding": 0.5, "general": 0.5},
        {"trial": 1, "alpha": 0.5, "binding": 0.5, "general": 0.5},
        {"trial": 1, "alpha": 1.0, "binding": 0.7, "general": 0.4},
    ]
    assert point_names(rows, "binding", "general") == {
        (0.5, 0.5): "T0, T1 α0.5",
        (0.7, 0.4): "T1",
    }


def test_outputs_name_points_and_use_optunas_best_trials(tmp_path: Path) -> None:
    config = load_config(write_sweep(tmp_path))
    # trial 0 scores exactly as the base model (it would hide under the base marker)
    study = _study(
        [
            [_point(1.0, 0.5, 0.5), _point(0.5, 0.55, 0.5)],
            [_point(1.0, 0.9, 0.3), _point(0.5, 0.7, 0.45)],
        ]
    )
    assert study.metric_names == ["binding", "general"]
    assert optuna_best(study) == [0, 1]
    out = tmp_path / "out"
    out.mkdir()
    written = write_outputs(study, config, out)
    assert out / "sweep_optuna.png" in written
    assert (out / "sweep_optuna.png").read_bytes()[:4] == b"\x89PNG"
    report = (out / "sweep.md").read_text(encoding="utf-8")
    assert "`study.best_trials`" in report and ": T0, T1." in report


def test_the_sweep_plot_names_every_point_above_the_base(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib.pyplot as plt

    config = load_config(write_sweep(tmp_path))
    study = _study([[_point(1.0, 0.5, 0.5), _point(0.5, 0.6, 0.5)]])
    figures: list[Any] = []
    real = plt.close
    monkeypatch.setattr(plt, "close", lambda figure=None: figures.append(figure))
    (tmp_path / "out").mkdir()
    write_outputs(study, config, tmp_path / "out")
    monkeypatch.setattr(plt, "close", real)
    axes = figures[0].axes[0]
    assert {t.get_text() for t in axes.texts} == {"T0", "T0 α0.5"}
    base, points = axes.collections[0], axes.collections[1]
    assert base.get_label() == "base model" and base.get_zorder() < points.get_zorder()
    assert len(base.get_facecolor()) == 0 or base.get_facecolor()[0][3] == 0  # hollow
    assert "2 points at 2 positions" in axes.get_title()
    for figure in figures:
        real(figure)


def test_an_opened_study_names_its_objectives(tmp_path: Path) -> None:
    from bindkit.sweep.study import _open_study

    config = load_config(write_sweep(tmp_path))
    study, _ = _open_study(config, f"sqlite:///{tmp_path / 'study.db'}", None)
    assert study.metric_names == ["binding", "general"]
    again = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path / 'study.db'}")
    assert again.metric_names == ["binding", "general"]
