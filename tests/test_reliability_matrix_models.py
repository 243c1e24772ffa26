# ruff: noqa: E501 - the matrix reads best as a table, one row per line
"""The turn-4 reliability review's model-spec cells (ms08, ms16): a bare model name that is a
local folder without any model files is named as such, not as "not a folder"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from _matrix import C, Case, Cell, check_outcome, run_matrix_case
from bindkit.saber.build import generate_saber

EVAL = "eval -q --no-report --data s --out r2 --model"
NOT_A_MODEL = "a local folder with no model files"

# fmt: off
ROWS: list[Case] = [
    C("t4_ms08", f"{EVAL} s", "saber_as_model", 2, NOT_A_MODEL),
    C("t4_ms16", f"{EVAL} ./s", "saber_as_model", 2, NOT_A_MODEL),
    C("t4_ms08b", f"{EVAL} org/nowhere", "saber_as_model", 2, "not a folder, not in the Hugging Face cache"),
]
# fmt: on


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("matrix-models")
    generate_saber(root / "saber", per_n=2, n_max=3)
    return root


def _build(cell: Cell, name: str) -> None:
    if name == "saber_as_model":
        shutil.copytree(cell.base / "saber", cell.dir / "s")
    else:  # pragma: no cover - a typo in a row
        raise KeyError(name)


@pytest.mark.parametrize("case", ROWS, ids=[case.id for case in ROWS])
def test_matrix_row(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    check_outcome(case, run_matrix_case(case, cell, monkeypatch, _build, ("s",)))
