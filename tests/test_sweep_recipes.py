"""``bindkit sweep`` over recipes: a ``[recipe]`` table, recipe keys searched, a trial =
``recipe.replace(**set, **params)`` whose folder is the digest of the whole trial recipe (fixed
values included, so another study's fixed values never reuse its runs); a 1-trial study on
builtin:tiny-clip end to end (slow)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bindkit.errors import BindkitError
from bindkit.sweep.config import load_config

STS = [
    {"sentence1": "a red cube", "sentence2": "a red cube", "score": 5.0},
    {"sentence1": "a red cube", "sentence2": "a blue cube", "score": 3.0},
    {"sentence1": "a striped star", "sentence2": "a golden ring", "score": 0.5},
]
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
seed = 0

[lines]
alpha = 1.0

[[panel]]
name = "heldout"
task = "triplets"
data = "{test}"
score = "triplet_accuracy"
"""


def write_sweep(tmp: Path, fixed: str = '"train.max_steps" = 2', search: str = "") -> Path:
    (tmp / "recipe.toml").write_text(RECIPE)
    (tmp / "sts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in STS))
    search = search or '[search."train.lr"]\ntype = "categorical"\nchoices = [0.01]\n'
    sampler = "grid" if "categorical" in search else "tpe"
    (tmp / "sweep.toml").write_text(
        f"""
[study]
name = "r"
sampler = "{sampler}"
trials = 1

[recipe]
file = "recipe.toml"

[recipe.set]
{fixed}

{search}
[[panel]]
name = "sts"
task = "sts"
data = "sts.jsonl"
score = "spearman"

[objectives]
general = "sts"
"""
    )
    return tmp / "sweep.toml"


def test_a_recipe_sweep_parses_and_builds_each_trial_s_recipe(tmp_path: Path) -> None:
    config = load_config(write_sweep(tmp_path))
    assert config.recipe is not None and config.recipe.name == "tiny"
    assert config.fixed == {"train.max_steps": 2}
    recipe = config.trial_recipe({"train.lr": 0.01})
    assert recipe.train["lr"] == 0.01 and recipe.train["max_steps"] == 2


def test_other_fixed_values_give_another_trial_folder(tmp_path: Path) -> None:
    """The same searched point under another fixed value is another trial: its folder (the
    digest of the whole trial recipe) differs, so it is never reused."""
    from bindkit.sweep.study import recipe_trial_key, study_definition

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = load_config(write_sweep(tmp_path / "a"))
    second = load_config(write_sweep(tmp_path / "b", '"train.max_steps" = 3'))
    point = {"train.lr": 0.01}
    keys = [recipe_trial_key(c.trial_recipe(point)) for c in (first, second)]
    assert keys[0] != keys[1]
    assert keys[0] == recipe_trial_key(first.trial_recipe(point))  # and stable
    assert recipe_trial_key(first.trial_recipe({"train.lr": 0.02})) != keys[0]
    assert study_definition(first)["recipe"] != study_definition(second)["recipe"]


@pytest.mark.parametrize(
    ("fixed", "search", "message"),
    [
        ('"data.exampels" = 300', "", "[recipe.set]: unknown key data.exampels"),
        (
            "",
            '[search."data.examples"]\ntype = "float"\nlow = 100\nhigh = 200\n',
            "[recipe]/[search]: data.examples 100.0: give a whole number",
        ),
        (
            "",
            '[search."lines.alpha"]\ntype = "float"\nlow = 0.5\nhigh = 2\n',
            "[recipe]/[search]: lines.alpha 2: must be from 0 to 1",
        ),
        (
            '"train.lr" = 0.01',
            '[search."train.lr"]\ntype = "categorical"\nchoices = [0.01]\n',
            "search.train.lr: also fixed in [recipe.set]",
        ),
    ],
)
def test_bad_recipe_sweeps_are_one_line(
    tmp_path: Path, fixed: str, search: str, message: str
) -> None:
    with pytest.raises(BindkitError) as caught:
        load_config(write_sweep(tmp_path, fixed, search))
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_recipe_and_train_together_are_refused(tmp_path: Path) -> None:
    path = write_sweep(tmp_path)
    path.write_text(path.read_text() + '\n[train]\nmodel = "st:default"\n')
    with pytest.raises(BindkitError, match=r"\[recipe\] and \[train\]: give one"):
        load_config(path)


@pytest.mark.slow  # ~1 min: 100 template examples, one 2-step run, two panel scorings
def test_a_recipe_study_runs_end_to_end_and_reuses_on_rerun(tmp_path: Path) -> None:
    pytest.importorskip("optuna")
    from bindkit.sweep.study import run_sweep

    path = write_sweep(tmp_path)
    summary = run_sweep(path, tmp_path / "sw", progress=False)
    assert summary["states"] == {"COMPLETE": 1}
    trials = list((tmp_path / "sw" / "trials").iterdir())
    assert len(trials) == 1 and trials[0].name.startswith("r-")
    record = json.loads((trials[0] / "recipe.json").read_text())
    assert record["status"] == "done" and record["identity"]["recipe"]["train"]["lr"] == 0.01
    train = trials[0] / "runs" / "a" / "train.json"
    stamp = train.stat().st_mtime_ns
    run_sweep(path, tmp_path / "sw", n_trials=1, progress=False)  # the grid is done
    assert train.stat().st_mtime_ns == stamp


def test_the_shipped_recipe_sweep_example_parses() -> None:
    config = load_config(Path(__file__).resolve().parents[1] / "examples" / "sweep-recipe.toml")
    assert config.recipe is not None and config.recipe.name == "binding-v1"
    trial = config.trial_recipe({"data.mix": "fullpararelnegLEORB", "lines.alpha": 0.8})
    assert (trial.data.examples, trial.data.mix, trial.lines_alpha) == (
        4000,
        "fullpararelnegLEORB",
        0.8,
    )
