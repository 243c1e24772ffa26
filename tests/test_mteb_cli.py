"""``bindkit mteb ...``: mteb's own CLI finds bindkit's tasks and models (mteb has no plug-in
hook, so the wrapper registers them); mteb's loaders read what it writes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("mteb")

import mteb
from mteb.cache import ResultCache

from bindkit import evaluate
from bindkit.errors import BindkitError
from bindkit.mteb_bridge import mteb_cli, mteb_tasks


def test_split_args_takes_bindkits_options_and_keeps_mtebs_in_order() -> None:
    extra, rest = mteb_cli.split_args(
        [
            *["run", "--saber", "a", "-m", "bindkit/bow", "-t", "X", "Y", "--saber=b"],
            *["--pairings", "tt,ti", "--triplets=t.jsonl", "--output-folder", "o"],
            *["--colorswap", "cs", "--bivlc=bv"],
        ]
    )
    assert extra.saber == ["a", "b"] and extra.pairings == ["tt", "ti"]
    assert extra.triplets == ["t.jsonl"]
    assert (extra.colorswap, extra.bivlc) == (["cs"], ["bv"])
    assert rest == ["run", "-m", "bindkit/bow", "-t", "X", "Y", "--output-folder", "o"]
    assert mteb_cli.split_args(["run"])[0].pairings == ["tt"]
    with pytest.raises(BindkitError, match="--saber needs a value"):
        mteb_cli.split_args(["run", "--saber", "-m", "x"])


def test_colorswap_registers_as_mtebs_compositionality(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), (255, 0, 0)).save(buffer, format="PNG")
    image = {"bytes": buffer.getvalue(), "path": None}
    row = {"id": 0, "image_1": image, "image_2": image, "caption_1": "a", "caption_2": "b"}
    data = tmp_path / "colorswap" / "data" / "test-00000-of-00001.parquet"
    data.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist([row]), data)
    names = mteb_cli.register_tasks(mteb_cli.Extra(colorswap=[str(data.parent.parent)]))
    assert names[-1] == "BindkitColorSwap"
    found = mteb.get_tasks(task_types=["Compositionality"])
    assert "BindkitColorSwap" in {t.metadata.name for t in found}
    assert mteb.get_task("BindkitColorSwap").metadata.is_filled()


def test_model_argument_reads_mtebs_model_option() -> None:
    assert mteb_cli.model_argument(["run", "-m", "bindkit/bow", "-t", "A"]) == "bindkit/bow"
    assert mteb_cli.model_argument(["run", "--model=bindkit/st:default"]) == "bindkit/st:default"
    assert mteb_cli.model_argument(["run", "-mbindkit/bow"]) == "bindkit/bow"
    assert mteb_cli.model_argument(["available-tasks"]) is None
    two = ["run", "-m", "bindkit/bow", "-t", "A", "--model=bindkit/bow+dim=64", "-mx"]
    assert mteb_cli.model_arguments(two) == ["bindkit/bow", "bindkit/bow+dim=64", "x"]


def test_registered_tasks_are_among_all_of_mtebs_tasks(small_saber: Path) -> None:
    """mteb.get_tasks() with filters (what `mteb available-tasks` and `mteb run --task-types`
    list) sees the registered tasks, every metadata field mteb checks filled."""
    names = mteb_cli.register_tasks(mteb_cli.Extra(saber=[str(small_saber)]))
    assert names == [
        "SABERMCQ",
        "SABERRetrievalIndependent",
        "SABERRetrievalNested",
        "SABERMCQ-small",
        "SABERRetrievalIndependent-small",
        "SABERRetrievalNested-small",
    ]
    qa = {t.metadata.name: t for t in mteb.get_tasks(task_types=["VisionCentricQA"])}
    assert {"SABERMCQ", "SABERMCQ-small"} <= set(qa)
    retrieval = mteb.get_tasks(task_types=["Any2AnyRetrieval"], categories=["t2t"])
    assert "SABERRetrievalNested-small" in {t.metadata.name for t in retrieval}
    meta = qa["SABERMCQ-small"].metadata
    assert meta.is_filled(), [k for k in type(meta).model_fields if getattr(meta, k) is None]
    assert meta.dataset["path"] == str(small_saber.resolve())
    assert meta.reference == small_saber.resolve().as_uri()
    assert str(small_saber) not in meta.description
    assert mteb.get_task("SABERMCQ").metadata.dataset["path"] == "builtin:saber"
    mteb_cli.register_tasks(mteb_cli.Extra(saber=[str(small_saber)]))  # again: replaced
    again = [t for t in mteb.get_tasks(task_types=["VisionCentricQA"])]
    assert [t.metadata.name for t in again].count("SABERMCQ-small") == 1


def test_register_model_serves_a_bindkit_spec_to_mtebs_get_model() -> None:
    meta = mteb_cli.register_model("bindkit/bow")
    model = mteb.get_model("bindkit/bow")
    assert isinstance(model, mteb_tasks.MtebEncoder)
    assert model.mteb_model_meta.revision == meta.revision == model.model.fingerprint
    assert meta.embed_dim == 512 and meta.framework == ["NumPy"]
    with pytest.raises(BindkitError, match="not bindkit/<model spec>"):
        mteb_cli.register_model("bindkit/")


def test_unknown_bindkit_model_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    from bindkit.cli import main

    code = main(["mteb", "run", "-m", "bindkit/nosuchbackend", "-t", "SABERMCQ"])
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "error" in x or "Traceback" in x]
    assert code == 2 and "unknown model backend 'nosuchbackend'" in line


def test_mteb_run_in_process_on_a_bindkit_task(
    small_saber: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bindkit mteb run` through bindkit's CLI entry: mteb's own `run` writes its results
    layout for a bindkit task and model, with bindkit's MCQ accuracy as the main score."""
    from bindkit.cli import main

    out = tmp_path / "o"
    argv = ["mteb", "run", "-m", "bindkit/bow", "-t", "SABERMCQ-small", "--saber"]
    assert main([*argv, str(small_saber), "--output-folder", str(out), "-v", "0"]) == 0
    (record,) = evaluate(
        ["bow"], task="saber", data=small_saber, out=tmp_path / "r", cache=False, report=False
    )
    path = out / "results" / "bindkit__bow" / record["model"]["fingerprint"] / "SABERMCQ-small.json"
    (entry,) = json.loads(path.read_text())["scores"]["test"]
    assert entry["main_score"] == pytest.approx(record["scores"]["mcq_accuracy"], abs=1e-5)
    assert main(["mteb", "available-tasks", "--task-types", "VisionCentricQA"]) == 0
    assert "SABERMCQ," in capsys.readouterr().out


def test_unknown_task_is_one_line_naming_the_data_options(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from bindkit.cli import main

    code = main(["mteb", "run", "-m", "bindkit/bow", "-t", "SABERMCQ-nope", "-v", "0"])
    err = capsys.readouterr().err
    (line,) = [x for x in err.splitlines() if "error" in x or "Traceback" in x]
    assert code == 2 and "'SABERMCQ-nope' not found" in line and "--saber DIR" in line


@pytest.mark.slow
def test_mteb_run_from_a_shell_writes_results_mteb_loads(small_saber: Path, tmp_path: Path) -> None:
    """`bindkit mteb run` in its own process: mteb's `run` command on a bindkit task and model;
    mteb's ResultCache reads the folder it wrote, with bindkit's own scores."""
    out = tmp_path / "mteb-out"
    command = [sys.executable, "-m", "bindkit", "mteb", "run", "-m", "bindkit/bow"]
    command += ["-t", "SABERMCQ-small", "SABERRetrievalIndependent-small"]
    command += ["SABERRetrievalNested-small", "--saber", str(small_saber)]
    command += ["--output-folder", str(out), "-v", "0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (record,) = evaluate(
        ["bow"], task="saber", data=small_saber, out=tmp_path / "r", cache=False, report=False
    )
    folder = out / "results" / "bindkit__bow" / record["model"]["fingerprint"]
    assert json.loads((folder / "model_meta.json").read_text())["name"] == "bindkit/bow"
    results = ResultCache(out).load_results(include_remote=False)
    (model,) = results.model_results
    scores = {t.task_name: t for t in model.task_results}
    mcq = scores["SABERMCQ-small"].get_score()
    assert mcq == pytest.approx(record["scores"]["mcq_accuracy"], abs=1e-5)
    for subset in ("independent", "nested"):
        got = scores[f"SABERRetrieval{subset.title()}-small"].get_score()  # the task's own mAP
        assert got == pytest.approx(record["scores"][f"map_{subset}"], abs=1e-5)


def test_an_hf_export_registers_as_its_folder_does(small_saber: Path, tmp_path: Path) -> None:
    """--saber HFDIR (a `bindkit export` folder) gives the same task data as the folder; the
    metadata names the export, as the user gave it."""
    pytest.importorskip("datasets")
    from bindkit.cli import main

    hf = tmp_path / "small-hf"
    assert main(["export", "saber", str(small_saber), "--out", str(hf)]) == 0
    (mcq, _, _) = mteb_tasks.saber_tasks(hf)
    (plain, _, _) = mteb_tasks.saber_tasks(small_saber)
    assert mcq.metadata.name == plain.metadata.name == "SABERMCQ-small"
    assert mcq.metadata.revision == plain.metadata.revision
    assert mcq.metadata.dataset["path"] == str(hf.resolve())
    mcq.load_data()
    plain.load_data()
    assert (
        mcq.dataset["default"]["test"]["queries"]["text"]
        == (plain.dataset["default"]["test"]["queries"]["text"])
    )


def test_dataset_path_says_where_the_data_is(tmp_path: Path) -> None:
    assert mteb_tasks.dataset_path("hf:me/saber") == "me/saber"
    assert mteb_tasks.dataset_path("hf:me/triplets:no_overlap/val") == "me/triplets"
    assert mteb_tasks.dataset_path("builtin:saber seed=0") == "builtin:saber"
    assert mteb_tasks.dataset_path(str(tmp_path / "s")) == str((tmp_path / "s").resolve())
