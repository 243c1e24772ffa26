from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from bindkit.errors import VocabularyError
from bindkit.saber.language import indefinite_article
from bindkit.saber.vocab import Vocabulary, load_vocabulary


def test_builtin_counts_match_the_seed(vocab: Vocabulary) -> None:
    assert len(vocab.objects) == 232
    assert len(vocab.attributes) == 50
    assert Counter(a.type for a in vocab.attributes) == {
        "standalone": 27,
        "single-color": 4,
        "two-color": 6,
        "fixed-variant": 13,
    }
    assert len({a.category for a in vocab.attributes}) == 6
    assert vocab.palette == (
        "red",
        "orange",
        "yellow",
        "green",
        "blue",
        "purple",
        "pink",
        "white",
        "black",
    )


def test_builtin_contains_the_seed_examples(vocab: Vocabulary) -> None:
    for obj in ("toothbrush", "teapot", "kayak", "cube", "kite"):
        assert obj in vocab.objects
    for name in ("red", "glowing", "sandy", "camouflage", "transparent", "striped"):
        assert vocab.has_attribute(name)
    assert vocab.attribute("soap-bubble").template == "iridescent soap-bubble"
    assert vocab.attribute("glowing").template == "{color} glowing"
    assert vocab.attribute("striped").template == "{color1} and {color2} striped"
    wooden = vocab.attribute("wooden")
    assert wooden.type == "fixed-variant"
    assert set(wooden.variants) == {"light-brown", "dark-brown"}


def test_builtin_objects_do_not_collide(vocab: Vocabulary) -> None:
    words = [w for obj in vocab.objects for w in obj.split()]
    assert len(words) == len(set(words)), "objects must not share words"
    names = {a.name for a in vocab.attributes}
    assert not names & set(words)
    # every object and realised attribute gets an article without error
    for obj in vocab.objects:
        assert indefinite_article(obj) in ("a", "an")


def test_vocabulary_hash_is_stable_and_content_based(vocab_copy: Path) -> None:
    assert load_vocabulary(vocab_copy).sha256 == load_vocabulary().sha256
    with (vocab_copy / "objects.txt").open("a") as handle:
        handle.write("zeppelin\n")
    assert load_vocabulary(vocab_copy).sha256 != load_vocabulary().sha256


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize(
    ("file", "old", "new", "message"),
    [
        (
            "objects.txt",
            "teapot\n",
            "teapot\nteapot\n",
            r"objects.txt:\d+: duplicate object 'teapot'",
        ),
        ("colors.txt", "red\n", "red\nred\n", r"colors.txt:\d+: duplicate color 'red'"),
        ("objects.txt", "teapot\n", "Tea Pot\n", r"objects.txt:\d+: object 'Tea Pot'"),
        ("objects.txt", "teapot\n", "red\n", "object 'red' is also an attribute"),
        ("objects.txt", "teapot\n", "toy kite\n", "share the word 'kite'"),
        (
            "attributes.toml",
            'name = "sandy"\ncategory = "texture"\ntype = "standalone"',
            'name = "sandy"\ncategory = "texture"\ntype = "sparkly"',
            "attribute 'sandy': unknown type 'sparkly'",
        ),
        (
            "attributes.toml",
            'template = "{color} glowing"',
            'template = "glowing"',
            r"attribute 'glowing': template 'glowing' has missing slot\(s\) \{color\}",
        ),
        (
            "attributes.toml",
            'template = "{color} glowing"',
            'template = "{color} and {color2} glowing"',
            r"attribute 'glowing': .* extra slot\(s\) \{color2\}",
        ),
        (
            "attributes.toml",
            'template = "{color1} and {color2} striped"',
            'template = "{color1} striped"',
            r"attribute 'striped': .*missing slot\(s\) \{color2\}",
        ),
        (
            "attributes.toml",
            'variants = ["light-brown", "dark-brown"]',
            'variants = ["light-brown"]',
            "attribute 'wooden': a fixed-variant attribute needs 'variants'",
        ),
        (
            "attributes.toml",
            'name = "rusty"',
            'name = "sandy"',
            "attribute 'sandy': duplicate attribute name",
        ),
        (
            "attributes.toml",
            'name = "rusty"',
            'name = "very rusty"',
            "attribute 'very rusty': the name must be one lower-case word",
        ),
        (
            "attributes.toml",
            'name = "rusty"\ncategory = "condition"',
            'name = "rusty"\ncategory = "condition"\ncolour = "x"',
            r"attribute 'rusty': unknown keys \['colour'\]",
        ),
        ("attributes.toml", 'name = "red"', "name = red", "attributes.toml: invalid TOML"),
    ],
)
def test_malformed_vocabulary_is_named(
    vocab_copy: Path, file: str, old: str, new: str, message: str
) -> None:
    _replace(vocab_copy / file, old, new)
    with pytest.raises(VocabularyError, match=message) as info:
        load_vocabulary(vocab_copy)
    assert "\n" not in str(info.value)
    assert file in str(info.value)


def test_missing_file_and_directory(vocab_copy: Path, tmp_path: Path) -> None:
    with pytest.raises(VocabularyError, match="not found"):
        load_vocabulary(tmp_path / "nope")
    (vocab_copy / "colors.txt").unlink()
    with pytest.raises(VocabularyError, match=r"colors.txt: missing"):
        load_vocabulary(vocab_copy)


def test_too_few_entries_for_n(vocab_copy: Path) -> None:
    (vocab_copy / "objects.txt").write_text("cube\nkite\nvase\nbell\n")
    small = load_vocabulary(vocab_copy)
    small.check_supports(2, 4)
    with pytest.raises(
        VocabularyError, match=r"objects.txt: 4 objects, but N = 5 needs at least 5"
    ):
        small.check_supports(2, 5)
    with pytest.raises(VocabularyError, match=r"attributes.toml: 50 attributes, but N = 51"):
        load_vocabulary().check_supports(2, 51)
    (vocab_copy / "objects.txt").write_text("cube\nkite\n")
    with pytest.raises(VocabularyError, match="N = 2 needs at least 3 objects"):
        load_vocabulary(vocab_copy).check_supports(2, 2)


def test_subset_vocabulary_keeps_only_the_named_entries(tmp_path: Path) -> None:
    from bindkit.saber.build import generate_saber
    from bindkit.saber.io import read_saber
    from bindkit.saber.vocab import subset_vocabulary

    shapes = load_vocabulary("shapes")
    part = subset_vocabulary(shapes, ["red", "blue", "golden"], ["cube", "cone", "ring"], "x")
    assert [a.name for a in part.attributes] == ["red", "blue", "golden"]
    assert part.palette == shapes.palette
    other = subset_vocabulary(shapes, ["red", "blue", "golden"], ["cube", "cone", "star"], "x")
    assert len({shapes.sha256, part.sha256, other.sha256}) == 3
    manifest = generate_saber(tmp_path / "s", per_n=4, n_max=3, vocab=part)
    assert manifest["vocabulary"]["sha256"] == part.sha256
    words = {
        w for m in read_saber(tmp_path / "s").mcqs for i in m.items for b in i.bindings for w in b
    }
    assert words <= {"red", "blue", "golden", "cube", "cone", "ring"}
    with pytest.raises(VocabularyError, match="'sofa'"):
        subset_vocabulary(shapes, ["red"], ["sofa"], "x")
    with pytest.raises(VocabularyError, match="twice"):
        subset_vocabulary(shapes, ["red", "red"], ["cube"], "x")
