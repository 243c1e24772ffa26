"""``bindkit demo finetune --model builtin:tiny-vlm``: options, the CLI dispatch, and (slow) the
whole demo at a tiny size, rerun to the same table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bindkit.demo.tiny_vlm import TinyVlmDemoOptions, single_pair_captions
from bindkit.errors import BindkitError


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("saber_per_n", 3, "must be even"),
        ("steps", 0, "--steps"),
        ("train_per_n", 5, "must be even"),
        ("threads", 0, "--threads"),
    ],
)
def test_options_are_checked(tmp_path: Path, field: str, value: int, match: str) -> None:
    with pytest.raises(BindkitError, match=match):
        TinyVlmDemoOptions(out=str(tmp_path), **{field: value})


def test_preserved_captions_have_one_pair_each() -> None:
    from bindkit.saber.vocab import load_vocabulary

    captions = single_pair_captions()
    vocab = load_vocabulary("shapes")
    assert len(captions) == len(set(captions)) == len(vocab.attributes) * len(vocab.objects)
    assert all(" and " not in c and c.endswith(".") for c in captions)


def test_cli_dispatches_and_refuses_st_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.cli import main

    argv = ["demo", "finetune", "--model", "builtin:tiny-vlm", "--out", str(tmp_path / "d")]
    assert main([*argv, "--sts", str(tmp_path / "x.tsv")]) == 2
    assert "--sts: not with --model builtin:tiny-vlm" in capsys.readouterr().err
    assert main([*argv, "--soup", "2"]) == 2
    assert "--soup: only with --model st:default" in capsys.readouterr().err
    assert main([*argv, "--saber-per-n", "3"]) == 2  # the tiny-vlm options check it
    assert "--saber-per-n 3: must be even" in capsys.readouterr().err
    assert not (tmp_path / "d").exists()


@pytest.mark.slow  # several minutes on the loaded 2-core machine: rendering, training, LiNeS, eval
def test_demo_on_a_tiny_run_reproduces(tmp_path: Path) -> None:
    from bindkit.demo.tiny_vlm import run_tiny_vlm_demo

    out = tmp_path / "demo"
    options = TinyVlmDemoOptions(
        out=str(out), steps=2, saber_per_n=2, train_per_n=4, progress=False
    )
    summary = run_tiny_vlm_demo(options)
    table = (out / "demo.md").read_text(encoding="utf-8")
    for row in ("| base |", "| text-only LoRA |", "| text-only LoRA + LiNeS |"):
        assert row in table
    assert set(summary["table"]["base"]) == {"tt", "ti", "it", "ii"}
    assert summary["optimizer_steps"] == 2 and summary["provenance"]
    assert summary["recipe"]["lines_alpha"] is not None
    assert json.loads((out / "demo.json").read_text()) == summary
    train = [json.loads(line) for line in (out / "data" / "train.jsonl").read_text().splitlines()]
    assert train and all(set(r) >= {"query", "positive", "negative"} for r in train)
    record = (out / "run" / "train.json").read_text(encoding="utf-8")
    # a rerun reuses the finished training and the rendered images, and gives the same table
    assert run_tiny_vlm_demo(options)["table"] == summary["table"]
    assert (out / "run" / "train.json").read_text(encoding="utf-8") == record
