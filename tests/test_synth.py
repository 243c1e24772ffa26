"""Synthetic binding data: template backend, validator rules, controls, resumable generation,
splits and triplets."""

from __future__ import annotations

import copy
import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.synth.backends.template import TemplateBackend
from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.diversity import Controller
from bindkit.synth.example import Example, complete
from bindkit.synth.example_rules import RULES, validate_example
from bindkit.synth.generate import EXAMPLES, REJECTED, generate
from bindkit.synth.splits import no_overlap, read_examples, saber_words, split, write_splits
from bindkit.synth.text import bag, permute_words, words
from bindkit.synth.validate import validate_file


def make(attempt: int, seed: int = 0, kind: str | None = None) -> Example:
    plan = Controller().plan(attempt, seed, kind)
    return complete(TemplateBackend(seed).produce(plan), random.Random(attempt))


@pytest.fixture(scope="module")
def by_type() -> dict[str, Example]:
    return {kind: make(7, kind=kind) for kind in CONSTRUCTIONS}


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    attempt=st.integers(0, 100_000),
    kind=st.sampled_from(sorted(CONSTRUCTIONS)),
)
def test_template_examples_pass_the_validator(seed: int, attempt: int, kind: str) -> None:
    ex = make(attempt, seed, kind)
    assert ex.type == kind
    assert validate_example(ex) == [], (ex.type, ex.positive)
    for kind in ("attribute", "object"):
        negative = ex.negatives[kind]
        assert bag(negative) == bag(ex.positive)  # an exact word-level permutation
        assert negative != ex.positive
    assert ex.negatives["attribute"] != ex.negatives["object"]


def test_every_type_has_the_seed_structure(by_type: dict[str, Example]) -> None:
    cycle = by_type["triple_bind_cycle"]
    assert not set(cycle.intended["attribute"]) & set(cycle.bindings)  # all three broken
    swap = by_type["triple_bind_swap"]
    assert len(set(swap.intended["attribute"]) & set(swap.bindings)) == 1  # one kept
    assert len(set(swap.intended["object"]) & set(swap.bindings)) == 1
    bundle = by_type["attr_bundle"]
    assert len(bundle.bindings) == 4 and len(set(bundle.slots.values())) == 2  # type: ignore[union-attr]
    assert len(set(bundle.intended["attribute"]) & set(bundle.bindings)) == 2  # one slot swapped
    assert "respectively" in by_type["deferred_bind_respective"].positive
    anaphoric = by_type["deferred_bind_anaphoric"].positive.lower()
    assert "former" in anaphoric or "first" in anaphoric


def test_article_repair_after_a_permutation() -> None:
    text = "A red envelope lay beside an orange box."
    swapped = permute_words(text, {"red": "orange", "orange": "red"})
    assert swapped == "An orange envelope lay beside a red box."
    moved = permute_words("She saw a cat and an owl.", {"cat": "owl", "owl": "cat"})
    assert moved == "She saw an owl and a cat."


def _set_positive(ex: Example, text: str) -> None:
    ex.positive = text
    complete(ex, random.Random(0))


def plant(by_type: dict[str, Example], kind: str, mutate: Any) -> Example:
    ex = copy.deepcopy(by_type[kind])
    mutate(ex)
    return ex


CASES: list[tuple[str, str, Any]] = [
    (
        "single_word",
        "pair_swap",
        lambda ex: ex.bindings.__setitem__(0, ("very red", ex.bindings[0][1])),
    ),
    (
        "distinct",
        "pair_swap",
        lambda ex: ex.bindings.__setitem__(1, (ex.bindings[0][0], ex.bindings[1][1])),
    ),
    (
        "once",
        "pair_swap",
        lambda ex: setattr(ex, "positive", ex.positive + " " + ex.bindings[0][1]),
    ),
    ("query", "pair_swap", lambda ex: setattr(ex, "query", " ".join(reversed(ex.query.split())))),
    (
        "permutation",
        "pair_swap",
        lambda ex: ex.negatives.__setitem__("attribute", ex.negatives["attribute"] + " extra"),
    ),
    (
        "negative_distinct",
        "pair_swap",
        lambda ex: ex.negatives.__setitem__("attribute", ex.positive),
    ),
    (
        "moved_words",
        "pair_swap",
        lambda ex: ex.negatives.__setitem__(
            "attribute",
            permute_words(
                ex.positive,
                {ex.bindings[0][0]: ex.bindings[1][1], ex.bindings[1][1]: ex.bindings[0][0]},
            ),
        ),
    ),
    (
        "bindings",
        "triple_bind_cycle",
        lambda ex: ex.intended.__setitem__("attribute", sorted(ex.bindings)),
    ),
    (
        "article",
        "pair_swap",
        lambda ex: ex.negatives.__setitem__("object", _break_article(ex.negatives["object"])),
    ),
    ("structure", "pair_swap", lambda ex: _set_positive(ex, _separate(ex))),
    (
        "anaphora",
        "deferred_bind_anaphoric",
        lambda ex: _set_positive(
            ex, ex.positive.replace("the former", "it", 1).replace("the first", "it", 1)
        ),
    ),
    ("length", "pair_swap", lambda ex: ex.targets.__setitem__("length_band", _other_band(ex))),
    (
        "distance",
        "pair_swap",
        lambda ex: ex.targets.__setitem__("distance_window", _other_window(ex)),
    ),
    ("declared_band", "pair_swap", lambda ex: ex.targets.__setitem__("length_band", [0, 1000])),
    (
        "declared_band",
        "deferred_bind_respective",
        lambda ex: ex.targets.__setitem__("length_band", [10, 15]),  # not a deferred band
    ),
    (
        "declared_window",
        "pair_swap",
        lambda ex: ex.targets.__setitem__("distance_window", [0, 1000]),
    ),
    (
        "punctuation",
        "pair_swap",
        lambda ex: ex.negatives.__setitem__("attribute", ex.negatives["attribute"] + "!!! ???"),
    ),
    ("agreement", "pair_swap", lambda ex: _rename(ex, ex.objects[0], "pliers")),
    ("kept_pair", "triple_bind_swap", lambda ex: _keep_another_pair(ex)),
    ("slot_swap", "attr_bundle", lambda ex: _swap_across_slots(ex)),
    ("predication", "predicative", lambda ex: _set_positive(ex, _attributive(ex))),
    ("text_bindings", "predicative", lambda ex: _swap_attributes_in_text(ex)),
    ("text_bindings", "deferred_bind_anaphoric", lambda ex: _swap_attributes_in_text(ex)),
    (
        "anaphora",
        "deferred_bind_anaphoric",
        lambda ex: _set_positive(ex, _one_and_other(ex.positive)),
    ),
    (
        "text_pairs",
        "pair_swap",
        lambda ex: _set_positive(ex, ex.positive[:-1] + " near a zesty camera."),
    ),
    ("slot_lexicon", "attr_bundle", lambda ex: _swap_slot_names(ex)),
    ("distractors", "pair_swap", lambda ex: ex.distractors.append(("zesty", "kazoo"))),
    ("distractors", "triple_bind_cycle", lambda ex: ex.distractors.append(("zesty", "kazoo"))),
    (
        "once",
        "pair_swap",
        lambda ex: _set_positive(ex, ex.positive[:-1] + f" and a {ex.bindings[0][0]}-ish box."),
    ),
]


def _other_band(ex: Example) -> list[int]:
    from bindkit.synth.controls import bands, length_ok

    n = len(words(ex.positive))
    return list(next(b for b in bands(CONSTRUCTIONS[ex.type]) if not length_ok(n, b)))


def _other_window(ex: Example) -> list[int]:
    from bindkit.synth.controls import windows

    current = tuple(ex.targets["distance_window"])
    return list(next(w for w in windows(CONSTRUCTIONS[ex.type]) if w[0] > current[1]))


def _rename(ex: Example, old: str, new: str) -> None:
    ex.bindings = [(a, new if o == old else o) for a, o in ex.bindings]
    ex.positive = re.sub(rf"\b{old}\b", new, ex.positive)
    complete(ex, random.Random(0))


def _keep_another_pair(ex: Example) -> None:
    """The object negative keeps a different pair than the attribute negative."""
    kept = ex.targets["kept"]
    other = next(o for o in ex.objects if o != kept)
    x, y = [o for o in ex.objects if o != other]
    ex.negatives["object"] = permute_words(ex.positive, {x: y, y: x})
    ex.intended = {}


def _swap_across_slots(ex: Example) -> None:
    """Swap an attribute of the first object with the other-slot attribute of the second."""
    first, second = ex.objects
    slots = ex.slots or {}
    a = ex.attributes_of(first)[0]
    b = next(x for x in ex.attributes_of(second) if slots[x] != slots[a])
    ex.negatives["attribute"] = permute_words(ex.positive, {a: b, b: a})
    ex.intended = {}


def _swap_slot_names(ex: Example) -> None:
    """Declare each attribute in the other slot (consistent, but not what the words are)."""
    slots = ex.slots or {}
    first, second = sorted(set(slots.values()))
    ex.slots = {a: second if s == first else first for a, s in slots.items()}


def _attributive(ex: Example) -> str:
    (a1, o1), (a2, o2) = ex.bindings
    ex.distractors = []
    return f"On the shelf we saw a {a1} very {o1} and a {a2} truly {o2} today after lunch."


def _swap_attributes_in_text(ex: Example) -> None:
    (a1, _), (a2, _) = ex.bindings
    _set_positive(ex, permute_words(ex.positive, {a1: a2, a2: a1}))


def _one_and_other(text: str) -> str:
    for first, second in (("former", "latter"), ("first", "second")):
        text = text.replace(f"the {first}", "the one").replace(f"The {first}", "The one")
        text = text.replace(f"the {second}", "the other").replace(f"The {second}", "The other")
    return "At first glance " + text[0].lower() + text[1:]


def _break_article(text: str) -> str:
    words = text.split(" ")
    for i, w in enumerate(words[:-1]):
        if w.lower() in ("a", "an"):
            words[i] = "an" if w.lower() == "a" else "a"
            return " ".join(words)
    raise AssertionError("no article")


def _separate(ex: Example) -> str:
    attribute, obj = ex.bindings[0]
    return ex.positive.replace(f"{attribute} {obj}", f"{attribute} very {obj}", 1)


@pytest.mark.parametrize(("rule", "kind", "mutate"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_planted_violation(by_type: dict[str, Example], rule: str, kind: str, mutate: Any) -> None:
    ex = plant(by_type, kind, mutate)
    problems = validate_example(ex)
    assert problems and problems[0].rule == rule, (problems, ex.positive)


def test_every_rule_has_a_planted_case(tmp_path: Path, by_type: dict[str, Example]) -> None:
    path = tmp_path / "mixed.jsonl"
    rows = [json.dumps(by_type["pair_swap"].to_json()), "{not json", json.dumps({"id": "x"})]
    path.write_text("\n".join(rows) + "\n")
    checked, failures = validate_file(path)
    assert checked == 3 and [f[2].rule for f in failures] == ["schema", "schema"]
    assert {c[0] for c in CASES} | {"schema"} == set(RULES)


def test_planted_cases_are_valid_before_planting(by_type: dict[str, Example]) -> None:
    assert all(validate_example(ex) == [] for ex in by_type.values())


def test_controller_caps_duplicates_and_suggestions(by_type: dict[str, Example]) -> None:
    controller = Controller()
    ex = by_type["pair_swap"]
    assert controller.admit(ex) is None
    controller.record(ex)
    assert controller.admit(copy.deepcopy(ex)) == "duplicate_set"
    word = ex.objects[0]
    controller.counts[word] = 10
    other = copy.deepcopy(by_type["predicative"])
    other.bindings[0] = (other.bindings[0][0], word)
    assert controller.admit(other) == "frequency_cap"
    # the banned list reads the counts at the last refresh boundary (here: construction)
    fresh = Controller(counts=Counter({word: 10}))
    assert fresh.banned(2) == [word]
    assert controller.cap(2) == 10 and controller.cap(4) == 10
    controller.accepted = 2000
    assert controller.cap(2) == pytest.approx(30) and controller.cap(4) == pytest.approx(60)
    plan = controller.plan(0, 0)
    assert len(plan.suggestions) == 19
    assert all(controller.counts[w] == 0 for ws in plan.suggestions.values() for w in ws)
    assert plan.avoid[: len(ex.vocabulary())] == sorted(ex.vocabulary(), reverse=True)


def test_generation_is_resumable_without_duplicates_or_losses(tmp_path: Path) -> None:
    out = tmp_path / "run"

    class Crashing(TemplateBackend):
        calls = 0

        def produce(self, plan: Any) -> Example:
            Crashing.calls += 1
            if Crashing.calls == 25:
                raise KeyboardInterrupt
            return super().produce(plan)

    with pytest.raises(KeyboardInterrupt):
        generate(out, 60, Crashing(seed=0), progress=False)
    before = (out / EXAMPLES).read_text().splitlines()
    assert 0 < len(before) < 60
    with (out / EXAMPLES).open("a") as handle:  # a line cut short by the crash
        handle.write('{"id": "ex-trunc')
    _controller, stats = generate(out, 60, TemplateBackend(seed=0), progress=False)
    lines = (out / EXAMPLES).read_text().splitlines()
    ids = [json.loads(line)["id"] for line in lines]
    assert len(lines) == 60 and len(set(ids)) == 60 and lines[: len(before)] == before
    sets = [frozenset(Example.from_json(json.loads(x), "t").vocabulary()) for x in lines]
    assert len(set(sets)) == 60
    assert stats.resumed == len(before)
    # a finished run is a no-op
    generate(out, 60, TemplateBackend(seed=0), progress=False)
    assert len((out / EXAMPLES).read_text().splitlines()) == 60


def test_the_construction_mix_is_met_exactly(tmp_path: Path) -> None:
    controller, _ = generate(tmp_path, 500, TemplateBackend(seed=3), progress=False)
    assert dict(controller.by_type) == {
        "pair_swap": 80,
        "triple_bind_cycle": 80,
        "triple_bind_swap": 80,
        "attr_bundle": 80,
        "predicative": 80,
        "deferred_bind_anaphoric": 50,
        "deferred_bind_respective": 50,
    }
    counts = write_splits(tmp_path)
    assert counts == {
        "train": 640,
        "val": 80,
        "test": 80,
        "heldout_deferred_bind_anaphoric": 100,
        "heldout_deferred_bind_respective": 100,
    }


def test_rejections_are_logged_with_their_rule(tmp_path: Path) -> None:
    class Sloppy(TemplateBackend):
        def produce(self, plan: Any) -> Example:
            ex = super().produce(plan)
            if plan.attempt % 3 == 0:
                ex.positive += " " + ex.objects[0]  # the object appears twice
            return ex

    generate(tmp_path, 20, Sloppy(seed=1), progress=False)
    rejected = [json.loads(x) for x in (tmp_path / REJECTED).read_text().splitlines()]
    assert rejected and {r["rule"] for r in rejected} == {"once"}


def test_splits_and_triplets(tmp_path: Path) -> None:
    generate(tmp_path, 200, TemplateBackend(seed=2), progress=False)
    counts = write_splits(tmp_path, seed=0)
    examples = read_examples(tmp_path / EXAMPLES)
    deferred = [ex for ex in examples if ex.type.startswith("deferred")]
    rest = len(examples) - len(deferred)
    assert counts["train"] == 2 * round(0.8 * rest)
    assert counts["train"] + counts["val"] + counts["test"] == 2 * rest
    assert counts["heldout_deferred_bind_anaphoric"] + counts[
        "heldout_deferred_bind_respective"
    ] == 2 * len(deferred)
    row = json.loads((tmp_path / "train.jsonl").read_text().splitlines()[0])
    assert set(row) == {"query", "positive", "negative", "type", "negative_kind"}
    assert row["type"] not in ("deferred_bind_anaphoric", "deferred_bind_respective")
    parts = split(examples, seed=0)
    assert not {e.id for e in parts["train"]} & {e.id for e in parts["test"]}
    assert split(examples, seed=0)["val"] == parts["val"]


def test_no_overlap_filter() -> None:
    words = saber_words(None)
    assert "striped" in words and "teapot" in words
    examples = [make(a, kind=sorted(CONSTRUCTIONS)[a % 7]) for a in range(40)]
    kept = no_overlap(examples, words)
    assert all(not ex.vocabulary() & words for ex in kept)
    assert len(kept) < len(examples)


def test_cli_generate_validate_and_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["synth", "generate", "--n", "30", "--out", str(tmp_path), "-q"]) == 0
    out = capsys.readouterr().out
    assert "30 examples" in out and "triplets: train" in out
    assert main(["synth", "validate", str(tmp_path / EXAMPLES)]) == 0
    with (tmp_path / EXAMPLES).open("a") as handle:
        handle.write("{broken\n")
    assert main(["synth", "validate", str(tmp_path / EXAMPLES)]) == 1
    assert "[schema]" in capsys.readouterr().out
    assert main(["synth", "generate", "--n", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--n 0: must be at least 1" in capsys.readouterr().err
    with pytest.raises(BindkitError, match="--base-url"):
        from bindkit.synth.backends.openai import OpenAIBackend

        OpenAIBackend(model="m")


def test_a_killed_cli_run_resumes_to_the_target(tmp_path: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "killed"
    command = [
        sys.executable,
        "-m",
        "bindkit",
        "synth",
        "generate",
        "--n",
        "4000",
        "--out",
        str(out),
        "-q",
        "--no-splits",
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        path = out / EXAMPLES
        if path.exists() and path.stat().st_size > 50_000:
            break
        time.sleep(0.05)
    process.send_signal(signal.SIGKILL)
    process.wait()
    partial = len((out / EXAMPLES).read_bytes().splitlines())
    assert 0 < partial < 4000
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, timeout=120)
    rows = [json.loads(x) for x in (out / EXAMPLES).read_text().splitlines()]
    assert len(rows) == 4000
    assert len({r["id"] for r in rows}) == 4000
    assert len({(r["type"], frozenset(w for p in r["bindings"] for w in p)) for r in rows}) == 4000
