"""bindkit's tasks inside mteb 2.x: mteb.evaluate runs them offline, main scores equal bindkit's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mteb")

import mteb

from bindkit import evaluate, load_embedder
from bindkit.mteb_bridge import mteb_pairs, mteb_tasks
from bindkit.saber.io import read_saber, role_positions


def _scores(result: Any) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r.task_name, s["hf_subset"]): s for r in result.task_results for s in r.scores["test"]}


def _bindkit(model: Any, task: str, data: Path, out: Path) -> dict[str, Any]:
    (record,) = evaluate(
        [model], task=task, data=data, out=out, cache=False, report=False, verbose=False
    )
    return dict(record["scores"])


def _trec_eval_winner(scores: dict[str, float]) -> str:
    """pytrec_eval (trec_eval) ranks by score, ties by document id in reverse order."""
    return max(scores, key=lambda d: (scores[d], d))


@pytest.mark.slow
def test_saber_in_mteb_equals_bindkit_with_minilm(small_saber: Path, tmp_path: Path) -> None:
    """mteb's own sentence-transformers wrapper on the packaged MiniLM: SABERMCQ's main score is
    bindkit's mcq_accuracy, SABERRetrievalIndependent's and SABERRetrievalNested's map_at_1000
    its map_independent and map_nested (mteb rounds to 5 places)."""
    from sentence_transformers import SentenceTransformer

    from bindkit.embed.backends.st import default_model_path

    ours = _bindkit("st:default", "saber", small_saber, tmp_path / "r")
    tasks = mteb_tasks.saber_tasks(small_saber)
    model = SentenceTransformer(default_model_path(), device="cpu")
    got = _scores(mteb.evaluate(model, tasks, cache=None, show_progress_bar=False))
    mcq, independent_task, nested_task = (t.metadata.name for t in tasks)
    assert got[(mcq, "default")]["main_score"] == pytest.approx(ours["mcq_accuracy"], abs=1e-6)
    independent = got[(independent_task, "independent")]["main_score"]
    assert independent == pytest.approx(ours["map_independent"], abs=1e-5)
    nested = got[(nested_task, "nested")]["main_score"]
    assert nested == pytest.approx(ours["map_nested"], abs=1e-5)
    assert 0 < ours["map_nested"] < 1


def test_mcq_ties_share_as_bindkit_and_mteb_accuracy_breaks_them_by_id(
    small_saber: Path, tmp_path: Path
) -> None:
    """bow cannot tell an attribute swap apart: mcq_accuracy shares the tie (bindkit's number
    exactly), mteb's accuracy (Recall@1) is what trec_eval's id order makes of the same ties."""
    bow = load_embedder("bow", cache=False)
    ours = _bindkit(bow, "saber", small_saber, tmp_path / "r")
    (mcq_task, *_retrieval) = mteb_tasks.saber_tasks(small_saber)
    encoder = mteb_tasks.MtebEncoder(bow)
    got = _scores(mteb.evaluate(encoder, [mcq_task], cache=None, show_progress_bar=False))
    row = got[(mcq_task.metadata.name, "default")]
    assert row["main_score"] == ours["mcq_accuracy"]
    saber = read_saber(small_saber)
    wins = []
    for m in saber.mcqs:
        q = bow.embed_texts([m.query.text], role="query")[0]
        c = bow.embed_texts([c.text for c in m.candidates], role="document")
        scores = {cand.id: float(s) for cand, s in zip(m.candidates, c @ q, strict=True)}
        wins.append(_trec_eval_winner(scores) == m.candidates[role_positions(m)[0]].id)
    assert row["accuracy"] == pytest.approx(float(np.mean(wins)), abs=1e-5)
    assert row["accuracy"] != row["main_score"]  # the set has ties, counted differently


def test_mcq_accuracy_from_runs_shares_ties() -> None:
    qrels = {"a": {"a1": 1, "a2": 0}, "b": {"b1": 1, "b2": 0, "b3": 0}, "c": {"c1": 1}}
    runs = {"a": {"a1": 0.5, "a2": 0.5}, "b": {"b1": 0.9, "b2": 0.1, "b3": 0.2}, "c": {}}
    shared = mteb_tasks.mcq_accuracy_from_runs(qrels, runs, "share")
    assert shared == pytest.approx((0.5 + 1 + 0) / 3)
    assert mteb_tasks.mcq_accuracy_from_runs(qrels, runs, "wrong") == pytest.approx(1 / 3)


def test_get_task_finds_registered_saber_tasks() -> None:
    names = mteb_tasks.register_defaults()
    assert names == ["SABERMCQ", "SABERRetrievalIndependent", "SABERRetrievalNested"]
    from bindkit.tasks.base import get_task

    digest = get_task("saber").load(None).sha256
    mcq = mteb.get_task("SABERMCQ")
    assert mcq.metadata.type == "VisionCentricQA" and mcq.metadata.main_score == "mcq_accuracy"
    assert mcq.metadata.revision == digest and mcq.metadata.license == "mit"
    # one task per number seed 000 reports: a task's score is its one subset's mAP, no mean
    for kind in ("independent", "nested"):
        retrieval = mteb.get_task(f"SABERRetrieval{kind.title()}")
        assert retrieval.metadata.hf_subsets == [kind]
        assert retrieval.metadata.category == "t2t"
        assert retrieval.metadata.main_score == "map_at_1000"


def test_triplets_in_mteb(tmp_path: Path) -> None:
    """Reranking of (positive, negative): triplet_accuracy counts a tie wrong like bindkit;
    mteb's accuracy (Recall@1) breaks the tie by trec_eval's document order, which differs
    between pytrec_eval-terrier releases (0.5.11 ranks "-negative" first: the tie is lost), so
    only bindkit's own score is pinned exactly."""
    rows = [
        {"query": "red cube", "positive": "a red cube", "negative": "a blue kite"},
        {"query": "red cube", "positive": "cube red", "negative": "red cube"},  # bow tie
        {"query": "blue kite", "positive": "a red cube", "negative": "a blue kite"},
    ]
    data = tmp_path / "t.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    bow = load_embedder("bow", cache=False)
    ours = _bindkit(bow, "triplets", data, tmp_path / "r")
    task = mteb_tasks.triplet_task(data)
    assert task.metadata.name == "BindkitTriplets-t" and task.metadata.type == "Reranking"
    encoder = mteb_tasks.MtebEncoder(bow)
    row = _scores(mteb.evaluate(encoder, [task], cache=None, show_progress_bar=False))[
        (task.metadata.name, "default")
    ]
    assert row["main_score"] == ours["triplet_accuracy"] == pytest.approx(1 / 3)
    tie_won, tie_lost = 2 / 3, 1 / 3  # the one tied row, by trec_eval's order
    assert min(abs(row["accuracy"] - tie_won), abs(row["accuracy"] - tie_lost)) < 1e-5


def test_nested_relevance_is_bindkits(small_saber: Path) -> None:
    """AP over the relevance handed to mteb equals score_saber's nested mAP (random vectors)."""
    from bindkit.metrics.retrieval import average_precision
    from bindkit.tasks.saber import score_saber

    mcqs = list(read_saber(small_saber).mcqs)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((len(mcqs), 8)).astype(np.float32)
    g = rng.standard_normal((4 * len(mcqs), 8)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    row = {c.id: i for i, c in enumerate(c for m in mcqs for c in m.candidates)}
    relevance = mteb_tasks.nested_relevance(mcqs)
    nested = [i for i, m in enumerate(mcqs) if m.kind == "nested"]
    relevant = [[row[d] for d in relevance[mcqs[i].query.id]] for i in nested]
    ap = average_precision(q[nested], g, relevant)
    assert float(ap.mean()) == pytest.approx(score_saber(mcqs, q, g)["scores"]["map_nested"])


@pytest.mark.slow
def test_image_pairings_in_mteb_equal_bindkit(tmp_path: Path) -> None:
    """i2t and t2i on a rendered shapes set with builtin:tiny-clip: mteb reads the images from
    the files (the datasets Image feature) and scores them as bindkit does."""
    from bindkit.saber.build import generate_saber
    from bindkit.saber.render.procedural import ProceduralBackend
    from bindkit.saber.render.renderer import render_saber

    data = tmp_path / "shapes"
    generate_saber(data, seed=7, per_n=2, n_min=2, n_max=3, vocab="shapes")
    render_saber(data, ProceduralBackend(), progress=False)
    clip = load_embedder("builtin:tiny-clip", cache=False)
    records = evaluate(
        [clip],
        task="saber",
        data=data,
        pairings="it,ti",
        out=tmp_path / "r",
        cache=False,
        report=False,
        verbose=False,
    )
    tasks = mteb_tasks.saber_tasks(data, pairings=("it", "ti"))
    assert [t.metadata.category for t in tasks] == ["i2t"] * 3 + ["t2i"] * 3
    got = _scores(
        mteb.evaluate(mteb_tasks.MtebEncoder(clip), tasks, cache=None, show_progress_bar=False)
    )
    for record in records:
        suffix = mteb_tasks.CATEGORY[record["pairing"]].upper()
        ours = record["scores"]
        mcq = got[(f"SABERMCQ{suffix}-shapes", "default")]["main_score"]
        assert mcq == pytest.approx(ours["mcq_accuracy"], abs=1e-6)
        for subset, key in (("independent", "map_independent"), ("nested", "map_nested")):
            value = got[(f"SABERRetrieval{subset.title()}{suffix}-shapes", subset)]["main_score"]
            assert value == pytest.approx(ours[key], abs=1e-5), (record["pairing"], subset)


def test_colorswap_as_mteb_compositionality(tmp_path: Path) -> None:
    """Strict text/image/group scores = bindkit's; mteb's argmax scores give a tie to the first
    index: item 2's first image is as close to both captions, which mteb counts right."""
    pytest.importorskip("pyarrow")
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    from _fakes import TableEmbedder

    def png(rgb: tuple[int, int, int]) -> dict[str, object]:
        buffer = io.BytesIO()
        Image.new("RGB", (4, 4), rgb).save(buffer, format="PNG")
        return {"bytes": buffer.getvalue(), "path": None}

    rows = [
        {"id": 0, "image_1": png((255, 0, 0)), "image_2": png((0, 0, 255)),
         "caption_1": "a red cup and a blue hat", "caption_2": "a blue cup and a red hat"},
        {"id": 1, "image_1": png((0, 255, 0)), "image_2": png((9, 9, 9)),
         "caption_1": "green", "caption_2": "grey"},
        {"id": 2, "image_1": png((1, 1, 1)), "image_2": png((2, 2, 2)),
         "caption_1": "c0", "caption_2": "c1"},
    ]  # fmt: skip
    data = tmp_path / "colorswap" / "data" / "test-00000-of-00001.parquet"
    data.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), data)
    e = np.eye(4, dtype=np.float32)
    model = TableEmbedder(
        {
            "rgb255-0-0": e[0], "rgb0-0-255": e[1], "a red cup and a blue hat": e[0],
            "a blue cup and a red hat": e[1], "rgb0-255-0": e[2], "rgb9-9-9": e[2],
            "green": e[2], "grey": e[3], "rgb1-1-1": e[0] + e[1], "rgb2-2-2": e[1],
            "c0": e[0], "c1": e[1],
        }
    )  # fmt: skip
    ours = _bindkit(model, "colorswap", tmp_path / "colorswap", tmp_path / "r")
    task = mteb_pairs.pair_task("colorswap", tmp_path / "colorswap")
    assert task.metadata.name == "BindkitColorSwap" and task.metadata.type == "Compositionality"
    encoder = mteb_tasks.MtebEncoder(model)  # type: ignore[arg-type]
    row = _scores(mteb.evaluate(encoder, [task], cache=None, show_progress_bar=False))[
        ("BindkitColorSwap", "default")
    ]
    assert row["main_score"] == ours["group_score"] == pytest.approx(1 / 3)
    assert (row["text_score"], row["image_score"]) == (ours["text_score"], ours["image_score"])
    assert ours["text_score"] == pytest.approx(1 / 3)
    assert ours["image_score"] == pytest.approx(2 / 3)
    # mteb's own: item 2's tie counts for the first caption, so its text side and group are right
    assert row["text_acc"] == row["accuracy"] == pytest.approx(2 / 3)
