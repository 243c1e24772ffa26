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
from bindkit.mteb_bridge.mteb_results import export_mteb, register_models


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
    out = tmp_path / "mteb"  # what ResultCache(OUT) and `mteb run --output-folder OUT` use
    assert main(["export-results", str(results), "--format", "mteb", "--out", str(out)]) == 0
    (record,) = [json.loads(p.read_text()) for p in results.rglob("*.json") if "saber" in p.parts]
    folder = out / "results" / "bindkit__bow" / record["model"]["fingerprint"]
    data = record["data"]["name"]  # the SABER folder's name
    mcq = TaskResult.from_disk(folder / f"SABERMCQ-{data}.json")
    assert mcq.dataset_revision == record["data"]["sha256"]
    assert mcq.get_score() == pytest.approx(record["scores"]["mcq_accuracy"], abs=1e-6)
    assert mcq.kg_co2_emissions is None and mcq.evaluation_time == record["seconds"]
    # seed 000 reports independent and nested mAP separately: each is a task's own score
    for kind, score in (("Independent", "map_independent"), ("Nested", "map_nested")):
        retrieval = TaskResult.from_disk(folder / f"SABERRetrieval{kind}-{data}.json")
        (entry,) = retrieval.scores["test"]
        assert entry["hf_subset"] == kind.lower()
        assert entry["bindkit"]["model_fingerprint"] == folder.name
        # to_disk rounds to 6 places; the declared main score under its own key as well
        assert retrieval.get_score() == pytest.approx(record["scores"][score], abs=1e-6)
        declared = retrieval.get_score(getter=lambda s: s["map_at_1000"])
        assert declared == pytest.approx(record["scores"][score], abs=1e-6)
    meta = json.loads((folder / "model_meta.json").read_text())
    assert meta["name"] == "bindkit/bow" and meta["revision"] == folder.name
    assert meta["embed_dim"] == 512 and meta["n_parameters"] == 0 and meta["license"] == "mit"
    settings = [json.loads(x) for x in (folder / "run_settings.jsonl").read_text().splitlines()]
    assert {s["task"] for s in settings} >= {f"SABERMCQ-{data}", f"SABERRetrievalNested-{data}"}
    assert settings[0]["version"]["mteb"] == record["libraries"]["mteb"]

    loaded = ResultCache(out).load_results(include_remote=False)
    (model,) = loaded.model_results
    assert model.model_name == "bindkit/bow" and model.model_revision == folder.name
    names = sorted(r.task_name for r in model.task_results)
    assert names == [
        "BindkitTriplets-trip",
        f"SABERMCQ-{data}",
        f"SABERRetrievalIndependent-{data}",
        f"SABERRetrievalNested-{data}",
    ]


def test_export_carries_every_score_bindkit_computed_under_mtebs_names(
    results: Path, tmp_path: Path
) -> None:
    """Each subset holds every score of its bindkit result (breakdowns too), under mteb's name
    where mteb has the metric; the subsets of a result together hold all of its scores."""
    from bindkit.tasks.base import get_task

    out = tmp_path / "mteb"
    export_mteb(results, out)
    for path in [p for p in results.rglob("*.json") if "mteb" not in p.parts]:
        record = json.loads(path.read_text())
        name = str(path.relative_to(results))
        entries = [
            entry
            for file in out.rglob("*.json")
            if file.name != "model_meta.json"
            for entry in json.loads(file.read_text())["scores"]["test"]
            if entry["bindkit"]["result"] == name
        ]
        carried = {k for e in entries for k in e if k not in ("hf_subset", "languages", "bindkit")}
        assert set(record["scores"]) <= carried, set(record["scores"]) - carried
        for entry in entries:
            for bindkit_name, mteb_name in get_task(record["task"]).metadata.mteb_names.items():
                if bindkit_name in entry:
                    assert entry[mteb_name] == pytest.approx(entry[bindkit_name], abs=1e-6)
        by_subset = {e["hf_subset"]: e for e in entries}
        if record["task"] == "saber":
            assert by_subset["default"]["accuracy"] == pytest.approx(
                record["scores"]["mcq_accuracy"], abs=1e-6
            )
            assert by_subset["default"]["mcq_accuracy_by_n"] == pytest.approx(
                record["scores"]["mcq_accuracy_by_n"], abs=1e-6
            )
            nested = by_subset["nested"]
            assert "containment_subset_above" in nested and "top4_occupancy" not in nested
            assert by_subset["independent"]["map_at_1000"] == pytest.approx(
                record["scores"]["map_independent"], abs=1e-6
            )
            # beside bindkit's own names, each subset holds only mteb's name of its scores
            own = {
                "hf_subset",
                "languages",
                "main_score",
                "mteb_version",
                "bindkit",
                *record["scores"],
            }
            extra = {
                subset: set(e) - own - set(e.get("mcq_accuracy_by_n", {}))
                for subset, e in by_subset.items()
            }
            assert extra == {
                "default": {"accuracy"},
                "independent": {"map_at_1000"},
                "nested": {"map_at_1000"},
            }, extra


def test_the_export_passes_mtebs_validate_and_filter_without_registration(
    results: Path, tmp_path: Path
) -> None:
    """In a fresh process (nothing registered): mteb's own load_results with
    validate_and_filter=True keeps every file and every score, given the export's tasks."""
    import subprocess
    import sys

    out = tmp_path / "mteb"
    export_mteb(results, out)
    script = (
        "import sys, json, mteb\n"
        "from mteb.cache import ResultCache\n"
        "from bindkit.mteb_bridge.mteb_results import exported_tasks\n"
        "out = sys.argv[1]\n"
        "tasks = exported_tasks(out)\n"
        "names = {t.metadata.name for t in tasks}\n"
        "assert not names & set(mteb.get_tasks.__globals__.get('_TASKS_REGISTRY', {})), names\n"
        "plain = ResultCache(out).load_results(include_remote=False)\n"
        "checked = ResultCache(out).load_results(\n"
        "    tasks=tasks, include_remote=False, validate_and_filter=True)\n"
        "(a,), (b,) = plain.model_results, checked.model_results\n"
        "scores = lambda m: {r.task_name: r.scores for r in m.task_results}\n"
        "assert scores(a) == scores(b) and len(scores(b)) == 4, (scores(a), scores(b))\n"
        "print(json.dumps(sorted(scores(b))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(out)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1])[0] == "BindkitTriplets-trip"


def test_an_export_that_mteb_would_filter_is_refused(tmp_path: Path) -> None:
    """check_with_mteb: a file with a subset its task does not declare is not written."""
    import mteb
    from mteb.results import TaskResult as Result

    from bindkit.mteb_bridge.mteb_results import check_with_mteb, task_for

    data = {"name": "s", "source": str(tmp_path), "sha256": "0" * 64}
    task = task_for("SABERRetrievalNested", "tt", "s", data)
    fields = {
        "dataset_revision": "0" * 64,
        "task_name": task.metadata.name,
        "mteb_version": mteb.__version__,
        "scores": {"test": [{"hf_subset": "nested", "languages": ["eng-Latn"], "main_score": 0.5}]},
        "evaluation_time": 0.0,
        "kg_co2_emissions": None,
    }
    check_with_mteb(Result.model_validate(fields), task, tmp_path / "ok.json")
    nested = fields["scores"]["test"][0]
    # a subset the task does not declare: mteb would drop it
    extra = {**fields, "scores": {"test": [nested, {**nested, "hf_subset": "x"}]}}
    # the declared subset missing: mteb would fill it with a NaN main score
    missing = {**fields, "scores": {"test": [{**nested, "hf_subset": "x"}]}}
    for wrong in (extra, missing):
        with pytest.raises(BindkitError, match="validate_and_filter_scores changes this export"):
            check_with_mteb(Result.model_validate(wrong), task, tmp_path / "bad.json")


def test_benchmark_result_of_the_export_has_bindkits_scores(
    small_saber: Path, results: Path, tmp_path: Path
) -> None:
    """mteb's benchmark table (load_results on a Benchmark of the registered SABER tasks, then
    get_benchmark_result) reads the export: one row for the model (mteb's table keeps only
    models of its registry: register_models adds the export's), bindkit's scores."""
    import mteb

    from bindkit.mteb_bridge import mteb_tasks

    out = tmp_path / "mteb"
    export_mteb(results, out, tasks=["saber"])
    register_models(out)  # (another test of this process may have registered it already)
    assert mteb.get_model_meta("bindkit/bow").embed_dim == 512
    tasks = mteb_tasks.saber_tasks(small_saber)
    mteb_tasks.register(tasks)
    benchmark = mteb.Benchmark(name="bindkit SABER", tasks=tasks)
    loaded = ResultCache(out).load_results(tasks=benchmark, include_remote=False)
    table = loaded.get_benchmark_result()
    (record,) = [json.loads(p.read_text()) for p in results.rglob("*.json") if "saber" in p.parts]
    (row,) = table.to_dict("records")
    assert row["Model"] == "bindkit/bow" and row["Embedding Dimensions"] == 512
    assert row["VisionCentricQA"] == pytest.approx(record["scores"]["mcq_accuracy"], abs=1e-6)
    # mteb's type column averages its tasks: the two retrieval tasks' mAPs
    mean = (record["scores"]["map_independent"] + record["scores"]["map_nested"]) / 2
    assert row["Any2AnyRetrieval"] == pytest.approx(mean, abs=1e-6)


def test_a_folder_and_its_hf_export_evaluated_both_export_once(
    small_saber: Path, tmp_path: Path
) -> None:
    """The same data evaluated from its folder and from its `bindkit export` is one
    measurement: written once, the other result named in `same_as`."""
    pytest.importorskip("datasets")
    results = tmp_path / "r"
    hf = tmp_path / "small-hf"
    assert main(["export", "saber", str(small_saber), "--out", str(hf)]) == 0
    for data in (small_saber, hf):
        evaluate(["bow"], task="saber", data=data, out=results, cache=False, report=False)
    assert len(list(results.rglob("*.json"))) == 2
    written = export_mteb(results, tmp_path / "mteb")  # MCQ, independent, nested
    assert len(written) == 3
    (entry,) = [e for e in json.loads(written[0].read_text())["scores"]["test"]]
    assert len(entry["bindkit"]["same_as"]) == 1
    assert {entry["bindkit"]["data"]["source"], entry["bindkit"]["same_as"][0]} != set()


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


def test_model_meta_takes_mtebs_fields_where_mteb_knows_the_weights() -> None:
    """st:default is mteb's all-MiniLM-L6-v2: its fields under bindkit's name and revision; with
    an adapter only the sizes stay and adapted_from names it; bow's from its fingerprint."""
    from bindkit.mteb_bridge.mteb_models import model_meta

    st = {"backend": "st", "model": "all-MiniLM-L6-v2", "adapter": None}
    meta = model_meta("st:default", "f" * 24, st, modalities=["text"])
    assert (meta.name, meta.revision) == ("bindkit/st:default", "f" * 24)
    assert meta.n_parameters == 22713216 and meta.embed_dim == 384
    assert meta.release_date == "2021-08-30" and meta.license == "apache-2.0"
    tuned = model_meta(
        "st:default+adapter=a", "e" * 24, st | {"adapter": {"w": 1}}, modalities=["text"]
    )
    assert tuned.adapted_from == "sentence-transformers/all-MiniLM-L6-v2"
    assert tuned.release_date is None and tuned.n_parameters == 22713216
    bow = model_meta("bow", "b" * 24, {"backend": "bow", "dim": 512}, modalities=["text"])
    assert bow.embed_dim == 512 and bow.n_parameters == 0 and bow.release_date is None
    mteb_desc = {"backend": "mteb", "model": "sentence-transformers/all-MiniLM-L6-v2"}
    mteb_desc["revision"] = "8b3219a92973c328a8e22fadcfa821b5dc75636a"
    own = model_meta(
        "mteb:sentence-transformers/all-MiniLM-L6-v2", "c" * 24, mteb_desc, modalities=["text"]
    )
    assert own.revision == mteb_desc["revision"] and own.n_parameters == 22713216
