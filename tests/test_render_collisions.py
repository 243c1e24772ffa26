"""The colour-collision option of the generator."""

from __future__ import annotations

from pathlib import Path

import pytest

from bindkit.cli import main
from bindkit.saber.build import (
    SaberOptions,
    build_saber,
    color_collisions,
    generate_saber,
    has_color_collision,
)
from bindkit.saber.io import read_saber
from bindkit.saber.validate import validate_saber
from bindkit.saber.vocab import load_vocabulary


def test_collisions_are_counted_as_in_the_review_example() -> None:
    vocab = load_vocabulary()
    mcqs = build_saber(SaberOptions(per_n=20), vocab)
    colliding = [m for m in mcqs if has_color_collision(m, vocab)]
    assert colliding  # the default set has them (the review: ~20 % of MCQs)
    for mcq in colliding[:20]:
        colors = {a for a in mcq.realizations if vocab.attribute(a).category == "color"}
        assert any(
            c in r.text.replace("-", " ").split()
            for c in colors
            for a, r in mcq.realizations.items()
            if a != c
        )


@pytest.mark.parametrize("vocab_name", [None, "shapes"])
def test_option_removes_most_collisions_and_keeps_every_rule(
    vocab_name: str | None, tmp_path: Path
) -> None:
    vocab = load_vocabulary(vocab_name)
    off = build_saber(SaberOptions(per_n=40), vocab)
    on = build_saber(SaberOptions(per_n=40, avoid_color_collisions=True), vocab)
    assert color_collisions(on, vocab) < color_collisions(off, vocab) / 3
    generate_saber(tmp_path, per_n=40, vocab=vocab_name, avoid_color_collisions=True)
    assert validate_saber(tmp_path, vocab=vocab_name).ok
    assert [m.to_json() for m in read_saber(tmp_path).mcqs] == [m.to_json() for m in on]


def test_shapes_sets_avoid_collisions_by_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["saber", "generate", "--per-n", "20", "--vocab", "shapes"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert "colour collisions left" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "b"), "--no-avoid-color-collisions"]) == 0
    vocab = load_vocabulary("shapes")
    a, b = (read_saber(tmp_path / x).mcqs for x in "ab")
    assert color_collisions(a, vocab) < color_collisions(b, vocab)
    manifest = (tmp_path / "a" / "manifest.json").read_text()
    assert '"avoid_color_collisions": true' in manifest
    assert "avoid_color_collisions" not in (tmp_path / "b" / "manifest.json").read_text()
