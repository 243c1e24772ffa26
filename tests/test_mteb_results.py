"""export-results --format mteb: mteb's own loaders read the layout back with bindkit's numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("mteb")

from mteb.cache import ResultCache
from mteb.results import TaskResult

from bindkit import evaluate
from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.integrations.mteb_results import export_mteb


@pytest.fixture(scope="module")
def results(small_saber: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("results")
    rows = [{"query": "red cube", "positive": "a red cube", "negative": "a blue kite"}] * 2
    triplets = out.parent / "trip.jsonl"
    triplets.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for task, data in (("saber", small_saber), ("triplets", triplets)):
        evaluate(["bow"], task=task, data=data, out=out, cache=False, report=False, verbose=False)
    return out


def test_export_reads_back_with_mtebs_loaders(results: Path, tmp_path: Path) -> None:
    out = tmp_path / "mteb" / "results"  # ResultCache(tmp/mteb) reads tmp/mteb/results
    assert main(["export-results", str(results), "--format", "mteb", "--out", str(out)]) == 0
    (record,) = [json.loads(p.read_text()) for p in results.rglob("*.json") if "saber" in p.parts]
    folder = out / "bindkit__bow" / record["model"]["fingerprint"]
    data = record["data"]["name"]  # the SABER folder's name
    mcq = TaskResult.from_disk(folder / f"SABERMCQ-{data}.json")
    assert mcq.dataset_revision == record["data"]["sha256"]
    assert mcq.get_score() == pytest.approx(record["scores"]["mcq_accuracy"], abs=1e-6)
    assert mcq.kg_co2_emissions is None and mcq.evaluation_time == record["seconds"]
    retrieval = TaskResult.from_disk(folder / f"SABERRetrieval-{data}.json")
    by_subset = {s["hf_subset"]: s for s in retrieval.scores["test"]}
    nested = by_subset["nested"]["main_score"]  # to_disk rounds to 6 places
    assert nested == pytest.approx(record["scores"]["map_nested"], abs=1e-6)
    assert by_subset["independent"]["bindkit"]["model_fingerprint"] == folder.name

    loaded = ResultCache(tmp_path / "mteb").load_results(include_remote=False)
    (model,) = loaded.model_results
    assert model.model_name == "bindkit/bow" and model.model_revision == folder.name
    names = sorted(r.task_name for r in model.task_results)
    assert names == ["BindkitTriplets-trip", f"SABERMCQ-{data}", f"SABERRetrieval-{data}"]


def test_export_refuses_partial_and_unknown(results: Path, tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    (path,) = [p for p in results.rglob("*.json") if "triplets" in p.parts]
    record = json.loads(path.read_text())
    (partial / "x").mkdir(parents=True)
    (partial / "x" / "r.json").write_text(json.dumps(record | {"partial": True}))
    with pytest.raises(BindkitError, match="a partial result"):
        export_mteb(partial, tmp_path / "o")
    (partial / "x" / "r.json").write_text(json.dumps(record | {"task": "sugarcrepe"}))
    with pytest.raises(BindkitError, match="task sugarcrepe has no mteb task"):
        export_mteb(partial, tmp_path / "o")
    with pytest.raises(BindkitError, match="no complete results of triplets"):
        export_mteb(partial, tmp_path / "o", tasks=["triplets"])
    assert not (tmp_path / "o").exists()
