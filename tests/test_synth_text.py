"""Template text (#22.4): registers as the seed lists them, distractors woven in several
positions, no filler residue (over 10,000 captions), and NoOverlap on every word (#22.2)."""

from __future__ import annotations

import itertools
import json
import re
from collections import Counter
from pathlib import Path

import pytest

from bindkit.synth import run
from bindkit.synth.backends.template import CLAUSES, PIECES, PLACES, SPOTS, TIMES, TemplateBackend
from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.controls import read_lines
from bindkit.synth.diversity import Controller
from bindkit.synth.example import Example
from bindkit.synth.splits import SPLITS_JSON, example_words, overlaps, read_examples, saber_words
from bindkit.synth.text import words

PREPOSITIONS = {"near", "beside", "behind", "opposite", "on", "in", "at", "under", "by", "next"}


@pytest.fixture(scope="module")
def captions() -> list[Example]:
    """10,000 template captions for the plans a run makes (validation aside)."""
    controller = Controller()
    backend = TemplateBackend(seed=0)
    kinds = sorted(CONSTRUCTIONS)  # every type in turn (unadmitted plans would all be one type)
    return [
        backend.produce(controller.plan(attempt, 0, kinds[attempt % len(kinds)]))
        for attempt in range(10_000)
    ]


def _count(phrase: str, text: str) -> int:
    return len(re.findall(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", text.lower()))


def test_no_filler_residue_in_10000_captions(captions: list[Example]) -> None:
    problems: Counter[str] = Counter()
    example: dict[str, str] = {}

    def bad(kind: str, text: str) -> None:
        problems[kind] += 1
        example.setdefault(kind, text)

    for ex in captions:
        text, tokens = ex.positive, words(ex.positive)
        if any(_count(p, text) > 1 for p in PIECES if len(p.split()) > 1):
            bad("a filler piece twice", text)
        if sum(_count(t, text) for t in TIMES) > 1:
            bad("two time adverbials", text)
        if sum(_count(c, text) for c in CLAUSES) > 2:
            bad("more than two clauses", text)
        for a, b in itertools.pairwise(tokens):
            if a == b:
                bad("a word twice in a row", text)
            if a == "nearby" and b in PREPOSITIONS:  # "nearby near a ...", "close by near"
                bad(f"'{a} {b}'", text)
            if a in SPOTS and b in SPOTS:  # "upstairs downstairs"
                bad(f"'{a} {b}'", text)
        if re.search(r"\bclose by (near|beside|behind|opposite|on|in|at|by)\b", text):
            bad("'close by' before a preposition", text)
        objects = [*ex.objects, *(o for _, o in ex.distractors)]
        attributes = {*ex.attributes, *(a for a, _ in ex.distractors)}
        for obj in objects:
            i = tokens.index(obj) - 1
            while i >= 0 and tokens[i] in attributes:
                i -= 1
            if i < 0 or tokens[i] not in ("a", "an", "the"):
                bad("a noun phrase without an article", text)
    assert not problems, (problems, example)


def test_one_word_places_are_few(captions: list[Example]) -> None:
    for ex in captions[:3000]:
        spots = [t for t in words(ex.positive) if t in SPOTS and t != "there"]
        assert len(spots) <= 2 and len(set(spots)) == len(spots), ex.positive


def test_registers_appear_as_the_seed_lists_them(captions: list[Example]) -> None:
    registers = read_lines("registers.txt")
    assert len(registers) == 32
    assert {"news caption", "field notebook", "auction listing", "maintenance log"} <= set(
        registers
    )
    claimed = [ex for ex in captions if ex.targets.get("register")]
    for ex in claimed:
        assert ex.targets["register"] in ex.positive, ex.positive
    assert len(claimed) > 0.5 * len(captions)
    assert {ex.targets["register"] for ex in claimed} == set(registers)
    for ex in captions:
        if not ex.targets.get("register"):
            assert not any(f" {r}" in ex.positive for r in registers), ex.positive


def test_distractors_are_woven_in_several_positions(captions: list[Example]) -> None:
    positions: Counter[str] = Counter()
    for ex in captions:
        tokens = words(ex.positive)
        core = [tokens.index(w) for w in ex.vocabulary()]
        sentences = ex.positive.split(". ")
        for a, o in ex.distractors:
            at = tokens.index(o)
            if any(f"{a} {o}" in s and "stood nearby" in s for s in sentences[1:]):
                positions["closing sentence"] += 1
            elif at < min(core):
                positions["before the core"] += 1
            elif at < max(core):
                positions["between core phrases"] += 1
                positions[f"between, {ex.type}"] += 1
            else:
                positions["after the core"] += 1
    main = ("closing sentence", "before the core", "between core phrases", "after the core")
    total = sum(positions[p] for p in main)
    assert min(positions[p] for p in main) > 0.05 * total, positions
    # inside pair_swap's verb gap, and closing a predicative caption's first clause
    assert positions["between, pair_swap"] and positions["between, predicative"], positions


@pytest.fixture(scope="module")
def ablation_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("overlap") / "run"
    run(out, 1500, seed=4, progress=False, exclude_vocab="builtin")
    return out


def test_no_overlap_looks_at_every_word_of_every_caption(ablation_run: Path) -> None:
    items = saber_words(None)
    assert "teddy bear" in items and "teddy" not in items  # a two-word object is one item
    examples = {ex.positive: ex for ex in read_examples(ablation_run / "examples.jsonl")}
    rows = [
        json.loads(x) for x in (ablation_run / "no_overlap/train.jsonl").read_text().splitlines()
    ]
    for row in rows:
        texts = (row["query"], row["positive"], row["negative"])
        grams = {
            " ".join(t[i : i + n])
            for t in map(words, texts)
            for n in (1, 2, 3)
            for i in range(len(t))
        }
        assert not grams & items, row["positive"]
        assert not overlaps(examples[row["positive"]], items)
    # a SABER word anywhere (context, filler) counts, not only in declared pairs
    ex = next(e for e in examples.values() if e.type == "pair_swap" and not overlaps(e, items))
    planted = Example.from_json(
        dict(ex.to_json(), positive=ex.positive[:-1] + " by the teddy bear."), "x"
    )
    assert overlaps(planted, items) and "teddy bear" in example_words(planted)
    assert not overlaps(planted, items - {"teddy bear"})


def test_no_overlap_keeps_at_least_half_of_train_and_the_pools_are_reported(
    ablation_run: Path,
) -> None:
    summary = json.loads((ablation_run / SPLITS_JSON).read_text())
    sizes = summary["examples_per_split"]
    assert sizes["no_overlap_pool"] + sizes["overlap_only_pool"] == sizes["train"]
    assert sizes["no_overlap_pool"] >= 0.5 * sizes["train"]
    assert (
        sizes["no_overlap"]
        == sizes["random"]
        == sizes["overlap_only"]
        == sizes["overlap_only_pool"]
    )
    assert sizes["overlap_only_pool"] >= 0.2 * sizes["train"]  # OverlapOnly is not starved


def test_template_vocabulary_is_mostly_outside_saber() -> None:
    items = saber_words(None)
    nouns = " ".join(read_lines("template_objects.txt")).split()
    shared = [n for n in nouns if n in items]
    assert 0 < len(shared) <= 0.1 * len(nouns)
    pieces = [
        *PIECES,
        *read_lines("scenes.txt"),
        *read_lines("times.txt"),
        *read_lines("weather.txt"),
    ]
    for text in pieces:
        tokens = words(text)
        grams = {" ".join(tokens[i : i + n]) for n in (1, 2, 3) for i in range(len(tokens))}
        assert not grams & items, text
    assert all(p not in items for p in PLACES)


def test_a_filler_uses_another_kind_before_repeating_a_piece() -> None:
    """Many short fillers in one caption: once the places of a length are used, other kinds
    of the same length come before a repeated place ("in storage ... in storage")."""
    import random

    from bindkit.synth.backends.template import Filler

    for seed in range(50):
        fill = Filler(random.Random(seed))
        text = " ".join(" ".join(fill(n, place=True)) for n in (2, 2, 2, 2, 2, 10, 10))
        repeated = [p for p in PIECES if len(p.split()) > 1 and _count(p, text) > 1]
        assert not repeated, (seed, text)
