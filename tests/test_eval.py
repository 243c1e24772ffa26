"""The evaluation engine: SABER protocol, triplets, STS, result store policies, reports, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _per_query import mean_is_score
from _shared import SHARED_DATA
from bindkit.cli import main
from bindkit.embed import load_embedder
from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.metrics.retrieval import average_precision_dense
from bindkit.results.report import write_report
from bindkit.saber.build import SaberOptions, build_saber, generate_saber
from bindkit.saber.vocab import Vocabulary
from bindkit.tasks.saber import score_saber
from bindkit.tasks.text.sts import read_sts

SICK = SHARED_DATA / "sick2014" / "SICK_trial.txt"


def test_bow_scores_exactly_chance_on_the_default_set(tmp_path: Path) -> None:
    (record,) = evaluate(["bow"], out=tmp_path, cache=False, report=False, verbose=False)
    by_n = record["scores"]["mcq_accuracy_by_n"]
    assert by_n["2"] == pytest.approx(1 / 3, abs=1e-12)
    for n in range(3, 11):
        assert by_n[str(n)] == pytest.approx(1 / 4, abs=1e-12)
    assert record["counts"] == {
        "mcqs": 1800,
        "gallery": 7200,
        "independent_queries": 900,
        "nested_queries": 900,
        "containment_subset_above_comparisons": 3600,
        "containment_superset_above_comparisons": 3600,
        "containment_subset_above_superset_comparisons": 8400,
        "swap_candidates_containing_query": 61,  # 60 before colour collisions were avoided
    }
    # bow never prefers its own candidates over each other: the swapped ones win as often
    wins = record["scores"]["mcq_wins_by_role"]
    assert wins["attribute_swap"] == pytest.approx(wins["binding_preserving"])


def _dense_reference(mcqs: list, q: np.ndarray, g: np.ndarray) -> dict[str, float]:
    """Plain, unblocked implementations of the retrieval metrics."""
    scores = q @ g.T
    ap_ind, top4, ap_nest, sub, sup = [], [], [], [], []
    chains: dict[str, dict[int, int]] = {}
    for i, m in enumerate(mcqs):
        if m.kind == "nested":
            chains.setdefault(m.chain, {})[m.step] = i
    for i, m in enumerate(mcqs):
        if m.kind == "independent":
            mask = np.zeros(len(g), bool)
            mask[4 * i] = True
            ap_ind.append(average_precision_dense(scores[i], mask))
            own = scores[i, 4 * i : 4 * i + 4]
            others = np.delete(scores[i], range(4 * i, 4 * i + 4))
            top4.append(float((others < own.min() - 1e-6).all()))
        else:
            later = [j for s, j in chains[m.chain].items() if s > m.step]
            earlier = [j for s, j in chains[m.chain].items() if s < m.step]
            mask = np.zeros(len(g), bool)
            mask[[4 * j for j in [i, *later]]] = True
            ap_nest.append(average_precision_dense(scores[i], mask))
            exact = scores[i, 4 * i]
            sub += [float(scores[i, 4 * j] > exact) for j in earlier]
            sup += [float(scores[i, 4 * j] > exact) for j in later]
    return {
        "map_independent": float(np.mean(ap_ind)),
        "top4_occupancy": float(np.mean(top4)),
        "map_nested": float(np.mean(ap_nest)),
        "containment_subset_above": float(np.mean(sub)),
        "containment_superset_above": float(np.mean(sup)),
    }


def test_saber_scores_equal_a_dense_reference(vocab: Vocabulary) -> None:
    mcqs = build_saber(SaberOptions(seed=3, per_n=6, n_max=6), vocab)
    rng = np.random.default_rng(0)
    q = rng.standard_normal((len(mcqs), 16)).astype(np.float32)
    g = rng.standard_normal((4 * len(mcqs), 16)).astype(np.float32)
    # make the task learnable: queries near their binding-preserving candidate
    q += 1.5 * g[0::4]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    scores = score_saber(mcqs, q, g)["scores"]
    for name, value in _dense_reference(mcqs, q, g).items():
        assert scores[name] == pytest.approx(value, abs=1e-9), name
    assert 0.5 < scores["mcq_accuracy"] <= 1


def test_perfect_model_scores_one(vocab: Vocabulary) -> None:
    mcqs = build_saber(SaberOptions(per_n=4, n_max=4), vocab)
    g = np.eye(4 * len(mcqs), dtype=np.float32)
    q = g[0::4].copy()
    s = score_saber(mcqs, q, g)["scores"]
    assert s["mcq_accuracy"] == 1.0 and s["map_independent"] == 1.0
    # the query only matches its exact candidate: later steps rank below it, so nested AP < 1
    assert s["top4_occupancy"] == 0.0  # distractors score 0, tied with the whole gallery
    assert s["containment_superset_above"] == 0.0 and s["containment_subset_above"] == 0.0


def test_triplets_task_and_breakdown(tmp_path: Path) -> None:
    rows = [
        {"query": "red cube", "positive": "a red cube", "negative": "a blue kite", "type": "a"},
        {"query": "red cube", "positive": "cube red", "negative": "red cube", "type": "a"},
        {"query": "blue kite", "positive": "a red cube", "negative": "a blue kite", "type": "b"},
    ]
    data = tmp_path / "t.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (record,) = evaluate(
        ["bow"],
        task="triplets",
        data=data,
        out=tmp_path / "r",
        cache=False,
        report=False,
        verbose=False,
    )
    # row 2 is an exact tie (same words): counted wrong
    assert record["scores"]["triplet_accuracy"] == pytest.approx(1 / 3)
    assert record["scores"]["triplet_accuracy_by"] == {"type": {"a": 0.5, "b": 0.0}}
    correct = mean_is_score(tmp_path / "r", record, "correct", "triplet_accuracy")
    assert correct.ids == ("1", "2", "3") and correct.values.tolist() == [1.0, 0.0, 0.0]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"query": "x", "positive": "y"}\n')
    with pytest.raises(DataFormatError, match=r"bad\.jsonl:1: field 'negative'"):
        evaluate(
            ["bow"],
            task="triplets",
            data=bad,
            out=tmp_path / "r",
            cache=False,
            report=False,
            verbose=False,
        )


def test_sts_formats(tmp_path: Path) -> None:
    csv_file = tmp_path / "pairs.csv"
    csv_file.write_text("sentence1,sentence2,score\na red cube,a red cube,5\na cube,the sky,1\n")
    first, _second, gold = read_sts(csv_file)
    assert first == ["a red cube", "a cube"] and list(gold) == [5.0, 1.0]
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text(
        '{"text_a": "x", "text_b": "y", "label": 0.5}\n{"text_a": "x", "text_b": "z", "label": 1}\n'
    )
    assert read_sts(jsonl)[2].tolist() == [0.5, 1.0]
    wrong = tmp_path / "wrong.csv"
    wrong.write_text("a,b,c\nx,y,1\n")
    with pytest.raises(DataFormatError, match="no first-text column"):
        read_sts(wrong)


@pytest.mark.skipif(not SICK.exists(), reason="../shared/data/sick2014 is not on this machine")
def test_sts_on_sick_trial(tmp_path: Path) -> None:
    first, second, gold = read_sts(SICK)
    assert len(gold) == 500 and gold.min() >= 1 and gold.max() <= 5
    (record,) = evaluate(
        ["bow"], task="sts", data=SICK, out=tmp_path, cache=False, report=False, verbose=False
    )
    model = load_embedder("bow", cache=False)
    a, b = model.embed_texts(first), model.embed_texts(second)
    from bindkit.metrics.correlation import spearman

    expected = spearman((a * b).sum(axis=1), gold)
    assert record["scores"]["spearman"] == pytest.approx(expected, abs=1e-4)
    assert 0.3 < expected < 0.9  # words overlap tracks relatedness in SICK


def _count_evaluations(monkeypatch: pytest.MonkeyPatch, task_class: type) -> list[str]:
    calls: list[str] = []
    original = task_class.evaluate

    def counting(
        self: object, embedder: object, dataset: object, subset: str, pairing: str, ctx: object
    ) -> object:
        calls.append(f"{subset}/{pairing}")
        return original(self, embedder, dataset, subset, pairing, ctx)

    monkeypatch.setattr(task_class, "evaluate", counting)
    return calls


def test_overwrite_policies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bindkit.tasks.saber import SaberTask

    calls = _count_evaluations(monkeypatch, SaberTask)
    kwargs = dict(task="saber", out=tmp_path, cache=False, report=False, verbose=False)
    data = tmp_path / "saber"
    from bindkit.saber.build import generate_saber

    generate_saber(data, per_n=2, n_max=3)
    (first,) = evaluate(["bow"], data=data, **kwargs)
    (again,) = evaluate(["bow"], data=data, **kwargs)
    assert calls == ["default/tt"]  # reused, not recomputed
    assert again == first
    (path,) = (tmp_path / "bow" / "saber").glob("saber-*/default/tt.json")
    (forced,) = evaluate(["bow"], data=data, overwrite="always", **kwargs)
    assert len(calls) == 2
    assert json.loads(path.read_text())["provenance"] == forced["provenance"]
    # another model fingerprint at the same path is stale
    (bigger,) = evaluate([load_embedder("bow+dim=64", cache=False)], data=data, **kwargs)
    assert bigger["provenance"]["model_fingerprint"] != first["provenance"]["model_fingerprint"]
    (stale,) = (tmp_path / "bow_dim_64" / "saber").glob("saber-*/default/tt.json")
    record = json.loads(stale.read_text())
    record["provenance"]["model_fingerprint"] = "something-else"
    stale.write_text(json.dumps(record))
    with pytest.raises(BindkitError, match="pass --overwrite only-missing or always"):
        evaluate(["bow+dim=64"], data=data, overwrite="never", **kwargs)
    (fixed,) = evaluate(["bow+dim=64"], data=data, overwrite="only-missing", **kwargs)
    assert fixed["provenance"]["model_fingerprint"] != "something-else"


def test_provenance_holds_data_hash_and_options(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Changing the data's content or an option makes the stored result stale."""
    from bindkit.tasks.text.triplets import TripletTask

    calls = _count_evaluations(monkeypatch, TripletTask)
    data = tmp_path / "t.jsonl"
    data.write_text('{"query": "red cube", "positive": "a red cube", "negative": "a blue kite"}\n')
    kwargs = dict(
        task="triplets", data=data, out=tmp_path / "r", cache=False, report=False, verbose=False
    )
    (record,) = evaluate(["bow"], **kwargs)
    assert record["provenance"]["data_sha256"] == record["data"]["sha256"]
    evaluate(["bow"], **kwargs)
    assert len(calls) == 1
    evaluate(["bow"], query_instruction="Find the scene", **kwargs)
    assert len(calls) == 2  # an option is part of the provenance
    data.write_text('{"query": "red cube", "positive": "a red cube", "negative": "a red kite"}\n')
    evaluate(["bow"], **kwargs)
    assert len(calls) == 3  # so is the data's content


def test_eval_recomputes_after_a_text_data_file_is_edited_in_place(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same path (so the same result file), same model and options, other content: only the
    data's sha256 in the provenance tells the stored result is stale."""
    from bindkit.tasks.text.triplets import TripletTask

    calls = _count_evaluations(monkeypatch, TripletTask)
    data, out = tmp_path / "t.jsonl", tmp_path / "r"
    row = {"query": "red cube", "positive": "a red cube", "negative": "a blue kite"}
    data.write_text(json.dumps(row) + "\n")
    argv = ["eval", "-q", "--no-report", "--no-cache", "--model", "bow", "--task", "triplets"]
    argv += ["--data", str(data), "--out", str(out)]
    assert main(argv) == 0 and main(argv) == 0
    assert len(calls) == 1  # unchanged: reused
    (path,) = out.glob("bow/triplets/*/default/tt.json")
    before = json.loads(path.read_text())
    data.write_text(json.dumps({**row, "negative": "a red kite"}) + "\n")  # edited in place
    assert main(argv) == 0
    assert len(calls) == 2
    after = json.loads(path.read_text())
    assert after["data"]["sha256"] != before["data"]["sha256"]
    assert after["provenance"]["data_sha256"] == after["data"]["sha256"]


def test_same_file_name_in_two_folders_keeps_both_results(tmp_path: Path) -> None:
    row = '{"query": "red cube", "positive": "a red cube", "negative": "a blue kite"}\n'
    for run in ("runA", "runB"):
        (tmp_path / run).mkdir()
        (tmp_path / run / "test.jsonl").write_text(
            row if run == "runA" else row.replace("blue", "red")
        )
    for run in ("runA", "runB"):
        evaluate(
            ["bow"],
            task="triplets",
            data=tmp_path / run / "test.jsonl",
            out=tmp_path / "r",
            cache=False,
            verbose=False,
        )
    files = sorted((tmp_path / "r" / "bow" / "triplets").glob("*/default/tt.json"))
    assert len(files) == 2
    report = (tmp_path / "r" / "report.md").read_text()
    for run in ("runA", "runB"):
        assert str(tmp_path / run / "test.jsonl") in report


def test_unavailable_pairing_and_unknown_task(tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match="--pairings ti: not available for bow"):
        evaluate(["bow"], pairings="ti", out=tmp_path, cache=False, verbose=False)
    with pytest.raises(BindkitError, match="--pairings: unknown pairing 'tx'"):
        evaluate(["bow"], pairings="tx", out=tmp_path, cache=False, verbose=False)
    with pytest.raises(BindkitError, match="unknown task \\(did you mean saber\\?\\)"):
        evaluate(["bow"], task="sabre", out=tmp_path, cache=False, verbose=False)


def test_report_formats(tmp_path: Path) -> None:
    data = tmp_path / "saber"
    from bindkit.saber.build import generate_saber

    generate_saber(data, per_n=4, n_max=4)
    evaluate(["bow", "bow+dim=32"], data=data, out=tmp_path / "res", cache=False, verbose=False)
    md = (tmp_path / "res" / "report.md").read_text()
    assert "| bow |" in md and "| bow+dim=32 |" in md and "N=4" in md
    for suffix, needle in (
        (".html", "<table>"),
        (".csv", "mcq_accuracy_by_n"),
        (".tex", "\\toprule"),
    ):
        target, _ = write_report(tmp_path / "res", tmp_path / f"report{suffix}")
        assert needle in target.read_text()
    pytest.importorskip("matplotlib")
    assert (tmp_path / "res" / "report_saber_by_n.png").stat().st_size > 1000
    with pytest.raises(BindkitError, match=r"use a \.md, \.html, \.csv, \.tex file name"):
        write_report(tmp_path / "res", tmp_path / "report.pdf")


def test_cli_eval_and_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "saber"
    assert (
        main(["saber", "generate", "--out", str(data), "--per-n", "2", "--n-max", "3", "-q"]) == 0
    )
    code = main(
        [
            "eval",
            "--model",
            "bow",
            "--data",
            str(data),
            "--out",
            str(tmp_path / "r"),
            "--no-cache",
            "-q",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0 and "| bow |" in out
    assert main(["report", str(tmp_path / "r"), "--out", str(tmp_path / "r.csv")]) == 0
    code = main(["eval", "--model", "bow", "--task", "sts", "--out", str(tmp_path / "r")])
    assert code == 2 and "--task sts needs --data" in capsys.readouterr().err


def test_image_pairings_on_a_tiny_multimodal_model(tmp_path: Path, tiny_qwen2_vl: Path) -> None:
    """All four pairings run end to end when the SABER directory has images."""
    pil = pytest.importorskip("PIL.Image")
    from bindkit.saber.build import generate_saber

    data = tmp_path / "saber"
    generate_saber(data, seed=5, per_n=2, n_max=3)
    rows = [json.loads(x) for x in (data / "saber.jsonl").read_text().splitlines()]
    (data / "images").mkdir()
    rng = np.random.default_rng(0)
    for row in rows:
        for item in [row["query"], *row["candidates"]]:
            name = f"images/{item['id']}.png"
            pixels = (rng.random((32, 40, 3)) * 255).astype("uint8")
            pil.fromarray(pixels).save(data / name)
            item["image"] = name
    (data / "saber.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    (data / "manifest.json").unlink()  # the data changed after generation
    records = evaluate(
        [f"mllm:{tiny_qwen2_vl}"],
        data=data,
        out=tmp_path / "r",
        cache=False,
        report=True,
        verbose=False,
    )
    assert [r["pairing"] for r in records] == ["tt", "ti", "it", "ii"]
    for record in records:
        assert 0 <= record["scores"]["mcq_accuracy"] <= 1
        assert record["counts"]["gallery"] == 4 * len(rows)
    assert "I→I MCQ" in (tmp_path / "r" / "report.md").read_text()


def test_every_result_records_the_library_versions(tmp_path: Path) -> None:
    """Library versions beside the provenance: recorded, and not part of reuse."""
    from importlib import metadata

    from bindkit.results.store import collect

    saber = tmp_path / "saber"
    generate_saber(saber, per_n=2, n_max=3)
    assert (
        main(
            [
                "eval",
                "-q",
                "--no-report",
                "--model",
                "bow",
                "--data",
                str(saber),
                "--out",
                str(tmp_path / "r"),
            ]
        )
        == 0
    )
    (record,) = collect(tmp_path / "r")
    assert record["libraries"]["numpy"] == metadata.version("numpy")
    assert "python" in record["libraries"] and "libraries" not in record["provenance"]
