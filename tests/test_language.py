from __future__ import annotations

import pytest

from bindkit.saber.language import conjunction, image_prompt, indefinite_article, render


@pytest.mark.parametrize(
    ("phrase", "article"),
    [
        ("hourglass", "an"),
        ("hour", "an"),
        ("honest mistake", "an"),
        ("heirloom", "an"),
        ("unicorn figurine", "a"),
        ("unicycle", "a"),
        ("ukulele", "a"),
        ("uniform", "a"),
        ("useful tool", "a"),
        ("one-eyed doll", "a"),
        ("once-famous hat", "a"),
        ("euphonium", "a"),
        ("ewe", "a"),
        ("umbrella", "an"),
        ("uninformed guess", "an"),
        ("ugly vase", "an"),
        ("apple", "an"),
        ("egg", "an"),
        ("iridescent soap-bubble kite", "an"),
        ("orange glowing cube", "an"),
        ("oboe", "an"),
        ("inflatable chair", "an"),
        ("igloo", "an"),
        ("house", "a"),
        ("striped cube", "a"),
        ("yellow kite", "a"),
        ("xylophone", "a"),
        ("X-ray", "an"),
        ("MRI scan", "an"),
        ("USB drive", "a"),
        ("UFO", "a"),
        ("FBI agent", "an"),
        ("8-bit robot", "an"),
        ("11-sided die", "an"),
        ("18th-century chair", "an"),
        ("1-liter bottle", "a"),
        ("100-year-old clock", "a"),
        ("80s radio", "an"),
    ],
)
def test_indefinite_article(phrase: str, article: str) -> None:
    assert indefinite_article(phrase) == article


def test_article_needs_a_word() -> None:
    with pytest.raises(ValueError, match="no word"):
        indefinite_article("  ")


def test_conjunction_shapes() -> None:
    assert conjunction(["a red cube"]) == "A red cube."
    assert conjunction(["a striped cube", "a transparent kite"]) == (
        "A striped cube and a transparent kite."
    )
    assert conjunction(["a x", "a y", "an z"]) == "A x, a y and an z."


def test_render_matches_seed_example() -> None:
    assert render([("striped", "cube"), ("transparent", "kite")]) == (
        "A striped cube and a transparent kite."
    )
    assert render([("white and orange striped", "cube"), ("transparent", "kite")]) == (
        "A white and orange striped cube and a transparent kite."
    )


def test_image_prompt_carries_the_scene_and_the_binding_locality_rules() -> None:
    prompt = image_prompt("A white and orange striped cube and a transparent kite.", 2)
    assert "a white and orange striped cube and a transparent kite" in prompt
    for phrase in (
        "CLEVR-style 3D",
        "neutral gray background",
        "clearly separated",
        "not lined up in a row",
        "exactly once",
        "never transfer, blend or bleed across objects",
    ):
        assert phrase in prompt
    assert "exactly 2 objects" in prompt
