"""Issue 18's recipe search as recipes: ``benchmarks/recipe/trials.toml`` parses into recipes
(the old hand-written trials, soups as a recipe's ``[soup]``), the dev-sts-slack α rule
(``bindkit.recipes.select``), and the thin runner ``benchmarks/recipe/search.py`` end to end on
builtin:tiny-clip: rows written, a rerun reuses, a changed fixed value retrains (slow)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from types import ModuleType

import pytest

from bindkit.errors import BindkitError
from bindkit.recipes.select import dev_sts_slack_alpha
from script_module import load_script

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "recipe"


def search() -> ModuleType:
    return load_script("benchmarks/recipe/search.py", "recipe_search")


def test_dev_sts_slack_keeps_the_largest_alpha_within_slack_else_the_best_sts() -> None:
    sts = {1.0: 80.0, 0.6: 81.5, 0.3: 81.9, 0.0: 82.0}
    assert dev_sts_slack_alpha(sts, 82.0, 0.6) == 0.6
    assert dev_sts_slack_alpha(sts, 82.0, 0.4) == 0.3
    assert dev_sts_slack_alpha(sts, 82.0, 2.0) == 1.0  # at the floor exactly: kept
    assert dev_sts_slack_alpha({1.0: 70.0, 0.3: 75.0, 0.0: 74.0}, 82.0, 0.6) == 0.3


def test_the_shipped_trials_are_recipes_with_the_old_searchs_settings() -> None:
    study = search().load_study(BENCH / "trials.toml")
    trials = study["trials"]
    assert len(trials) == 61
    one = trials["fullpararelneg-ctxgen-w1-lr3"]["recipe"]
    assert (one.data.mix, one.train["lr"], one.train["max_steps"]) == ("fullpararelneg", 3e-3, 100)
    assert [(r.seed, r.preservation) for r in one.runs] == [(0, "ctxgen")]
    assert one.shipped == "run" and trials["fullpara-ctx-w1-t1"]["threads"] == 1
    rel = trials["fullpara-ctx-w3-rel100"]["recipe"]
    assert (rel.train["preserve_weight"], rel.train["preserve_relational"]) == (3.0, 100.0)
    # an interpolation of two trials: one recipe, its two runs averaged with the old weights
    interp = trials["interpL-plain0.2"]["recipe"]
    assert interp.soup is not None and interp.shipped == interp.soup.name
    assert interp.soup.weights == (0.2, 0.8)
    assert [r.preservation for r in interp.runs] == ["none", "ctxgen"]
    # the soup of two seed soups: the mean of its four runs
    four = trials["soupLEOR-ctxgen-ctxgenD-s01"]["recipe"]
    assert four.soup is not None and len(four.soup.runs) == 4 and four.soup.weights is None
    assert "full-ctx-w1" not in trials  # its data set is no synth.mixes mix: a comment only
    assert search().columns(study)[4:9] == [
        "dev_sc_swap_att",
        "dev_sc_replace_att",
        "dev_sc_replace_rel",
        "dev_binding",
        "dev_sick_train",
    ]


def test_a_bad_trial_key_is_one_line_naming_the_trial(tmp_path: Path) -> None:
    text = (BENCH / "trials.toml").read_text(encoding="utf-8")
    path = tmp_path / "trials.toml"
    path.write_text(text + '\n[trials.bad]\n"data.mx" = "fullpara"\n', encoding="utf-8")
    with pytest.raises(BindkitError, match=r"trials.bad: unknown key data.mx \(did you mean"):
        search().load_study(path)


def test_a_select_rule_without_its_sts_entry_is_refused(tmp_path: Path) -> None:
    text = (BENCH / "trials.toml").read_text(encoding="utf-8")
    path = tmp_path / "trials.toml"
    path.write_text(text.replace('sts = "dev_sick_train"', 'sts = "dev_sick"'), encoding="utf-8")
    with pytest.raises(BindkitError, match=r'\[select\]: give rule "dev-sts-slack"'):
        search().load_study(path)


def test_preserve_relational_is_checked_against_the_runs_that_preserve() -> None:
    from bindkit.recipes.recipe import packaged_recipe

    recipe = packaged_recipe("binding-v1")
    assert recipe.replace(**{"train.preserve_relational": 30.0}).train["preserve_relational"] == 30
    plain = [{"name": "plain", "seed": 0, "preservation": "none"}]
    changes = {"train.preserve_relational": 30.0, "runs": plain, "soup": None, "select": None}
    with pytest.raises(BindkitError, match=r"\[train\] \(a run without preservation\): --pres"):
        recipe.replace(**changes)


STUDY = """
[recipe]
name = "tiny"
model = "builtin:tiny-clip"

[recipe.data]
examples = 100
max_triplets = 8
val_triplets = 8
test_triplets = 8

[recipe.train]
batch_size = 4
max_steps = 2
margin = {margin}
save_every = 0

[[recipe.runs]]
name = "run"

[[recipe.panel]]
name = "heldout"
task = "triplets"
data = "{{test}}"
score = "triplet_accuracy"

[select]
rule = "dev-sts-slack"
alphas = [1.0, 0.0]
sts = "dev_sts"
slack = 0.006
binding = ["dev_triplets"]

[[dev]]
name = "dev_triplets"
task = "triplets"
data = "{{work}}/dev/triplets.jsonl"
score = "triplet_accuracy"

[[dev]]
name = "dev_sts"
task = "sts"
data = "{{work}}/dev/sts.jsonl"
score = "spearman"

[[heldout]]
name = "heldout_triplets"
task = "triplets"
data = "{{test}}"
score = "triplet_accuracy"

[[heldout]]
name = "sick_trial"
task = "sts"
data = "{{shared}}/sts.jsonl"
score = "spearman"

[trials.a]
"train.lr" = 0.01
"""
STS = [
    {"sentence1": "a red cube", "sentence2": "a red cube", "score": 5.0},
    {"sentence1": "a red cube", "sentence2": "a blue cube", "score": 3.0},
    {"sentence1": "a striped star", "sentence2": "a golden ring", "score": 0.5},
]
TRIPLETS = [
    {"query": "a red cube", "positive": "a cube that is red", "negative": "a blue cube"},
    {"query": "a blue ring", "positive": "a ring that is blue", "negative": "a red ring"},
]


def _jsonl(path: Path, rows: list[dict[str, object]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")


@pytest.mark.slow  # ~1 min: 100 template examples, 2-step runs, tiny panels
def test_the_runner_writes_rows_reuses_on_rerun_and_retrains_a_changed_value(
    tmp_path: Path,
) -> None:
    runner = search()
    work, shared = tmp_path / "work", tmp_path / "shared"
    _jsonl(work / "dev" / "triplets.jsonl", TRIPLETS)  # type: ignore[arg-type]
    _jsonl(work / "dev" / "sts.jsonl", STS)  # type: ignore[arg-type]
    _jsonl(shared / "sts.jsonl", STS)  # type: ignore[arg-type]
    study = tmp_path / "trials.toml"
    study.write_text(STUDY.format(margin=0.05), encoding="utf-8")
    argv = ["run", "all", "--work", str(work), "--shared", str(shared), "--study", str(study)]
    runner.main(argv)
    with (work / "results.csv").open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert (rows[0]["trial"], rows[0]["alpha"], rows[0]["chosen"]) == ("base", "", "yes")
    assert [r["alpha"] for r in rows[1:]] == ["1.0", "0.0"] and rows[1]["seed"] == "0"
    chosen = [r for r in rows[1:] if r["chosen"] == "yes"]
    assert len(chosen) == 1 and chosen[0]["heldout_triplets"] and chosen[0]["sick_trial"]
    assert all(r["dev_binding"] == r["dev_triplets"] for r in rows)
    assert "| trial | seed | alpha |" in (work / "results.md").read_text(encoding="utf-8")
    train = work / "trials" / "a" / "runs" / "run" / "train.json"
    stamp = train.stat().st_mtime_ns
    runner.main(argv)  # the same study: the run is reused, the rows are the same
    assert train.stat().st_mtime_ns == stamp
    with (work / "results.csv").open(encoding="utf-8") as f:
        assert list(csv.DictReader(f)) == rows
    study.write_text(STUDY.format(margin=0.1), encoding="utf-8")  # a fixed value changed
    runner.main(argv)
    assert train.stat().st_mtime_ns != stamp
    record = json.loads((train.parent.parent.parent / "recipe.json").read_text())
    assert record["identity"]["recipe"]["train"]["margin"] == 0.1
