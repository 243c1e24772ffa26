"""``bindkit finetune`` on a multimodal LLM embedder: a tiny random Qwen2-VL (tests/tiny_models.py)
trained through the recipe for 2 steps, two runs, their soup and LiNeS α 0.5. Text-only LoRA on
the language layers: every ``visual`` weight stays bit-identical, the language layers move."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bindkit.cli import main

pytest.importorskip("peft")

RECIPE = """
name = "tiny"
model = "mllm:{model}"

[data]
examples = 100
max_triplets = 8
val_triplets = 8
test_triplets = 8

[train]
batch_size = 4
max_steps = 2
save_every = 0
preserve_batch = 2

[[runs]]
name = "a"
seed = 0
preservation = "ctxgen"

[[runs]]
name = "b"
seed = 1
preservation = "none"

[soup]
name = "soup"
runs = ["a", "b"]

[lines]
alpha = 0.5

[[panel]]
name = "heldout"
task = "triplets"
data = "{{test}}"
score = "triplet_accuracy"
"""


def _plain_name(name: str) -> str:
    """A parameter's name in the base model (peft's wrapper prefixes and base layers dropped)."""
    return name.replace("base_model.model.", "").replace(".base_layer", "")


@pytest.mark.slow  # ~65 s on 2 CPU cores: 100 template examples, 2 runs, 7 panel rows
def test_a_tiny_qwen2_vl_trains_through_bindkit_finetune(
    tiny_qwen2_vl: Path, tmp_path: Path
) -> None:
    from safetensors.torch import load_file

    from bindkit.embed import load_embedder

    recipe = tmp_path / "tiny.toml"
    recipe.write_text(RECIPE.format(model=tiny_qwen2_vl))
    out = tmp_path / "ft"
    assert main(["finetune", str(recipe), "--out", str(out), "-q"]) == 0
    record = json.loads((out / "recipe.json").read_text())
    assert record["status"] == "done"
    assert [run["optimizer_steps"] for run in record["runs"].values()] == [2, 2]
    # the size rule: a tiny model trains at the small-model rate
    assert record["learning_rate"]["lr"] == 2e-3 and record["learning_rate"]["parameters"] > 0
    assert set(record["table"]) == {
        "base",
        *(f"{n} {v}" for n in ("a", "b", "soup") for v in ("raw", "lines")),
    }
    assert record["lines_alpha"] == {"a": 0.5, "b": 0.5, "soup": 0.5}

    weights = load_file(str(out / "adapter" / "adapter_model.safetensors"))
    assert weights and not [k for k in weights if "visual" in k]
    assert any(k.endswith("lora_B.weight") and bool(v.abs().sum() > 0) for k, v in weights.items())

    base = load_embedder(f"mllm:{tiny_qwen2_vl}", cache=False, progress=False)
    before = {n: p.detach().clone() for n, p in base.module.named_parameters()}
    tuned = load_embedder(
        f"mllm:{tiny_qwen2_vl}+adapter={out / 'adapter'}", cache=False, progress=False
    )
    visual = 0
    for name, parameter in tuned.module.named_parameters():
        plain = _plain_name(name)
        if "visual" in plain:
            assert "lora" not in plain, name
            assert parameter.detach().equal(before[plain]), name  # bit-identical
            visual += 1
    assert visual > 0 and visual == sum("visual" in n for n in before)
    assert tuned.embed_texts(["a red cube"]).tolist() != base.embed_texts(["a red cube"]).tolist()


@pytest.mark.slow  # ~1-2 min on 2 CPU cores: two 2-step runs, a soup, 11 LiNeS points each
def test_the_val_tolerance_rule_picks_the_soup_s_alpha_and_a_changed_recipe_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """builtin:tiny-clip (text-only LoRA): the runs' α by the trainer's sweep, the soup's by
    the same rule (recipes.select); a rerun reuses everything; a changed key is refused with
    one line, and --overwrite retrains only the run it changes."""
    from bindkit.train.evaluation import SWEEP

    text = (
        RECIPE.format(model="")
        .replace('"mllm:"', '"builtin:tiny-clip"')
        .replace("[lines]\nalpha = 0.5", '[lines]\nrule = "val-tolerance"')
    )
    recipe = tmp_path / "tiny.toml"
    recipe.write_text(text)
    out = tmp_path / "ft"
    argv = ["finetune", str(recipe), "--out", str(out), "-q"]
    assert main(argv) == 0
    record = json.loads((out / "recipe.json").read_text())
    assert set(record["lines_alpha"]) == {"a", "b", "soup"}
    assert all(alpha in (*SWEEP, 1.0) for alpha in record["lines_alpha"].values())
    assert {"soup raw", "soup lines"} <= set(record["table"])
    runs = {n: (out / "runs" / n / "train.json").stat().st_mtime_ns for n in ("a", "b")}
    assert main(argv) == 0  # a rerun: both runs reused
    assert {n: (out / "runs" / n / "train.json").stat().st_mtime_ns for n in runs} == runs
    recipe.write_text(text.replace('name = "b"\nseed = 1', 'name = "b"\nseed = 2'))
    capsys.readouterr()
    assert main(argv) == 2  # refused, one line naming the key
    assert "(runs[1].seed 1 then, 2 now); pass --overwrite" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0
    after = {n: (out / "runs" / n / "train.json").stat().st_mtime_ns for n in runs}
    assert after["a"] == runs["a"] and after["b"] != runs["b"]


@pytest.mark.slow  # ~1 min on 2 CPU cores
def test_a_recipe_killed_before_its_panel_resumes_without_retraining(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.recipes.recipe import Recipe
    from bindkit.recipes.runner import _Runner, run_recipe

    text = RECIPE.format(model="").replace('"mllm:"', '"builtin:tiny-clip"')
    path = tmp_path / "tiny.toml"
    path.write_text(text)
    recipe = Recipe.from_toml(path)
    out = tmp_path / "ft"
    scored = _Runner.panel

    def killed(*args: object) -> None:
        raise KeyboardInterrupt  # a kill between the soup and the panel

    monkeypatch.setattr(_Runner, "panel", killed)
    with pytest.raises(KeyboardInterrupt):
        run_recipe(recipe, out, progress=False)
    assert json.loads((out / "recipe.json").read_text())["status"] == "running"
    stamps = {n: (out / "runs" / n / "train.json").stat().st_mtime_ns for n in ("a", "b")}
    monkeypatch.setattr(_Runner, "panel", scored)
    record = run_recipe(recipe, out, progress=False)
    assert record["status"] == "done" and "soup raw" in record["table"]
    assert {n: (out / "runs" / n / "train.json").stat().st_mtime_ns for n in stamps} == stamps
