"""``bindkit finetune``'s input cells (``ft*``) as matrix rows: every bad file, key, value or
path is one line and rc 2, before any data is generated (``o`` never appears).

Each row runs ``bindkit.cli.main(argv)`` in-process in its own directory through the shared
engine (``tests/_matrix.py``). The fixture ``recipe.toml`` is the packaged binding-v1.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from _matrix import C, Case, Cell, Outcome, check_outcome, run_matrix_case

INPUTS = ("recipe.toml",)
EDITS = {
    "corrupt": ("[data]", "[data"),
    "unknown": ("[soup]", "[soop]"),
    "nan_alpha": ("alpha = 1.0", "alpha = nan"),
    "inf_examples": ("examples = 24000", "examples = inf"),
    "bad_panel_task": ('task = "triplets"', 'task = "triplet"'),
}
ABSENT = ("o",)

ROWS: list[Case] = [
    C(
        "ft01",
        "finetune missing.toml --out o",
        "",
        2,
        "missing.toml: file not found",
        absent=ABSENT,
    ),
    C("ft02", "finetune recipe.toml --out o", "recipe corrupt", 2, "not a readable TOML file"),
    C(
        "ft03",
        "finetune recipe.toml --out o",
        "recipe unknown",
        2,
        "recipe.toml: unknown key soop (did you mean soup?)",
        absent=ABSENT,
    ),
    C(
        "ft04",
        "finetune recipe.toml --out o",
        "recipe nan_alpha",
        2,
        "recipe.toml: lines.alpha nan: must be from 0 to 1",
        absent=ABSENT,
    ),
    C(
        "ft05",
        "finetune recipe.toml --out o",
        "recipe inf_examples",
        2,
        "recipe.toml: data.examples inf: give a whole number from 100 to 1,000,000",
        absent=ABSENT,
    ),
    C(
        "ft06",
        "finetune recipe.toml --out recipe.toml",
        "recipe",
        2,
        "--out recipe.toml: is the input recipe.toml",
    ),
    C("ft07", "finetune --out o", "", 2, "give a RECIPE.toml file or --recipe NAME", absent=ABSENT),
    C(
        "ft08",
        "finetune recipe.toml --recipe binding-v1 --out o",
        "recipe",
        2,
        "give a RECIPE.toml file or --recipe NAME (one of them)",
        absent=ABSENT,
    ),
    C(
        "ft09",
        "finetune --recipe bindng-v1 --out o",
        "",
        2,
        "--recipe bindng-v1: no such packaged recipe (did you mean binding-v1?)",
        absent=ABSENT,
    ),
    C(
        "ft10",
        "finetune --recipe binding-v1 --out o --set train.lr=nan",
        "",
        2,
        "[train]: --lr nan: give a finite number",
        absent=ABSENT,
    ),
    C(
        "ft11",
        "finetune --recipe binding-v1 --out o --set data.exampels=300",
        "",
        2,
        "unknown key data.exampels (did you mean data.examples?)",
        absent=ABSENT,
    ),
    C("ft12", "finetune --recipe binding-v1 --out o --set x", "", 2, "--set x: give KEY=VALUE"),
    C(
        "ft13",
        "finetune --recipe binding-v1 --out o --threads 0",
        "",
        2,
        "--threads 0: must be from 1 to 1024",
        absent=ABSENT,
    ),
    C(
        "ft14",
        "finetune recipe.toml --out o",
        "recipe bad_panel_task",
        2,
        "recipe.toml: panel[1].task: --task 'triplet': unknown task (did you mean triplets?)",
        absent=ABSENT,
    ),
    C(
        "ft15",
        "finetune --recipe binding-v1 --model st:default+adapter=x --out o",
        "",
        2,
        "model st:default+adapter=x: already carries an adapter",
        absent=ABSENT,
    ),
    C(
        "ft16",
        "finetune --recipe binding-v1 --out recipe.toml/o",
        "recipe",
        2,
        "recipe.toml/o: not a directory",
    ),
]


def _build(cell: Cell, name: str) -> None:
    d = cell.dir
    if name == "recipe":
        shutil.copy(cell.base / "recipe.toml", d / "recipe.toml")
    elif name in EDITS:
        old, new = EDITS[name]
        text = (d / "recipe.toml").read_text(encoding="utf-8")
        assert old in text, (name, old)
        (d / "recipe.toml").write_text(text.replace(old, new, 1), encoding="utf-8")
    else:
        raise KeyError(f"unknown fixture {name!r}")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bindkit.recipes.recipe import packaged_recipe

    root = tmp_path_factory.mktemp("matrix-finetune-base")
    (root / "recipe.toml").write_text(packaged_recipe("binding-v1").to_toml())
    return root


@pytest.fixture
def cell(tmp_path: Path, base: Path) -> Iterator[Cell]:
    made = Cell(tmp_path / "cell", base)
    made.dir.mkdir()
    yield made
    for undo in reversed(made.undo):
        undo()


def run_case(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    return run_matrix_case(case, cell, monkeypatch, _build, INPUTS)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ROWS if not c.slow])
def test_matrix_row(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    check_outcome(case, run_case(case, cell, monkeypatch))


def test_every_row_is_unique() -> None:
    ids = [case.id for case in ROWS]
    assert len(ids) == len(set(ids)) and all(i.startswith("ft") for i in ids)
