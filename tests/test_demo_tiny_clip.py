"""``bindkit demo finetune --model builtin:tiny-clip``: options, the held-out check, plumbing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bindkit.errors import BindkitError

pytest.importorskip("torch")

from bindkit.demo.tiny_clip import (
    TinyClipDemoOptions,
    check_demo_out,
    check_disjoint,
    disjoint_mcqs,
    ensemble_rows,
    triplet_rows,
)
from bindkit.embed.backends.tiny_clip import words
from bindkit.saber.build import SaberOptions, build_saber
from bindkit.saber.vocab import load_vocabulary


def draw(seed: int, per_n: int = 2) -> list:
    return build_saber(SaberOptions(seed=seed, per_n=per_n, n_max=4), load_vocabulary("shapes"))


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [
        ("saber_per_n", 3, "even"),
        ("saber_per_n", 0, "saber-per-n"),
        ("steps", 0, "--steps"),
        ("threads", 0, "--threads"),
    ],
)
def test_options_are_checked(tmp_path: Path, field: str, value: int, match: str) -> None:
    with pytest.raises(BindkitError, match=match):
        TinyClipDemoOptions(out=str(tmp_path), **{field: value})


def test_refuses_training_rows_with_an_evaluation_binding_set() -> None:
    held_out = draw(0)
    rows = triplet_rows(held_out[:1])  # the evaluation set's own MCQ
    with pytest.raises(BindkitError, match="bindings of an evaluation item"):
        check_disjoint(rows, held_out)
    # the negative alone leaking is refused too (every text of a row is checked)
    other = triplet_rows(disjoint_mcqs(draw(5), held_out))[0]
    leaked = dict(other, bindings=dict(other["bindings"], negative=rows[0]["bindings"]["query"]))
    with pytest.raises(BindkitError, match="evaluation item"):
        check_disjoint([leaked], held_out)
    check_disjoint([other], held_out)  # a disjoint row passes


def test_disjoint_draw_drops_every_mcq_sharing_a_binding_set() -> None:
    held_out = draw(0)
    mixed = draw(3) + held_out[:2]
    kept = disjoint_mcqs(mixed, held_out)
    assert len(kept) <= len(mixed) - 2
    check_disjoint(triplet_rows(kept), held_out)


def test_ensemble_rows_reorder_the_same_pairs() -> None:
    rows = ensemble_rows(draw(3)[:1], 4, 0)
    assert len(rows) == 5  # query and four candidates, all distinct texts
    for row in rows:
        assert len(row["members"]) == 4
        content = set(words(row["text"])) - {"a", "an", "and"}
        assert all(set(words(m)) - {"a", "an", "and"} == content for m in row["members"])


@pytest.mark.slow  # ~30 s alone, 110 s on the loaded 2-core machine: rendering, eval, training
def test_demo_plumbing_on_a_tiny_run(tmp_path: Path) -> None:
    from bindkit.demo.tiny_clip import run_tiny_clip_demo

    out = tmp_path / "demo"
    options = TinyClipDemoOptions(
        out=str(out), steps=2, saber_per_n=2, train_per_n=2, progress=False
    )
    summary = run_tiny_clip_demo(options)
    table = (out / "demo.md").read_text(encoding="utf-8")
    assert "| base |" in table and "| text-only LoRA |" in table
    assert set(summary["table"]["base"]) == {"tt", "ti", "it", "ii"}
    # the image tower is frozen: image→image cannot move
    assert summary["table"]["base"]["ii"] == summary["table"]["text-only LoRA"]["ii"]
    assert summary["optimizer_steps"] == 2 and summary["provenance"]
    assert json.loads((out / "demo.json").read_text()) == summary
    record = (out / "run" / "train.json").read_text(encoding="utf-8")
    # a rerun reuses the finished training and the rendered images, and gives the same table
    assert run_tiny_clip_demo(options)["table"] == summary["table"]
    assert (out / "run" / "train.json").read_text(encoding="utf-8") == record


def test_cli_refuses_minilm_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bindkit.cli import main

    argv = ["demo", "finetune", "--model", "builtin:tiny-clip", "--out", str(tmp_path / "d")]
    assert main([*argv, "--sts", str(tmp_path / "x.tsv")]) == 2
    assert "--sts: not with --model builtin:tiny-clip" in capsys.readouterr().err
    assert main([*argv, "--soup", "2"]) == 2
    assert "--soup: only with --model st:default" in capsys.readouterr().err
    assert main([*argv, "--no-plain"]) == 2
    assert "--plain/--no-plain: only with" in capsys.readouterr().err
    for extra in (["--examples", "5"], ["--max-triplets", "5"], ["--preserve-weight", "nan"]):
        assert main([*argv, *extra]) == 2  # the tiny-clip recipe has no such knob
        assert f"{extra[0]}: only with --model st:default" in capsys.readouterr().err
    assert main(["demo", "finetune", "--out", str(tmp_path / "d"), "--steps", "3"]) == 2
    assert not (tmp_path / "d").exists()


def test_out_must_be_new_empty_or_an_earlier_run_of_the_demo(tmp_path: Path) -> None:
    check_demo_out(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_demo_out(tmp_path / "empty")
    earlier = tmp_path / "earlier"
    (earlier / "saber").mkdir(parents=True)
    (earlier / "saber" / "manifest.json").write_text("{}")
    (earlier / "demo.md").write_text("table\n")
    check_demo_out(earlier)
    (earlier / "notes.txt").write_text("mine\n")
    with pytest.raises(BindkitError, match=r"not an earlier run of this demo \(holds notes\.txt\)"):
        check_demo_out(earlier)
    mine = tmp_path / "mine"  # only demo names, but not written by the demo: saber.jsonl of mine
    (mine / "saber").mkdir(parents=True)
    (mine / "saber" / "saber.jsonl").write_text("mine\n")
    with pytest.raises(BindkitError, match=r"holds no saber/manifest\.json"):
        check_demo_out(mine)


def test_the_report_says_how_many_steps_ran_not_how_many_were_allowed(tmp_path: Path) -> None:
    """One epoch of the training triplets can end before --steps (the review saw "200 steps"
    where 85 ran): demo.md states the optimizer steps of the run."""
    from bindkit.demo.tiny_clip import PAIRINGS, TinyClipDemoOptions, render_table

    options = TinyClipDemoOptions(out=str(tmp_path), steps=200)
    counts = {"eval_mcqs": 18, "dropped_mcqs": 0, "triplets": 2700}
    text = render_table(options, counts, {"base": dict.fromkeys(PAIRINGS, 0.5)}, 60.0, 85)
    assert "85 steps" in text
    assert "200 steps" not in text
