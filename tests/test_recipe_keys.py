"""Every recipe key with its help (the docs' key page, ``bindkit finetune --show``), each resolved
value's source, and the warning when a shipped adapter scores at or below chance."""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

import pytest

from bindkit.cli import main
from bindkit.recipes import recipe as recipe_module
from bindkit.recipes.chance import at_chance, chance_warning
from bindkit.recipes.keys import REQUIRED, format_resolved, recipe_keys, resolve
from bindkit.recipes.panel import PANEL_KEYS, PanelEntry
from bindkit.recipes.recipe import OWN_FIELDS, packaged_path, packaged_recipe
from bindkit.train.config import TrainConfig


def test_the_keys_are_the_keys_the_checker_accepts() -> None:
    """The key list is read from the dataclasses: it equals what recipe_from_dict accepts."""
    keys = {k.key for k in recipe_keys()}
    accepted = {
        *("name", "description", "model"),
        *(f"data.{k}" for k in recipe_module._DATA),
        *(f"runs[].{k}" for k in recipe_module._RUN),
        *(f"soup.{k}" for k in recipe_module._SOUP),
        *(f"lines.{k}" for k in recipe_module._LINES),
        *(f"select.{k}" for k in recipe_module._SELECT),
        *(f"panel[].{k}" for k in PANEL_KEYS),
        *(f"train.{f.name}" for f in dataclasses.fields(TrainConfig) if f.name not in OWN_FIELDS),
    }
    assert keys == accepted
    assert all(k.help for k in recipe_keys()), [k.key for k in recipe_keys() if not k.help]
    by_key = {k.key: k for k in recipe_keys()}
    assert by_key["data.examples"].default == 24000 and by_key["data.examples"].type == "int"
    assert by_key["model"].default == REQUIRED
    assert by_key["train.margin"].default == 0.05
    assert "size rule" in by_key["train.lr"].help


def test_each_value_says_where_it_came_from() -> None:
    recipe = packaged_recipe("binding-v1")
    changes = {"data.examples": 400, "train.lr": 1e-3, "model": "bow"}
    written = tomllib.loads(packaged_path("binding-v1").read_text())
    rows = {r.key: r for r in resolve(recipe.replace(**changes), written, changes)}
    assert (rows["data.examples"].value, rows["data.examples"].source) == (400, "--set")
    assert (rows["train.lr"].value, rows["train.lr"].source) == (1e-3, "--set")
    assert (rows["model"].value, rows["model"].source) == ("bow", "--model")
    assert (rows["data.seed"].value, rows["data.seed"].source) == (0, "recipe")
    assert (rows["data.max_triplets"].value, rows["data.max_triplets"].source) == (None, "default")
    assert (rows["train.lora_r"].value, rows["train.lora_r"].source) == (4, "default")
    preservation = rows["runs[1].preservation"]
    assert (preservation.value, preservation.source) == ("ctxgenD", "recipe")
    plain = {r.key: r for r in resolve(recipe, written, {})}
    assert plain["train.lr"].source == "size rule" and "0.002" in plain["train.lr"].value
    assert plain["data.examples"].source == "recipe"


def test_finetune_show_prints_every_key_and_trains_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ["finetune", "--recipe", "binding-v1", "--show", "--set", "data.examples=400"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[2:]}
    assert lines["data.examples"].split()[1:3] == ["400", "--set"]
    assert "template examples" in lines["data.examples"]
    assert re.search(r"0.002 \(< 1B parameters\) or 5e-05 +size rule", lines["train.lr"])
    assert "train.max_steps" in lines and "panel[1].task" in lines
    assert list(tmp_path.iterdir()) == []  # nothing written
    assert main(["finetune", "--recipe", "binding-v1"]) == 2
    assert "--out: required" in capsys.readouterr().err


def test_the_show_table_is_aligned_and_long_values_are_cut() -> None:
    from bindkit.recipes.keys import ResolvedKey

    text = format_resolved([ResolvedKey("a.b", "x" * 100, "help text", "recipe")])
    header, row = text.splitlines()
    assert header.index("source") == row.index("recipe")
    assert "x" * 39 + "…" in row and "x" * 41 not in row


SABER = PanelEntry(name="mcq", task="saber", score="mcq_accuracy")
TRIPLETS = PanelEntry(name="held", task="triplets", score="triplet_accuracy")
OTHER = PanelEntry(name="map", task="roxford5k", score="map_medium")


def test_at_chance_names_each_column_at_or_below_its_level() -> None:
    scores = {"mcq": 0.25, "held": 0.0, "map": 0.0}
    assert at_chance([SABER, TRIPLETS, OTHER], scores) == [
        "mcq 25.00 (chance 25.00)",
        "held 0.00 (chance 50.00)",
    ]
    assert at_chance([SABER, TRIPLETS], {"mcq": 0.26, "held": 0.51}) == []
    assert at_chance([SABER], {"mcq": None}) == []
    assert chance_warning("r", "soup raw", []) is None
    line = chance_warning("r", "soup raw", ["mcq 25.00 (chance 25.00)"])
    assert line is not None and line.startswith("warning: r: the shipped adapter (soup raw)")


def test_a_finished_recipe_warns_when_its_shipped_row_is_at_chance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.recipes.runner import _Runner

    recipe = packaged_recipe("binding-v1")
    runner = _Runner(recipe, tmp_path, overwrite=False, progress=False, threads=None)
    chance = {"saber_t2t_mcq": 0.25, "heldout_triplets": 0.9}
    runner.warn_at_chance({"base": {"saber_t2t_mcq": 0.9}, "preserve-soup raw": chance})
    err = capsys.readouterr().err
    assert "shipped adapter (preserve-soup raw)" in err and "saber_t2t_mcq 25.00" in err
    runner.warn_at_chance({"preserve-soup raw": {"saber_t2t_mcq": 0.9, "heldout_triplets": 0.9}})
    runner.warn_at_chance({"preserve raw": {"saber_t2t_mcq": 0.1}})  # not the shipped row
    assert capsys.readouterr().err == ""
