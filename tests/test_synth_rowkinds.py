"""The row kinds of the training mixes (bindkit.synth.rowkinds): every row of every mix passes
``validate_triplet`` under its kind's rule, and each kind's rule rejects a row broken the way
that kind could break."""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bindkit.synth.everyday import everyday_words, without_attribute
from bindkit.synth.mixes import MIXES, ROLE_MAKERS, training_triplets
from bindkit.synth.roles import Action, read_role, role_words
from bindkit.synth.rowkinds import (
    ROW_KIND,
    ROW_KINDS,
    SWAP,
    TRIPLET_RULES,
    kind_of,
    validate_triplet,
)
from bindkit.synth.text import substitute, words

FIELDS = ("query", "positive", "negative", "type", "negative_kind")


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """The NoOverlap train split of 400 template examples, as the demo's data step takes it."""
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.splits import no_overlap, read_examples, saber_words, split

    run = tmp_path_factory.mktemp("run")
    generate(run, 400, TemplateBackend(0), progress=False)
    return no_overlap(split(read_examples(run / "examples.jsonl"), 0)["train"], saber_words(None))


@pytest.fixture(scope="module")
def rows(examples: list[Any]) -> dict[tuple[str, int], list[dict[str, Any]]]:
    return {(mix, seed): training_triplets(examples, seed, mix) for mix in MIXES for seed in (0, 1)}


def test_every_row_of_every_mix_passes_its_kind_s_rule(
    rows: dict[tuple[str, int], list[dict[str, Any]]],
) -> None:
    rejected = Counter(
        (mix, kind_of(row), r.rule)
        for (mix, _), mix_rows in rows.items()
        for row in mix_rows
        for r in validate_triplet(row, "train")
    )
    assert not rejected, rejected
    made = {kind_of(row) for mix_rows in rows.values() for row in mix_rows}
    assert made == set(ROW_KINDS), set(ROW_KINDS) ^ made  # every kind made, every made kind known
    # only the full-caption rows (splits.triplets, as `bindkit synth split` writes them) lack one
    untagged = {r["query"] for rs in rows.values() for r in rs if ROW_KIND not in r}
    assert untagged and all(len(q.split()) < 12 and q[0].islower() for q in untagged)


def test_the_row_kind_is_added_and_the_texts_the_adapter_trained_on_are_kept() -> None:
    """The digest of every mix's texts (two seeds) on 120 template examples, taken before the
    makers tagged their rows: one changed character in one row changes it."""
    import tempfile

    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.splits import read_examples

    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp, 120, TemplateBackend(0), progress=False)
        drawn = read_examples(Path(tmp) / "examples.jsonl")
    texts = [
        [{k: r[k] for k in FIELDS} for r in training_triplets(drawn, seed, mix)]
        for mix in MIXES
        # the mixes made before role scenes and seed000-1b's "full" keep their texts
        if not set(MIXES[mix]) & set(ROLE_MAKERS) and mix != "full"
        for seed in (0, 1)
    ]
    digest = hashlib.sha256(json.dumps(texts).encode()).hexdigest()
    assert digest == "cbae72d145b15191464c714911ee1f439551323c248a01b65ab9956df7ef4684"


def _first(rows: dict[tuple[str, int], list[dict[str, Any]]], kind: str) -> dict[str, Any]:
    return next(r for rs in rows.values() for r in rs if kind_of(r) == kind)


def _swapped(row: dict[str, Any], field: str) -> dict[str, Any]:
    """``row`` with the words its swap moves moved in ``field`` too (the query's word at each
    changed position becomes the negative's): ``field`` now states the negative's bindings."""
    reference = row["query"] if field != "query" else row["positive"]
    q, n = words(reference), words(row["negative"])
    mapping = {a: b for a, b in zip(q, n, strict=True) if a != b and {a, b} != {"a", "an"}}
    tokens = words(row[field])
    moved = {i: mapping[t] for i, t in enumerate(tokens) if t in mapping}
    assert moved, row
    return {**row, field: substitute(row[field], moved)}


def _listed_crossed(row: dict[str, Any]) -> dict[str, Any]:
    """A listed positive with the first attributes of its first two phrases exchanged."""
    phrases = re.split(r"(, | and )", row["positive"].rstrip("."))
    first, second = phrases[0].split(), phrases[2].split()
    first[1], second[1] = second[1], first[1]
    phrases[0], phrases[2] = " ".join(first), " ".join(second)
    return {**row, "positive": "".join(phrases) + "."}


def _one_more_change(row: dict[str, Any]) -> dict[str, Any]:
    """A relation negative that also changes what follows its last word."""
    return {**row, "negative": row["negative"].rstrip(".") + " today."}


def _replaced_by(group_of: Callable[[str], str]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A replacement (noun) row whose replacing word is ``group_of(old)`` instead."""

    def broken(row: dict[str, Any]) -> dict[str, Any]:
        q, n = words(row["query"]), words(row["negative"])
        i = next(i for i, (a, b) in enumerate(zip(q, n, strict=True)) if a != b)
        return {**row, "negative": substitute(row["negative"], {i: group_of(q[i])})}

    return broken


def _bare_keeps_one(row: dict[str, Any]) -> dict[str, Any]:
    """A bare row whose positive keeps one attribute (the omission row's positive)."""
    return {**row, "positive": without_attribute(row["query"], row["negative"], 0)}


def _other_group(word: str) -> str:
    """An everyday attribute of another group than ``word``'s (no contradiction)."""
    lists = everyday_words()
    return lists.materials[0] if word in lists.colors else lists.colors[0]


def _nouns_traded(field: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A role row whose ``field`` has its two nouns exchanged (it then says the swap)."""

    def broken(row: dict[str, Any]) -> dict[str, Any]:
        lists = role_words()
        nouns = set(lists.beings) | set(lists.things)
        tokens = words(row[field])
        i, j = [k for k, t in enumerate(tokens) if t in nouns]
        return {**row, field: substitute(row[field], {i: tokens[j], j: tokens[i]})}

    return broken


def _negative_as(change: Callable[[Action], Action], voice: str) -> Callable[..., dict[str, Any]]:
    """A role row whose negative is ``change`` of the query's action, in ``voice``."""

    def broken(row: dict[str, Any]) -> dict[str, Any]:
        meaning = read_role(row["query"])
        verb = next(v for v in role_words().verbs if v[0] == meaning.relation)
        action = Action(
            meaning.agent[0], verb, meaning.patient[0], *(meaning.agent[1:]), *(meaning.patient[1:])
        )
        changed = change(action)
        return {**row, "negative": changed.active() if voice == "active" else changed.passive()}

    return broken


# one break per kind: what it does to a valid row of that kind, and the rule that must catch it
BREAKS: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], str]] = {
    SWAP: (lambda r: {**r, "negative": r["negative"].rsplit(" ", 1)[0] + "."}, "permutation"),
    "paraphrase": (lambda r: _swapped(r, "positive"), "paraphrase"),
    "predication": (lambda r: _swapped(r, "positive"), "predication"),
    "restatement": (lambda r: _swapped(r, "positive"), "restatement"),
    "synonym": (lambda r: _swapped(r, "positive"), "synonym"),
    "relation": (_one_more_change, "relation"),
    "negation": (_one_more_change, "negation"),
    "relation_listed": (_listed_crossed, "relation_listed"),
    "negation_listed": (_listed_crossed, "negation_listed"),
    "everyday": (lambda r: _swapped(r, "positive"), "everyday"),
    "everyday_back": (lambda r: _swapped(r, "query"), "everyday_back"),
    "everyday_omission": (lambda r: _swapped(r, "positive"), "everyday_omission"),
    "everyday_bare": (_bare_keeps_one, "everyday_bare"),
    "everyday_replacement": (_replaced_by(_other_group), "everyday_replacement"),
    "everyday_noun": (_replaced_by(lambda _: everyday_words().colors[0]), "everyday_noun"),
    # a negative that is no swap, a positive or query that says the swap, a voice changed
    "role_verb": (lambda r: {**r, "negative": r["query"]}, "role_verb"),
    "role_verb_back": (_nouns_traded("positive"), "role_verb_back"),
    "role_verb_passive": (_negative_as(Action.roles_swapped, "active"), "role_verb_passive"),
    "role_relation": (_nouns_traded("positive"), "role_relation"),
    "role_relation_back": (_nouns_traded("query"), "role_relation_back"),
    "role_trait": (_negative_as(Action.roles_swapped, "active"), "role_trait"),
    "role_trait_roles": (_negative_as(Action.traits_swapped, "active"), "role_trait_roles"),
}


@pytest.mark.parametrize("kind", list(ROW_KINDS))
def test_each_kind_s_rule_rejects_a_row_broken_its_way(
    kind: str, rows: dict[tuple[str, int], list[dict[str, Any]]]
) -> None:
    row = _first(rows, kind)
    assert validate_triplet(row, "train") == []
    broken_of, rule = BREAKS[kind]
    broken = broken_of(row)
    assert broken != row
    assert [r.rule for r in validate_triplet(broken, "train")] == [rule], (broken, row)


def test_a_listed_positive_must_bind_as_the_query_does() -> None:
    """The paraphrase rule reads the bindings of the listing against the caption, for
    attributes before their object and for predicated ones."""
    query = "A red cube sat near a blue kite in a barn."
    negative = "A blue cube sat near a red kite in a barn."
    row = {"query": query, "negative": negative, "type": "pair_swap", "negative_kind": "attribute"}
    row[ROW_KIND] = "paraphrase"
    ok = {**row, "positive": "A blue kite and a red cube, in a barn."}
    assert validate_triplet(ok, "train") == []
    for positive, message in (
        ("A red kite and a blue cube, in a barn.", "the positive binds 'red' to 'kite'"),
        ("A blue kite and a red cube, in a big barn.", "the positive says 'big'"),
        ("A blue kite, in a barn.", "the positive leaves out 'red'"),
    ):
        (rejection,) = validate_triplet({**ok, "positive": positive}, "train")
        assert (rejection.rule, rejection.message[: len(message)]) == ("paraphrase", message)
    predicated = {
        **row,
        "query": "The cube was red and the kite was blue.",
        "negative": "The cube was blue and the kite was red.",
        "type": "predicative",
        "positive": "A blue kite and a red cube.",
    }
    assert validate_triplet(predicated, "train") == []
    crossed = {**predicated, "positive": "A red kite and a blue cube."}
    assert [r.message for r in validate_triplet(crossed, "train")] == [
        "the positive binds 'red' to 'kite'; the query does not"
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({ROW_KIND: "nope"}, "unknown row_kind 'nope'; use one of swap, paraphrase, "),
        ({ROW_KIND: 3}, "unknown row_kind '3'"),
        ({"type": "pair_swap"}, "type 'pair_swap': an everyday row's type is everyday"),
        ({"negative_kind": "attribute"}, "negative_kind must be 'everyday' in an everyday row"),
        ({ROW_KIND: "relation"}, "type 'everyday': a relation row's type is a construction"),
    ],
)
def test_a_row_s_schema_follows_its_kind(
    change: dict[str, Any], message: str, rows: dict[tuple[str, int], list[dict[str, Any]]]
) -> None:
    row = {**_first(rows, "everyday"), **change}
    (rejection,) = validate_triplet(row, "train")
    assert rejection.rule == "schema" and rejection.message.startswith(message), rejection


def test_a_caption_row_reading_as_held_out_is_refused_in_a_split(
    rows: dict[tuple[str, int], list[dict[str, Any]]],
) -> None:
    row = _first(rows, "paraphrase")
    query = row["query"].rstrip(".") + ", the former by the latter."
    (rejection,) = validate_triplet({**row, "query": query}, "train")
    assert rejection.rule == "heldout_in_split" and rejection.message.startswith("the query")
    assert validate_triplet({**row, "query": query}, None)  # outside a split: its own rule


def test_the_rule_tables_name_every_kind() -> None:
    assert set(BREAKS) == set(ROW_KINDS)
    assert not set(ROW_KINDS) & (set(TRIPLET_RULES) - {SWAP})


@pytest.mark.parametrize(
    ("caption", "para", "negative", "valid"),
    [
        ("a white shirt / a black cart", "a black cart / a white shirt", "a gray shirt", True),
        ("a white shirt / a black cart", "a black cart / a white shirt", "a black shirt", False),
        ("a white shirt / a black cart", "a black cart / a white shirt", "a metal shirt", False),
        ("a big shirt / a small cart", "a small cart / a big shirt", "a tiny shirt", True),
        ("a big shirt / a small cart", "a small cart / a big shirt", "a small shirt", False),
        ("a big shirt / a small cart", "a small cart / a big shirt", "a huge shirt", False),
        ("an old shirt / a new cart", "a new cart / an old shirt", "a new shirt", True),
        ("an old shirt / a new cart", "a new cart / an old shirt", "a dirty shirt", False),
    ],
)
def test_a_replaced_everyday_attribute_must_contradict_the_one_it_replaces(
    caption: str, para: str, negative: str, valid: bool
) -> None:
    """Another colour than both, a size of the opposite kind but not the other attribute, the
    opposite state (which may be the other attribute): as everyday._contradicting makes them."""
    shirt, cart = caption.split(" / ")
    by, pushed = para.split(" / ")
    query = f"A man in {shirt} is pushing {cart} in the park."
    row = {
        "query": query,
        "positive": f"In the park, {by} is being pushed by a man wearing {pushed}.",
        "negative": query.replace(shirt, negative),
        "type": "everyday",
        "negative_kind": "everyday",
        ROW_KIND: "everyday_replacement",
    }
    rules = [r.rule for r in validate_triplet(row, "train")]
    assert rules == ([] if valid else ["everyday_replacement"])


def test_synth_validate_names_the_kind_s_rule(
    tmp_path: Path, rows: dict[tuple[str, int], list[dict[str, Any]]], capsys: Any
) -> None:
    from bindkit.cli import main

    good = _first(rows, "paraphrase")
    bad = _swapped(good, "positive")
    path = tmp_path / "mine.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in (good, bad)))
    assert main(["synth", "validate", str(path)]) == 1
    captured = capsys.readouterr()
    assert "mine.jsonl:2 ?: [paraphrase] the positive binds " in captured.out
    assert "2 rows, 1 valid, 1 rejected" in captured.err
    assert f"  {'paraphrase':<18} {1:>7}  {ROW_KINDS['paraphrase']}\n" in captured.err


@pytest.mark.parametrize("kind", ["paraphrase", "predication", "restatement", "synonym"])
def test_a_caption_row_s_negative_must_be_a_permutation_of_the_query(
    kind: str, rows: dict[tuple[str, int], list[dict[str, Any]]]
) -> None:
    """A negative of the query's length that replaces a swapped word with a new one is no
    longer "the caption's own swap": the row's kind rule names it."""
    row = _first(rows, kind)
    assert validate_triplet(row, "train") == []
    q, n = words(row["query"]), words(row["negative"])
    changed = [i for i, (a, b) in enumerate(zip(q, n, strict=True)) if a != b]
    new = next(w for w in ("green", "purple", "wooden", "tiny") if w not in q)
    broken = {**row, "negative": substitute(row["negative"], {changed[-1]: new})}
    assert len(words(broken["negative"])) == len(q) and broken["negative"] != row["negative"]
    assert [(r.rule, r.message) for r in validate_triplet(broken, "train")] == [
        (kind, "the negative is not a permutation of the query")
    ], broken
