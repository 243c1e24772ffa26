# ruff: noqa: E501 - the matrix reads best as a table, one row per line
"""The turn-5 reliability review's ``bindkit mteb`` cells (M15, M19, M20, M23), one row each,
through the shared engine (``tests/_matrix.py``): mteb's own CLI runs in-process on a small
SABER set, so each row takes a few seconds."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

pytest.importorskip("mteb")

from _matrix import C, Case, Cell, Outcome, check_outcome, run_matrix_case
from bindkit.saber.build import generate_saber

RUN = "mteb -q run --output-folder mo -t SABERMCQ-s --saber s"

# fmt: off
ROWS: list[Case] = [
    C("M15", "mteb run -t SABERMCQ --output-folder mo", "", 2, "bindkit mteb run: give -m MODEL", absent=("mo",)),
    C("M20", f"{RUN} -m bindkit/bow -m bindkit/bow+dim=64", "saber", 0),
    C("M19", f"{RUN} -m bindkit/bow", "saber", 0),
    C("M19b", "mteb run -q --output-folder mo -t SABERMCQ-s --saber s -m bindkit/bow", "saber", 0),
    C("M23", f"{RUN} -m bindkit/builtin:tiny-clip", "saber no_torchvision", 2, "mteb needs torchvision>0.2.1 for it; pip install mteb[image]", absent=("mo",)),
]
# fmt: on
BY_ID = {case.id: case for case in ROWS}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("matrix-mteb")
    generate_saber(root / "saber", per_n=2, n_max=3)
    return root


def _build(cell: Cell, name: str) -> None:
    if name == "saber":
        shutil.copytree(cell.base / "saber", cell.dir / "s")
    elif name == "no_torchvision":  # as on an install without mteb[image], torchvision or not
        from mteb.models.model_meta import ModelMeta

        missing = ['torchvision>0.2.1; extra == "image"']
        cell.undo.append(lambda: setattr(ModelMeta, "_missing_dependencies", saved))
        saved = ModelMeta.__dict__["_missing_dependencies"]
        ModelMeta._missing_dependencies = lambda self, groups: missing  # type: ignore[method-assign]
    else:  # pragma: no cover - a typo in a row
        raise KeyError(name)


def _run(case_id: str, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    outcome = run_matrix_case(BY_ID[case_id], cell, monkeypatch, _build, ("s",))
    check_outcome(BY_ID[case_id], outcome)
    return outcome


@pytest.mark.parametrize("case_id", ["M15", "M23"])
def test_refused_in_one_line(case_id: str, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(case_id, cell, monkeypatch)


def _results(cell: Cell) -> set[str]:
    return {p.parent.parent.name for p in (cell.dir / "mo" / "results").glob("*/*/SABERMCQ-s.json")}


def test_m20_every_model_given_runs(cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two ``-m bindkit/…``: both are registered and run (mteb's own ``-m`` keeps the last)."""
    _run("M20", cell, monkeypatch)
    assert _results(cell) == {"bindkit__bow", "bindkit__bow+dim=64"}


@pytest.mark.parametrize("case_id", ["M19", "M19b"])
def test_m19_quiet_silences_mtebs_log_and_bars(
    case_id: str, cell: Cell, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``-q`` (before or after ``run``): mteb logs warnings only, and no nested bar's cursor
    escape or bar line reaches the output."""
    monkeypatch.setattr(logging.getLogger("mteb"), "level", logging.NOTSET)
    outcome = _run(case_id, cell, monkeypatch)
    assert logging.getLogger("mteb").getEffectiveLevel() >= logging.WARNING
    text = outcome.out + outcome.err
    assert "\x1b[A" not in text and "Evaluating" not in text, text
    assert _results(cell) == {"bindkit__bow"}
