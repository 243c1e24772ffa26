"""``bindkit.recipes``: the Recipe (checks, TOML round trip, replace), the packaged binding-v1,
the learning-rate rule, the α rule and the recipe-level identity that refuses a changed rerun."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from bindkit.errors import BindkitError
from bindkit.recipes.recipe import (
    Recipe,
    dump_toml,
    packaged_names,
    packaged_recipe,
    recipe_from_dict,
)


def _binding() -> Recipe:
    return packaged_recipe("binding-v1")


def test_binding_v1_holds_the_demo_s_recipe() -> None:
    """The shipped recipe, value by value (issue 18's search; the demo's former constants)."""
    recipe = _binding()
    assert recipe.model == "st:default"
    assert (recipe.data.examples, recipe.data.seed, recipe.data.mix) == (
        24000,
        0,
        "fullpararelnegLEOR",
    )
    assert (recipe.data.val_triplets, recipe.data.test_triplets) == (256, 1024)
    assert recipe.train == {
        "batch_size": 32,
        "margin": 0.05,
        "max_steps": 300,
        "model_dropout": False,
        "preserve_weight": 1.0,
        "preserve_batch": 32,
        "save_every": 25,
    }
    assert [(r.name, r.seed, r.preservation) for r in recipe.runs] == [
        ("preserve", 0, "ctxgen"),
        ("preserve-s1", 1, "ctxgenD"),
    ]
    assert recipe.soup is not None and recipe.soup.runs == ("preserve", "preserve-s1")
    assert (recipe.lines_rule, recipe.lines_alpha, recipe.shipped) == (
        "fixed",
        1.0,
        "preserve-soup",
    )
    assert "lr" not in recipe.train  # the size rule gives MiniLM 2e-3 (test_the_lr_rule…)


def test_toml_round_trip_and_replace() -> None:
    recipe = _binding()
    assert recipe_from_dict(tomllib.loads(recipe.to_toml())) == recipe
    smaller = recipe.replace(**{"data.examples": 300, "train.lr": 1e-3, "lines.alpha": 0.5})
    assert (smaller.data.examples, smaller.train["lr"], smaller.lines_alpha) == (300, 1e-3, 0.5)
    assert smaller.replace(**{"train.lr": None}).train == recipe.train  # None drops an override
    assert recipe_from_dict(tomllib.loads(smaller.to_toml())) == smaller
    document = {"a": 1.5, "b": 'x "y"', "t": {"k": [1, 2]}, "r": [{"n": True}, {"n": False}]}
    assert tomllib.loads(dump_toml(document)) == document


def test_a_file_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(_binding().to_toml())
    assert Recipe.from_toml(path) == _binding()


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"data.exampels": 5}, "unknown key data.exampels (did you mean data.examples?)"),
        ({"data.examples": 5}, "data.examples 5: give a whole number from 100 to 1,000,000"),
        ({"data.mix": "fullpararelnegLEORX"}, "(did you mean fullpararelnegLEOR?)"),
        ({"data.saber_per_n": 3}, "data.saber_per_n 3: must be even"),
        ({"lines.alpha": float("nan")}, "lines.alpha nan: must be from 0 to 1"),
        ({"lines.alpha": float("inf")}, "lines.alpha inf: must be from 0 to 1"),
        ({"lines.rule": "val-tolerance"}, 'lines.alpha: only with rule = "fixed"'),
        ({"train.lr": float("nan")}, "[train]: --lr nan: give a finite number"),
        ({"train.lr": "fast"}, "train.lr 'fast': lr takes a float"),
        ({"train.seed": 3}, "train.seed: the recipe sets seed itself; remove it"),
        ({"train.lora_rr": 3}, "not a TrainConfig field (did you mean lora_r?)"),
        ({"soup.runs": ["preserve", "other"]}, "soup.runs: 'other' is not a run"),
        ({"soup.weights": [1.0]}, "soup.weights [1.0]: give one finite positive weight per run"),
        ({"select.ship": "nobody"}, "select.ship 'nobody': not a run or the soup"),
        ({"model": "st:x+bad"}, "model: model spec 'st:x+bad': option 'bad' must look like"),
        ({"model": "st:default+adapter=a"}, "model st:default+adapter=a: already carries an"),
        ({"panel": []}, "[[panel]]: give at least one panel entry"),
    ],
)
def test_every_bad_value_is_one_line_naming_its_key(changes: dict, message: str) -> None:
    with pytest.raises(BindkitError) as caught:
        _binding().replace(**changes)
    assert message in str(caught.value) and "\n" not in str(caught.value)


def test_each_run_s_preservation_set_is_checked() -> None:
    runs = [{"name": "a", "seed": 0, "preservation": "ctxgenX"}]
    with pytest.raises(BindkitError, match=r"runs.a.preservation 'ctxgenX': unknown \(did you"):
        _binding().replace(runs=runs, soup=None, select={})


def test_packaged_recipes_by_name() -> None:
    assert {"binding-v1", "binding-v2", "seed000-1b"} <= set(packaged_names())
    with pytest.raises(BindkitError, match=r"--recipe bindng-v1: .*did you mean binding-v1\?"):
        packaged_recipe("bindng-v1")


def test_a_bad_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match="file not found"):
        Recipe.from_toml(tmp_path / "missing.toml")
    (tmp_path / "bad.toml").write_text("name = [")
    with pytest.raises(BindkitError, match="not a readable TOML file"):
        Recipe.from_toml(tmp_path / "bad.toml")
    (tmp_path / "k.toml").write_text(_binding().to_toml().replace("[soup]", "[soop]"))
    with pytest.raises(BindkitError, match=r"k.toml: unknown key soop \(did you mean soup\?\)"):
        Recipe.from_toml(tmp_path / "k.toml")


def test_the_lr_rule_scales_with_the_model() -> None:
    from bindkit.recipes.scale import LARGE, scaled_lr

    assert scaled_lr(22_713_216) == 2e-3  # all-MiniLM-L6-v2: issue 18's rate
    assert scaled_lr(2_127_532_032) == 5e-5  # a 2B MLLM embedder: the paper's
    assert scaled_lr(LARGE - 1) == 2e-3 and scaled_lr(LARGE) == 5e-5


def test_the_val_tolerance_rule_picks_the_smallest_alpha_within_tolerance() -> None:
    from bindkit.recipes.select import choose_alpha

    points = {0.0: 0.60, 0.3: 0.78, 0.6: 0.795, 1.0: 0.80}
    assert choose_alpha(points, 2.0) == 0.3
    assert choose_alpha(points, 0.1) == 1.0
    assert choose_alpha(points, 100.0) == 0.0


def test_a_changed_recipe_is_named_by_its_key() -> None:
    from bindkit.recipes.runner import recipe_change, recipe_identity

    def identity_change(old: dict[str, Any], new: dict[str, Any]) -> str | None:
        return recipe_change(_binding(), old, new)

    before = recipe_identity(_binding(), 2)
    assert identity_change(before, recipe_identity(_binding(), 2)) is None
    changed = recipe_identity(_binding().replace(**{"train.margin": 0.1}), 2)
    assert identity_change(before, changed) == "train.margin 0.05 then, 0.1 now"
    runs = [{"name": "preserve", "seed": 0, "preservation": "ctxgen"}]
    single = recipe_identity(_binding().replace(runs=runs, soup=None, select={}), 2)
    assert identity_change(before, single).startswith("runs[1].name 'preserve-s1' then, None")
    assert identity_change(before, recipe_identity(_binding(), 4)) == "threads 2 then, 4 now"


def test_a_changed_panel_file_is_named(tmp_path: Path) -> None:
    from bindkit.recipes.runner import recipe_change, recipe_identity

    sts = tmp_path / "sts.tsv"
    sts.write_text("sentence_A\tsentence_B\trelatedness_score\na\tb\t1\n")
    entry = {"name": "sts", "task": "sts", "data": str(sts), "score": "spearman"}
    recipe = _binding().replace(panel=[entry])
    before = recipe_identity(recipe, None)
    sts.write_text("sentence_A\tsentence_B\trelatedness_score\na\tb\t2\n")
    assert recipe_change(recipe, before, recipe_identity(recipe, None)) == (
        "panel.sts.data: its content changed"
    )


def test_a_training_row_that_fails_synth_validate_or_leaks_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recipe's train-<mix>.jsonl is a train file of its synth run: a row that `bindkit
    synth validate` rejects, or a text that is also a val text, is refused (one line) and
    nothing is written."""
    import json

    import bindkit.synth.mixes as mixes
    from bindkit.recipes.data import build_data

    recipe = _binding().replace(**{"data.examples": 100})
    made = mixes.training_triplets
    extra: list[dict[str, str]] = []
    monkeypatch.setattr(
        mixes, "training_triplets", lambda ex, seed, mix: [*extra, *made(ex, seed, mix)]
    )
    build_data(recipe, tmp_path / "ok", progress=False)  # the mix alone: accepted
    extra.append({"query": "a red cube", "positive": "A red cube.", "negative": "A blue kite."})
    train = tmp_path / "data" / "train-fullpararelnegLEOR.jsonl"
    with pytest.raises(BindkitError, match=r"train-fullpararelnegLEOR\.jsonl:1: \[") as caught:
        build_data(recipe, tmp_path / "data", progress=False)
    assert "\n" not in str(caught.value) and not train.exists()
    extra[0] = json.loads((tmp_path / "data" / "val.jsonl").read_text().splitlines()[0])
    with pytest.raises(BindkitError, match=r"\[split_leak\]"):
        build_data(recipe, tmp_path / "data", progress=False)
    assert not train.exists()


def test_out_of_gpu_memory_says_what_to_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.recipes import runner
    from bindkit.recipes.data import RecipeData
    from bindkit.train.memory import TrainingOutOfMemoryError

    def out_of_memory(config: Any, reuse: bool) -> None:
        raise TrainingOutOfMemoryError(config.out, config)

    monkeypatch.setattr("bindkit.train.trainer.train_triplets", out_of_memory)
    files = {name: tmp_path / f"{name}.jsonl" for name in ("train", "val", "test", "p")}
    for path in files.values():
        path.write_text("")
    data = RecipeData(
        tmp_path, files["train"], files["val"], files["test"], {"ctxgen": files["p"]}, {}, {}
    )
    recipe_runner = runner._Runner(_binding(), tmp_path / "o", False, False, None)
    with pytest.raises(BindkitError) as caught:
        recipe_runner.train(_binding().runs[0], data, 2e-3)
    assert str(caught.value) == (
        "run preserve: out of memory at batch size 32; lower the peak with "
        "train.gradient_checkpointing = true, or train.chunk_size = 16 (GradCache), or "
        "train.batch_size = 16 with train.grad_accum = 2; `bindkit memory` estimates a "
        "setting's peak before a run"
    )


@pytest.mark.parametrize(("alpha", "stated"), [(1.0, "LiNeS off (α = 1)"), (0.5, "LiNeS α 0.5")])
def test_the_report_states_lines_as_it_is(alpha: float, stated: str) -> None:
    """α 1 scales every layer by 1: the report says LiNeS is off, never "applied"."""
    from bindkit.recipes.runner import render_report

    recipe = packaged_recipe("binding-v1")
    record = {
        "table": {"base": {"saber_t2t_mcq": 0.3, "heldout_triplets": 0.5}},
        "changes": {},
        "learning_rate": {"lr": 2e-3, "rule": "size rule"},
        "data": {"counts": {"train": 10}, "sentences": {}},
        "runs": {},
        "lines_alpha": {"preserve-soup": alpha},
        "seconds": 60.0,
    }
    text = render_report(recipe, record)
    assert f"preserve-soup {stated}" in text and f"`adapter/` ({stated}" in text
    assert "applied" not in text
    assert ("the same bytes as the raw update" in text) == (alpha == 1.0)


def test_train_is_checked_by_train_config_itself_without_its_files() -> None:
    """``[train]`` goes through ``TrainConfig.check_values``: the dataclass's own checks on the
    fields given, the modes judged with the files the runs will give (no stand-in train file)."""
    from bindkit.train.config import TrainConfig

    TrainConfig.check_values({"preserve_relational": 0.5}, given=("preserve",))
    with pytest.raises(BindkitError, match=r"^--preserve-relational 0.5: has no effect without"):
        TrainConfig.check_values({"preserve_relational": 0.5})
    with pytest.raises(BindkitError, match=r"^--margin 0.1: has no effect without --loss hinge"):
        TrainConfig.check_values({"loss": "infonce", "margin": 0.1})
    with pytest.raises(BindkitError, match=r"^lr 'x': lr takes a float$"):
        TrainConfig.check_values({"lr": "x"})
    preserved = _binding().replace(**{"train.preserve_relational": 0.5})  # every run preserves
    assert preserved.train["preserve_relational"] == 0.5
    runs = [{"name": "plain", "seed": 0, "preservation": "none"}]
    with pytest.raises(BindkitError, match=r"^\[train\] \(a run without preservation\): --pre"):
        preserved.replace(runs=runs, soup=None, select={})
