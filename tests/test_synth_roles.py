"""Role scenes (bindkit.synth.roles): the words are in no reported set, the rows read back to what
they say, and a mix with role scenes is refused when a reported set holds a role word."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from _shared import SHARED_DATA
from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.recipes.data import reported_data
from bindkit.recipes.recipe import packaged_recipe
from bindkit.synth.mixes import check_role_words, mix_file, write_mix
from bindkit.synth.roles import (
    file_texts,
    overlap,
    read_role,
    read_role_words,
    role_problem,
    role_triplets,
    role_words,
)
from bindkit.synth.rowkinds import validate_triplet
from bindkit.synth.splits import saber_words

ROLE_MIX = "fullpararelnegLEORR"
REPORTED = ("sugarcrepe", "sugarcrepe_pp", "sick2014")


@pytest.mark.parametrize("folder", REPORTED)
def test_no_role_word_occurs_in_a_reported_set(folder: str) -> None:
    path = SHARED_DATA / folder
    if not path.is_dir():
        pytest.skip(f"{path} is not on this machine")
    assert overlap(file_texts(path)) == []


def test_no_role_word_is_a_saber_word() -> None:
    assert not role_words().lexicon() & set(saber_words(None))
    assert overlap(sorted(saber_words(None))) == []


def test_overlap_finds_other_inflections_of_a_role_word() -> None:
    texts = ["Two men were tickling a dog.", "The walruses swim.", "A knight's horse."]
    assert overlap(texts, ["tickles", "walrus", "knight", "lynx"]) == [
        "knight",
        "tickles",
        "walrus",
    ]


def test_role_rows_are_fixed_and_each_passes_its_rule() -> None:
    rows = role_triplets(50, seed=3)
    assert rows == role_triplets(50, seed=3) and rows != role_triplets(50, seed=4)
    assert all(validate_triplet(r, "train") == [] for r in rows)
    kinds = [r["row_kind"] for r in rows]
    assert {k: kinds.count(k) for k in set(kinds)} == {
        "role_verb": 50,
        "role_verb_back": 50,
        "role_verb_passive": 50,
        "role_relation": 50,
        "role_relation_back": 50,
        "role_trait": 50,
        "role_trait_roles": 50,
    }
    # pinned: the texts a role mix trains on (a changed word list or maker turns this red)
    digest = hashlib.sha256(json.dumps(role_triplets(20, seed=0)).encode()).hexdigest()
    assert digest == DIGEST


DIGEST = "7a8cdef47b691da65a27807d58e423c625efef072d949c8fce3830b823a8fa7f"


def test_what_a_role_sentence_says_does_not_depend_on_its_voice() -> None:
    active = read_role("A grumpy walrus tickles a timid lynx.")
    passive = read_role("A timid lynx is tickled by a grumpy walrus.")
    assert (
        active.content()
        == passive.content()
        == (
            ("walrus", "grumpy"),
            "tickles",
            ("lynx", "timid"),
        )
    )
    assert (active.voice, passive.voice) == ("active", "passive")
    stated, converse = read_role("An urn is on a lute."), read_role("A lute is under an urn.")
    assert stated.content() == converse.content() == (("urn", None), "on", ("lute", None))
    for text in ("A urn is on a lute.", "A walrus tickled a lynx.", "A walrus is on a lute."):
        with pytest.raises(ValueError):
            read_role(text)


@pytest.mark.parametrize(
    ("kind", "query", "positive", "negative", "problem"),
    [
        (  # the positive in the query's voice says the same, but is no passive
            "role_verb",
            "A walrus tickles a lynx.",
            "A walrus tickles a lynx.",
            "A lynx tickles a walrus.",
            "the query and positive are active/active, not active/passive",
        ),
        (
            "role_relation",
            "An urn is on a lute.",
            "A lute is under an urn.",
            "A lute is under an urn.",
            "the negative does not swap the roles of the query",
        ),
        (
            "role_verb_passive",
            "A walrus tickles a lynx.",
            "A lynx is tickled by a walrus.",
            "A lynx tickles a walrus.",
            "the negative is active, not passive",
        ),
        (
            "role_trait",
            "A grumpy walrus tickles a grumpy lynx.",
            "A grumpy lynx is tickled by a grumpy walrus.",
            "A grumpy walrus tickles a grumpy lynx.",
            "a trait row has two different traits, other rows none",
        ),
        (
            "role_verb",
            "A timid walrus tickles a lynx.",
            "A lynx is tickled by a timid walrus.",
            "A lynx tickles a timid walrus.",
            "a trait row has two different traits, other rows none",
        ),
        (
            "role_verb",
            "A walrus tickles a horse.",
            "A horse is tickled by a walrus.",
            "A horse tickles a walrus.",
            "the query is no role sentence of the role words (no noun)",
        ),
    ],
)
def test_a_role_row_is_read_for_what_it_says(
    kind: str, query: str, positive: str, negative: str, problem: str
) -> None:
    assert role_problem(kind, query, positive, negative) == problem


def test_the_word_lists_are_checked_when_read() -> None:
    good = (
        'beings = ["walrus", "lynx"]\nverbs = [["tickles", "tickled"]]\ntraits = ["grumpy", '
        '"timid"]\nthings = ["urn", "lute"]\nrelations = [["on", "under"]]\n'
    )
    assert read_role_words(good).beings == ("walrus", "lynx")
    for bad, message in (
        (good.replace('"lynx"', '"Lynx"'), "beings must be single lower-case words"),
        (good.replace('"lynx"', '"walrus"'), "beings names a word twice"),
        (good.replace('["tickles", "tickled"]', '["tickles"]'), "verbs must be a list of"),
        (good.replace('things = ["urn", "lute"]', 'things = ["urn"]'), "things must list"),
    ):
        with pytest.raises(BindkitError, match=message):
            read_role_words(bad)


def test_a_role_mix_is_refused_when_a_reported_set_holds_a_role_word(tmp_path: Path) -> None:
    clean = tmp_path / "clean.json"
    clean.write_text(json.dumps({"0": {"caption": "A man rides a horse."}}))
    check_role_words(ROLE_MIX, [clean])
    leaky = tmp_path / "leaky.json"
    leaky.write_text(json.dumps({"0": {"caption": "Two walruses were tickling a man."}}))
    with pytest.raises(
        BindkitError, match=r"leaky.json holds role words tickled, tickles, walrus;"
    ):
        check_role_words(ROLE_MIX, [clean, leaky])
    check_role_words("fullpararelnegLEOR", [leaky])  # no role scenes: nothing to check
    with pytest.raises(BindkitError, match=r"--exclude-data .*nope: not found"):
        check_role_words(ROLE_MIX, [tmp_path / "nope"])


def test_synth_mix_writes_a_role_mix_checked_against_reported_data(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["synth", "generate", "--backend", "template", "-q", "--n", "300", "--seed", "3"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 0
    leaky = tmp_path / "sick.txt"
    leaky.write_text("pair_ID\tsentence_A\tsentence_B\n1\tA nurse is here\tA man is here\n")
    refused = ["synth", "mix", str(tmp_path / "run"), "--mix", ROLE_MIX, "--exclude-data"]
    assert main([*refused, str(leaky)]) == 2
    assert "sick.txt holds role words nurse;" in capsys.readouterr().err
    assert not (tmp_path / "run" / mix_file(ROLE_MIX)).exists()
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.json").write_text('{"0": {"caption": "A man rides a horse."}}')
    run = ["synth", "mix", str(tmp_path / "run"), "--mix", ROLE_MIX, "--exclude-data", str(clean)]
    assert main(run) == 0
    rows = [json.loads(x) for x in (tmp_path / "run" / mix_file(ROLE_MIX)).open()]
    assert any(r.get("type") == "role" for r in rows)
    record = json.loads((tmp_path / "run" / mix_file(ROLE_MIX)).with_suffix(".json").read_text())
    assert record["role_words_absent_from"] == [str(clean)]
    # the split-set guard accepts the role rows with the run's own splits
    shutil.copy(tmp_path / "run" / mix_file(ROLE_MIX), tmp_path / "copy.jsonl")
    write_mix(tmp_path / "run", ROLE_MIX, overwrite=True)  # no reported data: no check


def test_a_recipe_checks_its_role_words_against_its_own_panel_files() -> None:
    recipe = packaged_recipe("binding-v1")
    assert reported_data(recipe) == []  # {test} and {saber} are the recipe's own data
    scpp = recipe.replace(
        panel=[
            *recipe.to_dict()["panel"],
            {"name": "x", "task": "sugarcrepe_pp", "data": "/d/scpp", "score": "tot_accuracy"},
            {"name": "y", "task": "sugarcrepe_pp", "data": "/d/scpp", "score": "tot_accuracy"},
        ]
    )
    assert reported_data(scpp) == ["/d/scpp"]


def test_a_family_with_fewer_scenes_than_asked_gives_all_of_its_own() -> None:
    """Placements have things² × relations scenes (3,248): a larger count takes them all
    instead of drawing forever (the bug a mix of 10,000 examples hit)."""
    lists = role_words()
    placements = len(lists.things) * (len(lists.things) - 1) * len(lists.relations)
    rows = role_triplets(placements + 50, seed=1)
    kinds = [r["row_kind"] for r in rows]
    assert kinds.count("role_relation") == placements
    assert kinds.count("role_verb") == placements + 50
    assert len({r["query"] for r in rows if r["row_kind"] == "role_relation"}) == placements
