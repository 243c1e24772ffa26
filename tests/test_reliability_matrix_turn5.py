# ruff: noqa: E501 - the matrix reads best as a table, one row per line
"""The turn-5 reliability review's remaining non-clean cells outside ``bindkit mteb``
(``../shared/reviews/turn5/reliability.md``: F74, V29, X11, X12, X14, G45, S42, S43, F88), one
row each through the shared engine (``tests/_matrix.py``): every one is one line and rc 2, and
leaves the cell's files as they were (no half folder, nothing mixed into another output).

The ``bindkit mteb`` cells (M15, M19, M20, M23) are in ``test_reliability_matrix_mteb.py``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from _matrix import C, Case, Cell, check_outcome, run_matrix_case, settle
from bindkit.cli import main

RECIPE = """
name = "tiny"
model = "builtin:tiny-clip"

[data]
examples = 100
max_triplets = 8
val_triplets = 8
test_triplets = 8

[train]
batch_size = 4
max_steps = 2
save_every = 0

[[runs]]
name = "a"
preservation = "none"

[[panel]]
name = "heldout"
task = "triplets"
data = "{test}"
score = "triplet_accuracy"
"""

EVAL = "eval -q --no-report --data s --out r2 --model"
EXPORT = "export-results r --format mteb -q"
SYNTH = "synth generate -q --n 100 --out new"

# fmt: off
ROWS: list[Case] = [
    C("F74", f"{EVAL} ./nofolder", "saber", 2, "model './nofolder': no such folder; check the path", absent=("r2",)),
    C("F74b", f"{EVAL} ./no/folder", "saber", 2, "model './no/folder': no such folder", absent=("r2",)),
    C("V29", f"{EVAL} builtin:tiny-vlm+weights=tvbad", "saber tvbad", 2, "tvbad/model.safetensors: unreadable safetensors file (Error while deserializing header: invalid header length); retrain or reinstall it", absent=("r2",)),
    C("V29b", f"{EVAL} builtin:tiny-vlm+weights=tvcut", "saber tvcut", 2, "tvcut/model.safetensors: unreadable safetensors file", absent=("r2",)),
    C("X11", f"{EXPORT} --out m --tasks ''", "results", 2, "--tasks '': empty; give a comma list of saber, triplets", absent=("m",)),
    C("X12", f"{EXPORT} --out m --tasks saber,nope", "results", 2, "--tasks nope: not an exportable task (exportable: saber, triplets)", absent=("m",)),
    C("X12b", f"{EXPORT} --out m --tasks tripelts", "results", 2, "--tasks tripelts: not an exportable task (did you mean triplets?", absent=("m",)),
    C("X14", f"{EXPORT} --out y", "results synth", 2, "--out y: holds a bindkit synth run (manifest.json); writing here would mix two outputs"),
    C("G45", "fetch pods --no-images --to d -q", "", 2, "fetch pods --no-images: every part of its plan is images (nothing else to fetch); drop --no-images: `bindkit fetch pods --to d`", absent=("d",)),
    C("S42", f"{SYNTH} --mixed-lengths --no-splits", "", 2, "--mixed-lengths: writes (or drops) a split variant, and --no-splits writes no splits", absent=("new",)),
    C("S42b", f"{SYNTH} --exclude-vocab builtin --no-splits", "", 2, "--exclude-vocab: writes (or drops) a split variant", absent=("new",)),
    C("S43", f"{SYNTH} --prompts nope", "", 2, "--prompts nope: only the openai backend reads it (this run: --backend template)", absent=("new",)),
    C("S43b", f"{SYNTH} --concurrency 3", "", 2, "--concurrency 3: only the openai backend reads it", absent=("new",)),
    C("F88", "finetune r.toml --out y -q --threads 1", "recipe synth", 2, "--out y: holds a bindkit synth run (manifest.json)"),
    C("F88b", "finetune r.toml --out s -q --threads 1", "recipe saber", 2, "--out s: holds a SABER set (saber.jsonl)"),
]
# fmt: on


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: a SABER set, a synth run, bow's SABER result."""
    from bindkit.saber.build import generate_saber

    root = tmp_path_factory.mktemp("matrix-turn5")
    generate_saber(root / "saber", per_n=2, n_max=3)
    synth = ["synth", "generate", "-q", "--n", "60", "--no-splits", "--out", str(root / "synth")]
    assert main(synth) == 0
    results = ["eval", "-q", "--no-report", "--no-cache", "--model", "bow"]
    assert main([*results, "--data", str(root / "saber"), "--out", str(root / "results")]) == 0
    settle()
    return root


def _build(cell: Cell, name: str) -> None:
    d = cell.dir
    if name == "saber":
        shutil.copytree(cell.base / "saber", d / "s")
    elif name == "synth":
        shutil.copytree(cell.base / "synth", d / "y")
    elif name == "results":
        shutil.copytree(cell.base / "results", d / "r")
    elif name == "recipe":
        (d / "r.toml").write_text(RECIPE, encoding="utf-8")
    elif name in ("tvbad", "tvcut"):  # the packaged tiny-vlm, its weights cut short
        from bindkit.embed.backends.builtin import builtin_dir

        shutil.copytree(builtin_dir("tiny-vlm"), d / name)
        weights = d / name / "model.safetensors"
        size = 1000 if name == "tvbad" else weights.stat().st_size - 100
        with weights.open("r+b") as handle:
            handle.truncate(size)
    else:  # pragma: no cover - a typo in a row
        raise KeyError(name)


@pytest.mark.parametrize("case", ROWS, ids=[case.id for case in ROWS])
def test_matrix_row(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    check_outcome(case, run_matrix_case(case, cell, monkeypatch, _build, ("s", "y", "r")))


def test_a_commands_own_folder_and_a_plain_one_pass(tmp_path: Path) -> None:
    """The guard refuses only another command's output: its own, a new, an empty or an
    unrelated folder pass."""
    from bindkit._outputs import check_own_output

    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "recipe.json").write_text("{}")
    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "notes.txt").write_text("x")
    for folder in ("mine", "plain", "new"):
        check_own_output(tmp_path / folder, "finetune")
