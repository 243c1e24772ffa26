"""``bindkit finetune`` and ``bindkit sweep`` check everything before the first expensive step
(issue: a wrong panel score name, a missing panel file or an untrainable model was found only
after data generation and training): one line each, and no data written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.recipes.recipe import Recipe, packaged_recipe
from bindkit.recipes.runner import run_recipe

STS = "sentence_A\tsentence_B\trelatedness_score\na red cube\ta cube that is red\t4.5\n"


def _recipe(**changes: Any) -> Recipe:
    return packaged_recipe("binding-v1").replace(**{"model": "builtin:tiny-clip", **changes})


@pytest.fixture(autouse=True)
def _no_data(monkeypatch: pytest.MonkeyPatch) -> None:
    """Generating data is the first expensive step: reaching it fails the test at once."""

    def generated(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("data generation began before the check refused the recipe")

    monkeypatch.setattr("bindkit.recipes.runner.build_data", generated)
    monkeypatch.setattr("bindkit.sweep.study._open_study", generated)


def _refused(recipe: Recipe, out: Path, match: str) -> str:
    with pytest.raises(BindkitError, match=match) as caught:
        run_recipe(recipe, out, progress=False)
    message = str(caught.value)
    assert "\n" not in message
    assert not (out / "data").exists(), "data was generated before the check"
    return message


@pytest.mark.parametrize(
    ("model", "match"),
    [
        ("bow", r"--model bow: the bow backend has no trainable torch path"),
        ("mteb:intfloat/e5-small-v2", r"the mteb backend has no trainable torch path"),
        ("./nofolder", r"--model \./nofolder: not a folder, and not a model id"),
        ("nofolder/sub/deeper", r"not a folder, and not a model id"),
        ("builtin:tiny-clp", r"unknown built-in model 'tiny-clp'; did you mean builtin:tiny-clip"),
        ("builtin:tiny-clip+weights=/no/such", r"weights=/no/such is not a folder"),
        ("stt:default", r"unknown model backend 'stt'; did you mean st"),
    ],
)
def test_an_untrainable_model_is_one_line_before_any_data(
    tmp_path: Path, model: str, match: str
) -> None:
    _refused(_recipe(model=model), tmp_path / "out", match)


def test_a_panel_score_its_task_does_not_declare_is_named(tmp_path: Path) -> None:
    panel = [{"name": "held", "task": "triplets", "data": "{test}", "score": "triplet_acc"}]
    message = _refused(_recipe(panel=panel), tmp_path / "out", r"panel\[0\] \(held\)\.score")
    assert "did you mean triplet_accuracy" in message


def test_a_missing_or_unreadable_panel_file_is_named(tmp_path: Path) -> None:
    missing = [
        {"name": "sts", "task": "sts", "data": str(tmp_path / "no.tsv"), "score": "spearman"}
    ]
    _refused(_recipe(panel=missing), tmp_path / "out", r"panel\[0\] \(sts\)\.data: .*no\.tsv")
    bad = tmp_path / "bad.tsv"
    bad.write_text("not\ta\tpanel file\n")
    torn = [{"name": "sts", "task": "sts", "data": str(bad), "score": "spearman"}]
    _refused(_recipe(panel=torn), tmp_path / "out2", r"panel\[0\] \(sts\)\.data")


def test_a_panel_pairing_its_task_does_not_run_is_named(tmp_path: Path) -> None:
    sts = tmp_path / "sts.tsv"
    sts.write_text(STS)
    panel = [{"name": "sts", "task": "sts", "data": str(sts), "score": "spearman", "pairing": "it"}]
    _refused(_recipe(panel=panel), tmp_path / "out", r"panel\[0\] \(sts\)\.pairing 'it'")


def test_an_output_folder_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        _refused(_recipe(), locked / "out", r"not writable|Permission denied")
    finally:
        locked.chmod(0o700)


def test_the_cli_says_it_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    argv = ["finetune", "--recipe", "binding-v1", "--model", "./nofolder", "--out", str(out), "-q"]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "./nofolder" in err and "Traceback" not in err
    assert not (out / "data").exists()


def test_a_sweep_checks_its_model_and_panel_before_any_trial(tmp_path: Path) -> None:
    from bindkit.sweep.study import run_sweep

    train = tmp_path / "train.jsonl"
    train.write_text('{"query": "a red cube", "positive": "a red cube", "negative": "x"}\n')
    config = tmp_path / "sweep.toml"
    config.write_text(
        f"""
[study]
trials = 1

[train]
model = "builtin:tiny-clip"
train = "{train}"
max_steps = 1

[search]
lr = {{ type = "log-float", low = 1e-4, high = 1e-3 }}

[[panel]]
name = "held"
task = "triplets"
data = "{train}"
score = "acuracy"

[objectives]
binding = "held"
"""
    )
    out = tmp_path / "sweep"
    with pytest.raises(BindkitError, match=r"panel\[0\] \(held\)\.score 'acuracy'"):
        run_sweep(config, out, progress=False)
    assert not out.exists()
    config.write_text(
        config.read_text()
        .replace('"acuracy"', '"triplet_accuracy"')
        .replace('"builtin:tiny-clip"', '"bow"')
    )
    with pytest.raises(BindkitError, match=r"--model bow: the bow backend has no trainable"):
        run_sweep(config, out, progress=False)
    assert not out.exists()
