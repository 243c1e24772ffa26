"""Colour collisions: avoided by default, kept with --allow-color-collisions."""

from __future__ import annotations

import json
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
from bindkit.saber.validate import check_mcq, validate_saber
from bindkit.saber.vocab import load_vocabulary


def test_collisions_are_counted_as_in_the_review_example() -> None:
    vocab = load_vocabulary()
    mcqs = build_saber(SaberOptions(per_n=20, avoid_color_collisions=False), vocab)
    colliding = [m for m in mcqs if has_color_collision(m, vocab)]
    assert colliding  # drawn without the check, the set has them (the review: ~20 % of MCQs)
    for mcq in colliding[:20]:
        colors = {a for a in mcq.realizations if vocab.attribute(a).category == "color"}
        assert any(
            c in r.text.replace("-", " ").split()
            for c in colors
            for a, r in mcq.realizations.items()
            if a != c
        )


@pytest.mark.parametrize("vocab_name", [None, "shapes"])
def test_the_default_set_has_no_collision_and_keeps_every_rule(vocab_name: str | None) -> None:
    """The whole default set (1,800 MCQs): no colour collision, and every per-MCQ rule holds
    (the N = 2 joint swap's new attribute included)."""
    vocab = load_vocabulary(vocab_name)
    mcqs = build_saber(SaberOptions(), vocab)
    assert len(mcqs) == 1800
    assert color_collisions(mcqs, vocab) == 0
    assert [v for m in mcqs for v in check_mcq(m, vocab)] == []
    for mcq in mcqs:
        if mcq.n == 2:  # the new element of candidate 4 is not in the query
            joint = mcq.candidates[3]
            assert (
                len(set(joint.attributes) - set(mcq.query.attributes))
                + len(set(joint.objects) - set(mcq.query.objects))
                == 1
            )
    off = build_saber(SaberOptions(avoid_color_collisions=False), vocab)
    assert color_collisions(off, vocab) > 100  # what the check removes (323 / 805)


def test_generate_records_the_option_and_the_count(tmp_path: Path) -> None:
    generate_saber(tmp_path / "on", per_n=40)
    generate_saber(tmp_path / "off", per_n=40, avoid_color_collisions=False)
    for name in ("on", "off"):
        assert validate_saber(tmp_path / name).ok
    on, off = (json.loads((tmp_path / x / "manifest.json").read_text()) for x in ("on", "off"))
    assert on["options"]["avoid_color_collisions"] is True and on["color_collisions"] == 0
    assert off["options"]["avoid_color_collisions"] is False and off["color_collisions"] > 0
    vocab = load_vocabulary()
    expected = build_saber(SaberOptions(per_n=40), vocab)
    assert [m.to_json() for m in read_saber(tmp_path / "on").mcqs] == [
        m.to_json() for m in expected
    ]


def test_cli_avoids_collisions_unless_allowed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["saber", "generate", "--per-n", "20"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert "colour collisions: 0 MCQs" in capsys.readouterr().out
    assert main([*args, "--out", str(tmp_path / "b"), "--allow-color-collisions"]) == 0
    vocab = load_vocabulary()
    a, b = (read_saber(tmp_path / x).mcqs for x in "ab")
    assert color_collisions(a, vocab) == 0 < color_collisions(b, vocab)
    assert main([*args, "--out", str(tmp_path / "c"), "--no-avoid-color-collisions"]) == 0
    c = read_saber(tmp_path / "c").mcqs
    assert [m.to_json() for m in c] == [m.to_json() for m in b]
