"""The generator against the seed's rules, checked directly (not only through the validator)."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bindkit.errors import BindkitError
from bindkit.saber.build import (
    SaberOptions,
    build_saber,
    generate_saber,
    independent_mcq,
    nested_chain,
)
from bindkit.saber.io import CANDIDATE_ROLES, MCQ, read_saber
from bindkit.saber.language import render
from bindkit.saber.validate import check_dataset, check_mcq
from bindkit.saber.vocab import Vocabulary

seeds = st.integers(min_value=0, max_value=2**32)
ns = st.integers(min_value=2, max_value=10)


def assert_seed_rules(mcq: MCQ, vocab: Vocabulary) -> None:
    n = mcq.n
    query = mcq.query.bindings
    q_attrs, q_objs = mcq.query.attributes, mcq.query.objects
    assert len(query) == n and len(set(q_attrs)) == n and len(set(q_objs)) == n
    assert all(vocab.has_attribute(a) and o in vocab.objects for a, o in query)
    assert tuple(c.role for c in mcq.candidates) == CANDIDATE_ROLES
    c1, c2, c3, c4 = mcq.candidates
    # 1: same bindings, pairs reordered
    assert set(c1.bindings) == set(query) and c1.bindings != query
    # 2: objects in candidate 1's order, attributes permuted into wrong bindings
    assert c2.objects == c1.objects and sorted(c2.attributes) == sorted(q_attrs)
    assert set(c2.bindings) != set(query)
    # 3: attributes in candidate 1's order, objects permuted into wrong bindings
    assert c3.attributes == c1.attributes and sorted(c3.objects) == sorted(q_objs)
    assert set(c3.bindings) != set(query)
    if n >= 3:
        assert sorted(c4.attributes) == sorted(q_attrs) and sorted(c4.objects) == sorted(q_objs)
        assert c4.attributes != c1.attributes and c4.objects != c1.objects
        assignments = {frozenset(c.bindings) for c in mcq.candidates}
        assert len(assignments) == 4
    else:
        kept = [b for b in c4.bindings if b in query]
        (new,) = [b for b in c4.bindings if b not in query]
        assert len(kept) == 1
        (lost,) = set(query) - set(kept)
        new_attr = new[0] not in q_attrs and new[1] == lost[1]
        new_obj = new[1] not in q_objs and new[0] == lost[0]
        assert new_attr != new_obj  # exactly one element replaced
    # surface forms: one realisation per attribute, reused by every item
    for item in mcq.items:
        assert item.text == render(item.bindings)
        realised = [(mcq.realizations[a].text, o) for a, o in item.bindings]
        assert item.generation_text == render(realised)
        assert item.generation_text.rstrip(".")[1:] in item.image_prompt
        assert isinstance(item.flip, bool) and item.image is None
    for name, realization in mcq.realizations.items():
        attribute = vocab.attribute(name)
        assert attribute.check_realization(realization, vocab.palette) is None
        if attribute.type == "two-color":
            assert realization.slots["color1"] != realization.slots["color2"]


@settings(max_examples=150, deadline=None)
@given(seed=seeds, n=ns, index=st.integers(0, 500))
def test_independent_mcqs_follow_every_rule(
    vocab: Vocabulary, seed: int, n: int, index: int
) -> None:
    mcq = independent_mcq(seed, n, index, vocab)
    assert mcq.kind == "independent" and mcq.n == n
    assert_seed_rules(mcq, vocab)
    assert check_mcq(mcq, vocab) == []


@settings(max_examples=40, deadline=None)
@given(seed=seeds, index=st.integers(0, 500), n_min=st.integers(2, 4), extra=st.integers(0, 6))
def test_nested_chains_follow_every_rule(
    vocab: Vocabulary, seed: int, index: int, n_min: int, extra: int
) -> None:
    chain = nested_chain(seed, index, n_min, n_min + extra, vocab)
    assert [m.n for m in chain] == list(range(n_min, n_min + extra + 1))
    assert [m.step for m in chain] == list(range(extra + 1))
    for before, after in pairwise(chain):
        assert set(before.query.bindings) < set(after.query.bindings)
        assert len(after.query.bindings) == len(before.query.bindings) + 1
        for attribute, _ in before.query.bindings:
            assert before.realizations[attribute] == after.realizations[attribute]
    for mcq in chain:
        assert mcq.kind == "nested" and mcq.chain == chain[0].chain
        assert_seed_rules(mcq, vocab)
        assert check_mcq(mcq, vocab) == []
    assert check_dataset(chain) == [] or all(v.rule == "balance" for v in check_dataset(chain))


def test_default_set_shape_and_validity(vocab: Vocabulary) -> None:
    mcqs = build_saber(SaberOptions(), vocab)
    assert len(mcqs) == 1800
    assert sum(len(m.candidates) for m in mcqs) == 7200
    for n in range(2, 11):
        at_n = [m for m in mcqs if m.n == n]
        assert len(at_n) == 200
        assert sum(m.kind == "independent" for m in at_n) == 100
    assert len({m.chain for m in mcqs if m.chain}) == 100
    assert check_dataset(mcqs) == []
    flips = [item.flip for m in mcqs for item in m.items]
    assert 0.47 < sum(flips) / len(flips) < 0.53  # p = 0.5 over 9,000 items
    # N = 2 candidate 4 replaces objects and attributes about equally often
    replaced_attr = sum(
        m.candidates[3].attributes[0] not in m.query.attributes
        or m.candidates[3].attributes[1] not in m.query.attributes
        for m in mcqs
        if m.n == 2
    )
    assert 60 < replaced_attr < 140


def test_same_seed_gives_byte_identical_files(tmp_path: Path) -> None:
    a = generate_saber(tmp_path / "a", seed=3, per_n=6, n_max=6)
    b = generate_saber(tmp_path / "b", seed=3, per_n=6, n_max=6)
    assert a == b
    for name in ("saber.jsonl", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    generate_saber(tmp_path / "c", seed=4, per_n=6, n_max=6)
    assert (tmp_path / "a" / "saber.jsonl").read_bytes() != (
        tmp_path / "c" / "saber.jsonl"
    ).read_bytes()


def test_units_do_not_depend_on_how_many_are_generated(vocab: Vocabulary) -> None:
    small = build_saber(SaberOptions(per_n=4, n_max=4), vocab)
    large = build_saber(SaberOptions(per_n=8, n_max=6), vocab)
    by_id = {m.id: m for m in large}
    for mcq in small:
        if mcq.kind == "independent":
            assert by_id[mcq.id] == mcq


def test_manifest_records_what_produced_the_data(small_saber: Path) -> None:
    manifest = json.loads((small_saber / "manifest.json").read_text())
    assert manifest["format"] == "saber" and manifest["format_version"] == 1
    assert manifest["seed"] == 7
    assert manifest["options"] == {
        "per_n": 4,
        "n_min": 2,
        "n_max": 5,
        "avoid_color_collisions": True,
    }
    assert manifest["vocabulary"]["source"] == "builtin"
    assert len(manifest["vocabulary"]["sha256"]) == 64
    assert manifest["counts"]["mcqs"] == 16 and manifest["counts"]["candidates"] == 64
    assert "bindkit_version" in manifest
    loaded = read_saber(small_saber)
    assert len(loaded.mcqs) == 16 and loaded.manifest == manifest


def test_round_trip_through_the_file(small_saber: Path, vocab: Vocabulary) -> None:
    expected = build_saber(SaberOptions(seed=7, per_n=4, n_max=5), vocab)
    assert list(read_saber(small_saber).mcqs) == expected


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"per_n": 3}, "--per-n 3: must be a positive even number"),
        ({"per_n": 0}, "--per-n 0"),
        ({"n_min": 1}, "--n-min 1: must be at least 2"),
        ({"n_min": 5, "n_max": 4}, "--n-max 4: must be at least --n-min"),
        ({"n_max": 60}, "N = 60 needs at least 60"),
    ],
)
def test_bad_options(tmp_path: Path, options: dict[str, int], message: str) -> None:
    with pytest.raises(BindkitError, match=message):
        generate_saber(tmp_path / "out", **options)
    assert not (tmp_path / "out" / "saber.jsonl").exists()


def test_existing_output_needs_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(BindkitError, match="not empty; pass --overwrite"):
        generate_saber(out, per_n=2, n_max=3)
    generate_saber(out, per_n=2, n_max=3, overwrite=True)
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "saber.jsonl").exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(BindkitError, match="not a directory"):
        generate_saber(tmp_path / "file", per_n=2, n_max=3)


def test_interrupted_write_leaves_no_half_written_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    generate_saber(out, seed=1, per_n=2, n_max=3)
    before = (out / "saber.jsonl").read_bytes()

    def crash(*_args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("bindkit._io.os.replace", crash)
    with pytest.raises(KeyboardInterrupt):
        generate_saber(out, seed=2, per_n=4, n_max=4, overwrite=True)
    assert (out / "saber.jsonl").read_bytes() == before
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "saber.jsonl"]


def test_custom_vocabulary_is_used_and_recorded(tmp_path: Path, vocab_copy: Path) -> None:
    (vocab_copy / "objects.txt").write_text("cube\nkite\nvase\nbell\nsled\n")
    manifest = generate_saber(tmp_path / "out", per_n=2, n_max=5, vocab=vocab_copy)
    assert manifest["vocabulary"]["source"] == "custom"
    assert manifest["vocabulary"]["objects"] == 5
    objects = {
        o for m in read_saber(tmp_path / "out").mcqs for item in m.items for o in item.objects
    }
    assert objects <= {"cube", "kite", "vase", "bell", "sled"}
