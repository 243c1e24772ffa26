"""Per-query scores: stored beside each result (a hashed sidecar), read back, and equal on
average to the main score they come from."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _per_query import mean_is_score, stored
from bindkit.errors import BindkitError
from bindkit.evaluation import evaluate
from bindkit.metrics.retrieval import top_k
from bindkit.records.per_query import (
    PerQuery,
    decode,
    encode,
    normalise,
    read_per_query,
    sidecar_path,
)
from bindkit.results.store import collect_paths
from bindkit.saber.io import read_saber
from bindkit.saber.vocab import Vocabulary


def test_encode_decode_round_trip_keeps_nan_and_ragged_tops() -> None:
    items = [
        PerQuery("ap", ("q1", "q2"), np.array([0.25, np.nan]), (("a", "b"), ("c",))),
        PerQuery("correct", ("x",), np.array([1 / 3])),
    ]
    back = decode(encode(items))
    assert [p.metric for p in back] == ["ap", "correct"]
    assert back[0].ids == ("q1", "q2") and back[0].top == (("a", "b"), ("c",))
    assert back[0].values[0] == 0.25 and np.isnan(back[0].values[1])
    assert back[1].values[0] == 1 / 3 and back[1].top == ()  # float64: exact
    shared = [PerQuery(m, ("q1",), np.array([v]), (("a",),)) for m, v in (("x", 0.1), ("y", 0.2))]
    again = decode(encode(shared))  # ids and tops shared by two metrics are stored once
    assert [(p.ids, p.top, p.values.tolist()) for p in again] == [
        (("q1",), (("a",),), [0.1]),
        (("q1",), (("a",),), [0.2]),
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"ids": ["a"], "values": [1.0]}, "'metric' name"),
        ({"metric": "m", "ids": ["a", "b"], "values": [1.0]}, "2 ids but values of shape"),
        ({"metric": "m", "ids": ["a", "a"], "values": [1.0, 0.0]}, "ids repeat"),
        ({"metric": "m", "ids": ["a"], "values": [1.0], "top": [["x"], ["y"]]}, "one row per id"),
        ([{"metric": "m", "ids": [], "values": []}] * 2, "metric names repeat"),
    ],
)
def test_malformed_per_query_is_refused(value: object, message: str) -> None:
    with pytest.raises(BindkitError, match=message):
        normalise(value, "task x")


def test_top_k_is_best_first_in_blocks() -> None:
    rng = np.random.default_rng(0)
    q, g = rng.standard_normal((7, 4)), rng.standard_normal((30, 4))
    expected = np.argsort(-(q.astype(np.float32) @ g.astype(np.float32).T), axis=1)[:, :5]
    assert (top_k(q, g, 5, query_block=3) == expected).all()
    assert top_k(q, g[:2], 5).shape == (7, 2)


def test_saber_stores_per_query_scores_that_average_to_its_scores(
    small_saber: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    (record,) = evaluate(["bow"], data=small_saber, out=out, cache=False, verbose=False)
    (path, _found), *_ = collect_paths(out)
    assert record["per_query"]["file"] == sidecar_path(path).name == "tt.queries.npz"
    assert record["per_query"]["metrics"] == {
        "correct": 16,
        "ap_independent": record["counts"]["independent_queries"],
        "ap_nested": record["counts"]["nested_queries"],
    }
    correct = mean_is_score(out, record, "correct", "mcq_accuracy")
    mean_is_score(out, record, "ap_independent", "map_independent")
    mean_is_score(out, record, "ap_nested", "map_nested")
    saber = read_saber(small_saber)
    assert correct.ids == tuple(m.id for m in saber.mcqs)
    assert 1 / 3 in correct.values.tolist()  # bow ties three options at N=2: 1/3 credit each
    own = {m.id: {c.id for c in m.candidates} for m in saber.mcqs}
    assert all(set(top) == own[q] for q, top in zip(correct.ids, correct.top, strict=True))
    nested = stored(out, record)["ap_nested"]
    assert all(len(top) == 5 for top in nested.top)


def test_a_sidecar_that_does_not_match_its_result_is_recomputed_and_refused(
    small_saber: Path, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    kwargs = {"data": small_saber, "out": out, "cache": False, "verbose": False}
    (first,) = evaluate(["bow"], **kwargs)  # type: ignore[arg-type]
    (path, record), *_ = collect_paths(out)
    sidecar = sidecar_path(path)
    good = sidecar.read_bytes()
    (again,) = evaluate(["bow"], **kwargs)  # type: ignore[arg-type]
    assert again["created"] == first["created"]  # reused while the sidecar matches
    sidecar.write_bytes(encode([PerQuery("correct", ("x",), np.array([0.0]))]))
    with pytest.raises(BindkitError, match=r"tt\.queries\.npz does not match the result"):
        read_per_query(path, record)
    evaluate(["bow"], **kwargs)  # type: ignore[arg-type]
    assert sidecar.read_bytes() == good  # recomputed, not reused
    sidecar.unlink()
    with pytest.raises(BindkitError, match=r"tt\.queries\.npz is missing; rerun bindkit eval"):
        read_per_query(path, record)
    plain = json.loads(path.read_text())
    del plain["per_query"]
    assert read_per_query(path, plain) is None


def test_a_task_with_malformed_per_query_scores_keeps_its_result(tmp_path: Path) -> None:
    from bindkit.results.store import write_result

    said: list[str] = []
    provenance = {"task": "t", "subset": "default", "pairing": "tt", "options": {}}
    record = write_result(
        tmp_path / "tt.json",
        provenance=provenance,
        model={"spec": "m"},
        data={"name": "d"},
        result={"scores": {"s": 1.0}, "per_query": {"metric": "m", "ids": ["a"], "values": []}},
        seconds=0.0,
        warn=said.append,
    )
    assert "per_query" not in record and not sidecar_path(tmp_path / "tt.json").exists()
    assert said == [
        "warning: t default tt: per_query m: 1 ids but values of shape (0,); the result is "
        "stored without per-query scores"
    ]


def test_score_saber_per_query_means_are_its_scores(vocab: Vocabulary) -> None:
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.tasks.saber import score_saber

    mcqs = build_saber(SaberOptions(seed=3, per_n=6, n_max=6), vocab)
    rng = np.random.default_rng(1)
    q = rng.standard_normal((len(mcqs), 16)).astype(np.float32)
    g = rng.standard_normal((4 * len(mcqs), 16)).astype(np.float32)
    result = score_saber(mcqs, q, g)
    means = {p["metric"]: float(np.mean(p["values"])) for p in result["per_query"]}
    scores = result["scores"]
    assert means["correct"] == pytest.approx(scores["mcq_accuracy"], abs=1e-12)
    assert means["ap_independent"] == pytest.approx(scores["map_independent"], abs=1e-12)
    assert means["ap_nested"] == pytest.approx(scores["map_nested"], abs=1e-12)
    first = result["per_query"][0]
    best = [c.id for c in mcqs[0].candidates][int(np.argmax(g[:4] @ q[0]))]
    assert first["top"][0][0] == best


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6),
    st.integers(1, 60),
    st.integers(1, 8),
    st.integers(0, 2**31 - 1),
    st.sampled_from([2, 5, 1000]),
)
def test_best_k_equals_the_plain_stable_sort(
    rows: int, n: int, k: int, seed: int, levels: int
) -> None:
    """The partitioned top-k is the stable full sort's first k, ties included (few score
    levels make many ties, some of them across the k-th place)."""
    from bindkit.metrics.retrieval import best_k

    rng = np.random.default_rng(seed)
    scores = rng.integers(0, levels, size=(rows, n)).astype(np.float32) / levels
    k = min(k, n)
    expected = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    assert (best_k(scores, k) == expected).all()
