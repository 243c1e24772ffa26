"""``bindkit memory``: the dry run's estimate for a shape and a recipe, and its one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from bindkit.cli import main

pytest.importorskip("transformers")


def test_prints_the_estimate_of_a_recipe_for_a_shape(capsys: pytest.CaptureFixture[str]) -> None:
    from bindkit.embed.shapes import SHAPES
    from bindkit.train.memory import StepSetting, estimate_for_config

    argv = ["memory", "--shape", "all-minilm-l6-v2", "--recipe", "binding-v1", "--dtype", "float32"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    # binding-v1 trains 32 triplets a step: 96 inputs held at once
    assert "batch 32, chunk 0, gradient checkpointing off" in out and "(96 inputs" in out
    expected = estimate_for_config(
        SHAPES["all-minilm-l6-v2"].read_config(),
        StepSetting(batch_size=32),
        tokens=64,
        weight_bytes=4,
    )
    assert f"estimated peak: {expected.peak / 2**30:.2f} GiB" in out
    # all-MiniLM-L6-v2 has 22.7M parameters: 0.08 GiB of fp32 weights
    assert "frozen weights: 0.08 GiB" in out


def test_flags_override_the_recipe(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["memory", "--shape", "all-minilm-l6-v2", "--recipe", "binding-v1"]
    assert main([*argv, "--chunk-size", "8", "--gradient-checkpointing"]) == 0
    out = capsys.readouterr().out
    assert "chunk 8, gradient checkpointing on" in out and "(8 inputs" in out


def test_a_bad_config_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["memory", "--config", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"bindkit: --config {tmp_path}: cannot read config.json") or (
        f"--config {tmp_path}: cannot read config.json" in err
    )
    assert main(["memory", "--shape", "all-minilm-l6-v2", "--batch-size", "0"]) == 2
    assert "--batch-size 0: use 1 or more" in capsys.readouterr().err
