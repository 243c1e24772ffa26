"""The turn-4 reliability review's ``bindkit sweep`` cells (``sw*``) as matrix rows.

Each row runs ``bindkit.cli.main(argv)`` in-process in its own directory through the shared
engine (``tests/_matrix.py``). The fixtures are the review's: a two-point grid over ``lr`` on
builtin:tiny-clip with ``max_steps 2`` (``sweep.toml``), a TPE variant (``sweep_tpe.toml``), a
triplet file that is also the ``bind`` panel's data, and an STS file.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from _matrix import C, Case, Cell, Outcome, check_outcome, run_matrix_case, settle

pytest.importorskip("optuna")
pytest.importorskip("peft")

PAIRS = [("red", "blue"), ("striped", "green"), ("white", "orange"), ("golden", "matte")]
TRIPLETS = [
    {
        "query": f"a {a} cube and a {b} heart",
        "positive": f"a {b} heart and a {a} cube",
        "negative": f"a {b} cube and a {a} heart",
    }
    for a, b in PAIRS * 2
]
STS = [
    {"sentence1": "a red cube", "sentence2": "a red cube", "score": 5.0},
    {"sentence1": "a red cube", "sentence2": "a blue cube", "score": 3.0},
    {"sentence1": "a red cube", "sentence2": "a blue heart", "score": 1.0},
    {"sentence1": "a striped star", "sentence2": "a golden ring", "score": 0.5},
]
SWEEP = """
[study]
name = "t"
sampler = "grid"
trials = 2
lines_alphas = [0.5]

[train]
model = "builtin:tiny-clip"
train = "train.jsonl"
max_steps = 2
batch_size = 4
save_every = 0

[search.lr]
type = "categorical"
choices = [0.01, 0.02]

[[panel]]
name = "bind"
task = "triplets"
data = "train.jsonl"
score = "triplet_accuracy"

[[panel]]
name = "sts"
task = "sts"
data = "sts.jsonl"
score = "spearman"

[objectives]
binding = ["bind"]
general = "sts"
"""
TPE = (
    SWEEP.replace('sampler = "grid"', 'sampler = "tpe"\ntrials = 3', 1)
    .replace("trials = 2\n", "", 1)
    .replace(
        '[search.lr]\ntype = "categorical"\nchoices = [0.01, 0.02]',
        '[search.margin]\ntype = "float"\nlow = 0.0\nhigh = 0.2',
    )
)
INPUTS = ("sweep.toml", "sweep_tpe.toml", "train.jsonl", "sts.jsonl")

# each edit: (fixture name, old text, new text) in sweep.toml or sweep_tpe.toml
EDITS = {
    "trials1e12": ("sweep_tpe.toml", "trials = 3", "trials = 1000000000000"),
    "epochs1e12": ("sweep.toml", "max_steps = 2", "max_steps = 2\nepochs = 1000000000000"),
    "onepoint": ("sweep.toml", "choices = [0.01, 0.02]", "choices = [0.01]"),
    "general_bind": ("sweep.toml", 'general = "sts"', 'general = "bind"'),
    "nodata": ("sweep.toml", 'data = "sts.jsonl"', 'data = "nope.jsonl"'),
    "zz": ("sweep.toml", 'task = "sts"', 'task = "sts"\npairing = "zz"'),
}

ROWS: list[Case] = [
    C(
        "t4_sw09",
        "sweep sweep_tpe.toml --out sw -q",
        "sweep trials1e12",
        2,
        "study.trials 1000000000000: give a whole number from 0 to 10000",
    ),
    C(
        "t4_sw11",
        "sweep sweep.toml --out sw -q --seed -1",
        "sweep",
        2,
        "--seed -1: give a whole number from 0 to 4294967295",
    ),
    C(
        "t4_sw12",
        "sweep sweep.toml --out sw -q --seed 1000000000000",
        "sweep",
        2,
        "--seed 1000000000000: give a whole number from 0 to 4294967295",
    ),
    # a per-worker --seed would shuffle the grid differently in each worker (points run twice)
    C(
        "t4_sw11_grid",
        "sweep sweep.toml --out sw -q --seed 1",
        "sweep",
        2,
        "--seed 1: the grid sampler walks the grid in study.seed's order",
    ),
    C(
        "t4_sw18",  # refused before any trial (train's bound), rather than trained for 2 steps
        "sweep sweep.toml --out sw -q",
        "sweep epochs1e12 onepoint",
        2,
        "--epochs 1000000000000: give a finite number in (0, 1000]",
        absent=("sw/trials",),
    ),
    C(
        "t4_sw35",
        "sweep sweep.toml --out sw -q",
        "sweep started general_bind",
        2,
        "study 't' in the storage was run with another [objectives]",
    ),
    C(
        "t4_sw22",
        "sweep sweep.toml --out sw -q",
        "sweep nodata",
        2,
        "panel[1] (sts).data: --data nope.jsonl: not found",
        unchanged=INPUTS[:1] + INPUTS[2:],
    ),
    C(
        "t4_sw38",
        "sweep sweep.toml --out sw -q",
        "sweep zz",
        2,
        "panel[1] (sts).pairing 'zz': task sts runs tt",
        unchanged=INPUTS[:1] + INPUTS[2:],
    ),
]


def _jsonl(rows: list[dict[str, object]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in rows)


def _build(cell: Cell, name: str) -> None:
    d = cell.dir
    if name == "sweep":
        for file in INPUTS:
            shutil.copy(cell.base / file, d / file)
    elif name == "started":  # the study exists and its base panel is scored (no trial)
        from bindkit.sweep.study import run_sweep

        run_sweep(d / "sweep.toml", d / "sw", n_trials=0, progress=False)
        settle()
    elif name in EDITS:
        file, old, new = EDITS[name]
        text = (d / file).read_text(encoding="utf-8")
        assert old in text, (name, old)
        (d / file).write_text(text.replace(old, new, 1), encoding="utf-8")
    else:
        raise KeyError(f"unknown fixture {name!r}")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("matrix-sweep-base")
    (root / "train.jsonl").write_text(_jsonl(TRIPLETS))
    (root / "sts.jsonl").write_text(_jsonl(STS))
    (root / "sweep.toml").write_text(SWEEP)
    (root / "sweep_tpe.toml").write_text(TPE)
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
    assert len(ids) == len(set(ids)) and all(i.startswith("t4_sw") for i in ids)
