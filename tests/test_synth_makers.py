"""The recipe's row makers in bindkit.synth: rewordings and their triplets (augment), everyday
scenes (everyday), preservation sets (preservation) and the named mixes (mixes)."""

from __future__ import annotations

import ast
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bindkit.errors import BindkitError
from bindkit.synth.augment import (
    NEGATIONS,
    RELATION_CONTRASTS,
    RELATION_SYNONYMS,
    filler_free,
    list_triplets,
    paraphrase_triplets,
    predication_triplets,
    relation_triplets,
    restatement_triplets,
    synonym_triplets,
)
from bindkit.synth.everyday import (
    everyday_scene,
    everyday_triplets,
    everyday_words,
    with_attribute_replaced,
    with_object_replaced,
    without_attribute,
    without_attributes,
)
from bindkit.synth.mixes import KIND_TEXT, MIXES, training_triplets
from bindkit.synth.preservation import (
    PRESERVATION_SETS,
    context_sentences,
    described_sentences,
    generic_sentences,
    preservation_sentences,
)


def _examples(n: int) -> list[Any]:
    import tempfile

    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.splits import read_examples

    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp, n, TemplateBackend(0), progress=False)
        return read_examples(Path(tmp) / "examples.jsonl")


def _pairs(text: str) -> Counter[tuple[str, ...]]:
    """The (attributes..., object) groups of a list phrase, attribute order ignored."""
    groups = re.split(r",\s+|\s+and\s+(?=an?\s)", text)
    out: Counter[tuple[str, ...]] = Counter()
    for group in groups:
        words = group.split()[1:]  # drop the article
        out[(*sorted(words[:-1]), words[-1])] += 1
    return out


def _grouped(pairs: list[tuple[str, str]]) -> Counter[tuple[str, ...]]:
    by_object: dict[str, list[str]] = {}
    for attribute, obj in pairs:
        by_object.setdefault(obj, []).append(attribute)
    return Counter(
        (*sorted(a for x in attrs for a in x.split()), o) for o, attrs in by_object.items()
    )


def test_list_triplets_keep_bindings_and_swap_them() -> None:
    examples = [e for e in _examples(40) if e.intended]
    rows = list_triplets(examples, seed=3)
    assert len(rows) == 2 * len(examples)
    for example, pair in zip(examples, zip(rows[::2], rows[1::2], strict=True), strict=True):
        for row, kind in zip(pair, ("attribute", "object"), strict=True):
            assert row["query"] == example.query and row["negative_kind"] == kind
            assert row["type"] == example.type
            # the positive lists exactly the example's bindings, the negative its swap
            assert _pairs(row["positive"]) == _grouped(example.bindings), row
            assert _pairs(row["negative"]) == _grouped(example.intended[kind]), row
            assert row["positive"] != row["query"]  # always listed in another order
            assert row["positive"] != row["negative"]
    assert list_triplets(examples, seed=3) == rows
    assert list_triplets(examples, seed=4) != rows


def test_paraphrase_triplets_reword_the_caption_and_keep_its_swap() -> None:
    examples = [e for e in _examples(40) if e.negatives]
    rows = paraphrase_triplets(examples, seed=3)
    assert len(rows) == 2 * len(examples)
    for example, pair in zip(examples, zip(rows[::2], rows[1::2], strict=True), strict=True):
        for row, kind in zip(pair, ("attribute", "object"), strict=True):
            assert row["query"] == example.positive and row["negative_kind"] == kind
            # the negative is the caption's own swap; the positive names every pair, in words
            # other than the caption's, and the caption's scene
            assert row["negative"] == example.negatives[kind]
            listed, _, scene = row["positive"].rstrip(".").partition(", in ")
            listed = listed[0].lower() + listed[1:]
            assert _pairs(listed) == _grouped([*example.bindings, *example.distractors]), row
            assert scene == (example.targets.get("context") or ""), row
            assert row["positive"] != example.positive
    assert paraphrase_triplets(examples, seed=3) == rows
    assert paraphrase_triplets(examples, seed=4) != rows


def test_restatement_triplets_keep_every_other_word_and_state_the_bindings() -> None:
    examples = [e for e in _examples(60) if e.negatives]
    rows = restatement_triplets(examples)
    kept = [e for e in examples if e.type != "predicative" and "deferred" not in e.type]
    assert len(rows) == 2 * len(kept) > 0
    for example, row in zip(kept, rows[::2], strict=True):
        assert row["query"] == example.positive
        assert row["negative"] == example.negatives["attribute"]
        body, _, stated = row["positive"].rstrip(".").rpartition(". ")
        attributes = {a for a, _ in example.bindings}
        caption = re.findall(r"\w+", example.positive.lower())
        # the caption's words in order, less its queried attributes (articles may change)
        want = [w for w in caption if w not in attributes and w not in ("a", "an")]
        got = [w for w in re.findall(r"\w+", body.lower()) if w not in ("a", "an")]
        assert got == want, row
        for attribute, obj in example.bindings:
            assert re.search(rf"\bthe {obj} is (\w+ and )*{attribute}\b", stated.lower()), row
        for article, word in re.findall(r"\b(an?) (\w+)", body.lower()):
            assert article == ("an" if word[0] in "aeiou" else "a") or word[0] in "hu", row


def test_relation_triplets_drop_asides_and_contradict_one_relation() -> None:
    from bindkit.synth.backends.template import CLAUSES, SPOTS, TIMES

    examples = _examples(80)
    rows = relation_triplets(examples, seed=3)
    assert len(rows) > len(examples) // 4
    by_caption = {e.positive: e for e in examples}
    asides = {w for piece in (*CLAUSES, *TIMES, *SPOTS) for w in piece.split()}
    for row in rows:
        example = by_caption[row["query"]]
        assert row["negative_kind"] == "relation" and row["type"] == example.type
        assert row["positive"] == filler_free(example)
        query, positive = (re.findall(r"\w+", row[k].lower()) for k in ("query", "positive"))
        # the positive is the query less some of its words, all of them asides or the scene
        rest = iter(query)
        assert all(word in rest for word in positive), row
        context = set((example.targets.get("context") or "").split()) | {"in", "on", "at"}
        assert set(query) - set(positive) <= asides | context, row
        # the negative is the query with exactly one relation replaced by its contrast
        changed = [
            (old, new)
            for old, new in RELATION_CONTRASTS.items()
            if row["negative"] == _replace_one(row["query"], old, new, row["negative"])
        ]
        assert changed, row
        assert any(re.search(rf"\b{old}\b", row["positive"]) for old, _ in changed), row
        for attribute, obj in example.bindings:  # bindings untouched on all three sides
            for side in ("query", "positive", "negative"):
                assert obj in row[side] and attribute in row[side], (side, row)
    assert relation_triplets(examples, seed=3) == rows
    assert relation_triplets(examples, seed=4) != rows


@pytest.mark.parametrize("negate", [False, True])
def test_listed_relation_triplets_take_the_paraphrase_as_positive(negate: bool) -> None:
    examples = _examples(80)
    rows = relation_triplets(examples, seed=3, negate=negate, listed=True)
    plain = relation_triplets(examples, seed=3, negate=negate)
    assert [r["query"] for r in rows] == [r["query"] for r in plain] and rows
    by_caption = {e.positive: e for e in examples}
    contrasts = NEGATIONS if negate else RELATION_CONTRASTS
    for row in rows:
        example = by_caption[row["query"]]
        assert row["negative_kind"] == ("negation" if negate else "relation")
        # the positive lists every pair (distractors too) in the caption's scene
        listed, _, scene = row["positive"].rstrip(".").partition(", in ")
        listed = listed[0].lower() + listed[1:]
        assert _pairs(listed) == _grouped([*example.bindings, *example.distractors]), row
        assert scene == (example.targets.get("context") or ""), row
        # the negative: the caption with one relation (or verb) contradicted
        assert any(
            _replace_one(row["query"], old, new, row["negative"]) for old, new in contrasts.items()
        ), row


def _replace_one(text: str, old: str, new: str, want: str) -> str | None:
    """``want`` if replacing one whole-word occurrence of ``old`` in ``text`` gives it."""
    for match in re.finditer(rf"\b{re.escape(old)}\b", text):
        if text[: match.start()] + new + text[match.end() :] == want:
            return want
    return None


def test_predication_triplets_state_every_binding_of_its_object() -> None:
    examples = [e for e in _examples(40) if e.negatives]
    rows = predication_triplets(examples, seed=3)
    assert len(rows) == 2 * len(examples)
    for example, row in zip(examples, rows[::2], strict=True):
        assert row["query"] == example.positive
        assert row["negative"] == example.negatives["attribute"]
        stated = row["positive"].lower()
        for attribute, obj in [*example.bindings, *example.distractors]:
            # "the map was dry" or "the map dry" (or "the map soft and dry")
            assert re.search(rf"\bthe {obj} (was )?(\w+ and )*{attribute}\b", stated), row
    assert predication_triplets(examples, seed=3) == rows
    assert predication_triplets(examples, seed=4) != rows


def test_synonym_triplets_reword_every_relation_and_keep_the_swap() -> None:
    examples = [e for e in _examples(60) if e.negatives]
    rows = synonym_triplets(examples, seed=3)
    assert len(rows) >= len(examples)
    by_caption = {e.positive: e for e in examples}
    for row in rows:
        example = by_caption[row["query"]]
        assert row["negative"] == example.negatives[row["negative_kind"]]
        base = filler_free(example) or example.positive
        # the positive is the filler-free caption with each relation word replaced by a synonym
        pattern = r"\b(" + "|".join(sorted(RELATION_SYNONYMS, key=len, reverse=True)) + r")\b"
        parts = re.split(pattern, base)
        assert len(parts) > 1, row
        rebuilt = re.escape(parts[0])
        for word, text in zip(parts[1::2], parts[2::2], strict=True):
            rebuilt += "(" + "|".join(map(re.escape, RELATION_SYNONYMS[word])) + ")"
            rebuilt += re.escape(text)
        assert re.fullmatch(rebuilt, row["positive"]), row


def test_generic_sentences_have_no_attributes_and_are_seeded() -> None:
    from bindkit.saber.vocab import load_vocabulary

    sentences = generic_sentences(300, seed=1)
    assert len(set(sentences)) == 300 and generic_sentences(300, seed=1) == sentences
    assert generic_sentences(300, seed=2) != sentences
    listed = Path(__file__).parents[1] / "src/bindkit/synth/data/adjectives.txt"
    lines = [x for x in listed.read_text().splitlines() if not x.startswith(("#", "["))]
    adjectives = {w for x in lines for w in x.split()} | {"old", "young"}
    adjectives |= {a.name for a in load_vocabulary(None).attributes}
    adjectives -= {"peeling"}  # listed as an adjective ("peeling paint"); a verb here
    for sentence in sentences:
        assert sentence[0].isupper() and sentence.endswith(".")
        assert not set(re.findall(r"\w+", sentence.lower())) & adjectives, sentence
    assert any(" not " in s for s in sentences) and any(" while " in s for s in sentences)


def test_described_sentences_describe_one_thing_with_one_attribute() -> None:
    words = everyday_words()

    sentences = described_sentences(300, seed=1)
    assert len(set(sentences)) == 300 and described_sentences(300, seed=1) == sentences
    assert described_sentences(300, seed=2) != sentences
    attributes = set(words.colors + words.materials)
    attributes |= set(words.big + words.small)
    attributes |= {w for pair in words.states for w in pair}
    negated = 0
    for sentence in sentences:
        words = re.findall(r"\w+", sentence.lower())
        assert sentence[0].isupper() and sentence.endswith("."), sentence
        assert len([w for w in words if w in attributes]) == 1, sentence  # no binding to swap
        for article, word in re.findall(r"\b([Aa]n?) (\w)", sentence):
            assert (article.lower() == "an") == (word in "aeiou"), sentence
        negated += " not " in sentence
    assert 10 < negated < 60  # about one in ten


def test_ctxgen_d_adds_as_many_described_sentences() -> None:
    examples = _examples(60)
    ctxgen = preservation_sentences(examples, "ctxgen")
    with_described = preservation_sentences(examples, "ctxgenD")
    assert len(with_described) == len(ctxgen) * 3 // 2
    assert set(ctxgen) < set(with_described)
    assert set(with_described) - set(ctxgen) == set(described_sentences(len(ctxgen) // 2))


def test_context_sentences_are_the_captions_scenes() -> None:
    examples = _examples(60)
    sentences = context_sentences(examples)
    contexts = {e.targets.get("context") for e in examples} - {None}
    assert len(sentences) == len(contexts) > 0
    for sentence in sentences:
        assert sentence.endswith(".") and sentence[0].isupper()
        assert sentence[0].lower() + sentence[1:-1] in contexts
    attributes = {a for e in examples for a, _ in e.bindings}
    for sentence in sentences:  # no binding in them: no queried attribute at all
        assert not set(sentence.lower().rstrip(".").split()) & attributes, sentence


def _grams(text: str) -> set[str]:
    words = re.findall(r"[a-z-]+", text.lower())
    return {" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)}


def test_everyday_scenes_swap_two_contradicting_attributes_and_reorder_the_paraphrase() -> None:
    import random

    words = everyday_words()

    rng = random.Random(0)
    for _ in range(300):
        caption, para, swap = everyday_scene(rng)
        assert caption != swap
        assert Counter(caption.lower().split()) == Counter(swap.lower().split())
        changed = [a for a, b in zip(caption.split(), swap.split(), strict=True) if a != b]
        changed = [w for w in changed if w.lower() not in ("a", "an")]  # articles follow
        first, second = changed  # exactly the two attribute slots trade places
        pair = {first, second}
        assert pair <= set(words.colors) or any(
            pair <= set(group)
            for group in (
                *words.states,
                (*words.big, *words.small),
                words.materials,
            )
        ), pair
        if pair <= {*words.big, *words.small}:
            assert len(pair & set(words.big)) == 1  # never two near-synonyms
        assert {first, second} <= set(para.rstrip(".").replace(",", "").split())
        assert Counter(para.lower().split()) != Counter(caption.lower().split())


def test_everyday_paraphrases_keep_the_bindings_the_swap_breaks() -> None:
    import random

    rng = random.Random(1)
    for _ in range(200):
        caption, para, swap = everyday_scene(rng)
        a, b = (
            w
            for w, v in zip(caption.split(), swap.split(), strict=True)
            if w != v and w.lower() not in ("a", "an")
        )
        subject_noun = caption.split()[caption.split().index(a) + 1]  # "white shirt"/"white dog"
        thing = caption.split()[caption.split().index(b) + 1]
        text = para.rstrip(".").replace(",", "")
        assert re.search(rf"\b{a} {subject_noun}\b|\b{subject_noun} that is {a}\b", text), para
        assert re.search(rf"\b{b} {thing}\b|\b{thing} that is {b}\b", text), para
        assert not re.search(rf"\b{b} {subject_noun}\b|\b{a} {thing}\b", text), para


def test_everyday_triplets_run_both_directions_without_saber_words() -> None:
    from bindkit.synth.splits import saber_words

    rows = everyday_triplets(400, seed=3)
    assert len(rows) == 800 and len({r["query"] for r in rows[::2]}) == 400
    for there, back in zip(rows[::2], rows[1::2], strict=True):
        assert (there["query"], there["positive"]) == (back["positive"], back["query"])
        assert there["negative"] == back["negative"] != there["query"]
    vocabulary = saber_words(None)
    assert not {
        g for r in rows for k in ("query", "positive", "negative") for g in _grams(r[k])
    } & (vocabulary)
    assert everyday_triplets(50, seed=3) == everyday_triplets(50, seed=3)
    assert everyday_triplets(50, seed=3) != everyday_triplets(50, seed=4)


def test_omission_rows_drop_one_swapped_attribute_and_fit_the_article() -> None:
    rows = everyday_triplets(300, seed=5, omit=True)
    assert len(rows) == 900
    plain = everyday_triplets(300, seed=5)
    assert [r for i, r in enumerate(rows) if i % 3 != 2] == plain  # the other rows unchanged
    dropped = Counter()
    for row in rows[2::3]:
        caption, shorter, swap = row["query"], row["positive"], row["negative"]
        left = Counter(caption.lower().split()) - Counter(shorter.lower().split())
        (word,) = [w for w in left if w not in ("a", "an")]  # one attribute, nothing else
        assert word in set(caption.split()) - {"a", "an"} and word not in shorter.split()
        assert Counter(caption.split()) != Counter(swap.split()) or caption != swap
        for article, noun in re.findall(r"\b([Aa]n?) (\w)", shorter):
            assert (article.lower() == "an") == (noun in "aeiou"), shorter
        first = [w for w, v in zip(caption.split(), swap.split(), strict=True) if w != v]
        first = [w for w in first if w.lower() not in ("a", "an")]
        dropped[first.index(word)] += 1
    assert dropped[0] > 100 and dropped[1] > 100  # either attribute, at random


def test_without_attribute_fits_the_article_of_the_next_word() -> None:
    caption = "An orange goat is watching an old barrel."
    swap = "An old goat is watching an orange barrel."
    assert without_attribute(caption, swap, 0) == "A goat is watching an old barrel."
    assert without_attribute(caption, swap, 1) == "An orange goat is watching a barrel."


def test_replacement_rows_contradict_one_attribute_and_keep_the_paraphrase() -> None:
    words = everyday_words()

    rows = everyday_triplets(300, seed=6, omit=True, replace=True)
    assert len(rows) == 1200
    assert [r for i, r in enumerate(rows) if i % 4 != 3] == everyday_triplets(300, 6, omit=True)
    sizes = (set(words.big), set(words.small))
    which = Counter()
    for there, row in zip(rows[::4], rows[3::4], strict=True):
        caption, para, changed = row["query"], row["positive"], row["negative"]
        assert (caption, para) == (there["query"], there["positive"])
        diff = [
            (a, b)
            for a, b in zip(caption.split(), changed.split(), strict=True)
            if a != b and a.lower() not in ("a", "an")
        ]
        ((old, new),) = diff  # one attribute, in place
        swapped = [
            w
            for w, v in zip(caption.split(), there["negative"].split(), strict=True)
            if w != v and w.lower() not in ("a", "an")
        ]
        which[swapped.index(old)] += 1
        if old in words.colors:
            assert new in words.colors and new not in swapped
        elif any(old in group for group in sizes):
            assert not any({old, new} <= group for group in sizes)  # the opposite size
        elif old in words.materials:
            assert new in words.materials and new not in swapped
        else:
            assert (old, new) in words.states or (new, old) in (words.states)
        for article, noun in re.findall(r"\b([Aa]n?) (\w)", changed):
            assert (article.lower() == "an") == (noun in "aeiou"), changed
    assert which[0] > 100 and which[1] > 100


def test_with_attribute_replaced_contradicts_the_chosen_attribute() -> None:
    import random

    caption = "A man in an old shirt is pushing a new cart."
    swap = "A man in a new shirt is pushing an old cart."
    rng = random.Random(0)
    assert with_attribute_replaced(caption, swap, 0, rng) == (
        "A man in a new shirt is pushing a new cart."
    )
    assert with_attribute_replaced(caption, swap, 1, rng) == (
        "A man in an old shirt is pushing an old cart."
    )


def test_bare_and_noun_rows_follow_the_replacement_rows_and_leave_them_unchanged() -> None:
    words = everyday_words()

    base = everyday_triplets(300, seed=7, omit=True, replace=True)
    rows = everyday_triplets(300, seed=7, omit=True, replace=True, bare=True, replace_object=True)
    assert len(rows) == 1800
    assert [r for i, r in enumerate(rows) if i % 6 < 4] == base
    nouns = [set(group) for group in words.nouns]
    groups = Counter()
    for there, bare, noun in zip(rows[::6], rows[4::6], rows[5::6], strict=True):
        caption, swap = there["query"], there["negative"]
        # bare: the caption with exactly its two swapped attributes gone, the swap as negative
        assert (bare["query"], bare["negative"]) == (caption, swap)
        left = Counter(caption.lower().split()) - Counter(bare["positive"].lower().split())
        swapped = {
            w.lower()
            for w, v in zip(caption.split(), swap.split(), strict=True)
            if w != v and w.lower() not in ("a", "an")
        }
        assert {w for w in left if w not in ("a", "an")} == swapped
        assert sum(left[w] for w in swapped) == 2
        # noun: the paraphrase as positive, one noun replaced by another of its group
        assert (noun["query"], noun["positive"]) == (caption, there["positive"])
        diff = [
            (a.strip(".").lower(), b.strip(".").lower())
            for a, b in zip(caption.split(), noun["negative"].split(), strict=True)
            if a != b
        ]
        ((old, new),) = [(a, b) for a, b in diff if a not in ("a", "an")]
        (group,) = [i for i, g in enumerate(nouns) if old in g]
        assert new in nouns[group] and new not in caption.lower().split()
        groups[group] += 1
        for text in (bare["positive"], noun["negative"]):
            for article, word in re.findall(r"\b([Aa]n?) (\w)", text):
                assert (article.lower() == "an") == (word in "aeiou"), text
    assert min(groups.values()) > 20 and len(groups) == 4  # every kind of noun, at random


def test_without_attributes_and_with_object_replaced_fit_the_articles() -> None:
    import random

    caption = "An orange goat is watching an old barrel."
    swap = "An old goat is watching an orange barrel."
    assert without_attributes(caption, swap) == "A goat is watching a barrel."
    assert with_object_replaced("A dog is chasing a white ball in the park.", random.Random(1)) == (
        "A horse is chasing a white ball in the park."
    )
    replaced = {
        with_object_replaced("A girl in a shirt is washing a bin.", random.Random(i))
        for i in range(40)
    }
    assert all(text.startswith(("A ", "An ")) and text.endswith(".") for text in replaced)
    assert all(
        (article.lower() == "an") == (word in "aeiou")
        for text in replaced
        for article, word in re.findall(r"\b([Aa]n?) (\w)", text)
    )


def test_every_mix_is_described_and_h_keeps_every_second_negation_row() -> None:
    assert all(kind in KIND_TEXT for kinds in MIXES.values() for kind in kinds if kind != "full")
    examples = [e for e in _examples(60) if e.negatives]
    every = relation_triplets(examples, 0, negate=True, listed=True)
    half = [r for r in training_triplets(examples, 0, "fullpararelneghLEOR") if r in every]
    full = [r for r in training_triplets(examples, 0, "fullpararelnegLEOR") if r in every]
    assert half and all(every.index(r) % 2 == 0 for r in half)
    assert len(half) < 0.75 * len(full)


def test_the_word_lists_keep_the_rows_the_demo_trained_on() -> None:
    """The lists moved from demo/finetune.py into data/everyday.toml in their order: these
    hashes were taken from the tuples before the move (one reordered word changes them)."""
    import hashlib
    import json

    def digest(value: Any) -> str:
        return hashlib.sha256(json.dumps(value).encode()).hexdigest()

    rows = everyday_triplets(60, 0, omit=True, replace=True, bare=True, replace_object=True)
    kinds = Counter(row.pop("row_kind") for row in rows)  # added since: the texts are kept
    assert set(kinds) == {
        "everyday",
        "everyday_back",
        "everyday_omission",
        "everyday_replacement",
        "everyday_bare",
        "everyday_noun",
    }
    assert digest(rows) == "0c9b5eaea0fffe04fec0d05a10ed370f342e624fb619f368c27432662c7e6cc6"
    assert digest(generic_sentences(60, 0)) == (
        "ffc591201311507d19be58a513bae60dba95093188d119103ce78db261fc8d19"
    )
    assert digest(described_sentences(60, 0)) == (
        "0bc4a0ee65f0bb17ae906e943295c4b6ba16303ecbd16fc957ce8ca656c0af49"
    )
    words = everyday_words()
    assert words.animal_actions == words.actions[6:11]  # watching … kicking, as before
    assert everyday_words() is words  # read once


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            ("colors = [", "colors = [1, "),
            "everyday.toml: colors must be a non-empty list of words",
        ),
        (('big = ["large", "big", "tall", "huge"]', "big = []"), "everyday.toml: big must be a "),
        (('["old", "new"]', '["old"]'), "everyday.toml: states must be a non-empty list of [word"),
        (('"watching", "chasing"', '"watching", "flying"'), "animal_actions must name [scene]"),
    ],
)
def test_a_broken_word_list_is_one_line(edit: tuple[str, str], message: str) -> None:
    from importlib.resources import files

    from bindkit.synth.everyday import read_words

    text = files("bindkit.synth").joinpath("data/everyday.toml").read_text("utf-8")
    assert edit[0] in text
    with pytest.raises(BindkitError, match=re.escape(message)):
        read_words(text.replace(edit[0], edit[1], 1))


def test_a_mix_is_always_named_and_unknown_names_are_refused() -> None:
    examples = [e for e in _examples(20) if e.negatives]
    with pytest.raises(TypeError):
        training_triplets(examples, 0)  # type: ignore[call-arg]  # no default: the recipe's
    with pytest.raises(BindkitError, match="mix 'nope': use one of fullpara, "):
        training_triplets(examples, 0, "nope")
    with pytest.raises(BindkitError, match="preservation set 'nope': use one of contexts, "):
        preservation_sentences(examples, "nope")
    assert all(preservation_sentences(examples, kind) for kind in PRESERVATION_SETS)


def test_the_makers_import_nothing_above_synth() -> None:
    """synth is layer 2 (docs/ARCHITECTURE.md): the makers the demo, sweep and search share
    import errors, _io, saber and synth only, never the demo or train that use them."""
    allowed = ("bindkit.errors", "bindkit._io", "bindkit.saber", "bindkit.synth")
    root = Path(__file__).parents[1] / "src/bindkit/synth"
    for name in ("augment", "everyday", "preservation", "mixes"):
        tree = ast.parse((root / f"{name}.py").read_text(encoding="utf-8"))
        imported = [
            node.module if isinstance(node, ast.ImportFrom) else alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
            if not (isinstance(node, ast.ImportFrom) and node.module == "bindkit")
            or alias.name != "__version__"  # the package face's one name any module may read
        ]
        bindkit = [m for m in imported if m and m.split(".")[0] == "bindkit"]
        assert bindkit, name
        above = [m for m in bindkit if not any(m == a or m.startswith(a + ".") for a in allowed)]
        assert not above, (name, above)


def test_a_synth_run_identity_leaves_the_recipe_words_out() -> None:
    """No generated example is made from everyday.toml, so adding or editing it must not
    refuse the resume of a `bindkit synth generate` run started before."""
    from importlib.resources import files

    from bindkit._io import sha256_bytes
    from bindkit.synth.command import _synth_data_hashes

    root = files("bindkit.synth").joinpath("data")
    names = sorted(p.name for p in root.iterdir() if p.is_file())
    assert "everyday.toml" in names
    lines = [f"{n}:{sha256_bytes(root.joinpath(n).read_bytes())}" for n in names]
    without = [line for line in lines if not line.startswith("everyday.toml:")]
    assert _synth_data_hashes()["data_sha256"] == sha256_bytes("\n".join(without).encode())
