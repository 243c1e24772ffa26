"""``bindkit mine`` end to end with the bag-of-words model: format, cache, errors, restarts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main

COLORS = ["red", "blue", "green", "yellow"]
OBJECTS = ["cube", "ball", "kite", "cup"]


def pair_rows(task: str = "", labelled: bool = True) -> list[dict[str, Any]]:
    rows = []
    for color in COLORS:
        for obj in OBJECTS:
            row: dict[str, Any] = {
                "query": f"a {color} {obj}",
                "positive": f"a photo of one {color} {obj} on a table",
                "task": task,
            }
            if labelled:
                row["label"] = obj
            rows.append(row)
    return rows


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(*args: str) -> int:
    return main(["mine", "--model", "bow", *args])


def test_clusters_format_diagnostics_and_provenance(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = write_rows(tmp_path / "pairs.jsonl", pair_rows("a") + pair_rows("b"))
    out = tmp_path / "clusters.jsonl"
    assert run("--data", str(data), "--out", str(out), "--k", "3", "--m", "2") == 0
    clusters = [json.loads(line) for line in out.read_text().splitlines()]
    rows = {(r["task"], r["query"]): r for r in pair_rows("a") + pair_rows("b")}
    for cluster in clusters:
        pairs = cluster["pairs"]
        assert pairs[0]["query"] == cluster["anchor"]  # the anchor's own pair first
        assert 1 <= len(pairs) <= 4
        assert {p["task"] for p in pairs} == {cluster["task"]}  # mined within a task
        assert all(p == rows[(p["task"], p["query"])] for p in pairs)
        labels = [p["label"] for p in pairs]
        assert labels[0] not in labels[1:]  # the label filter is on by default
    report = json.loads((tmp_path / "clusters.diagnostics.json").read_text())
    assert report["provenance"]["model"] == "bow"
    assert report["provenance"]["options"]["k"] == 3
    assert len(report["provenance"]["data_sha256"]) == 64
    assert report["total"]["rows"] == 32 and set(report["tasks"]) == {"a", "b"}
    assert report["total"]["false_negative_rate"] == 0.0
    assert (tmp_path / "clusters.scatter.png").read_bytes()[:4] == b"\x89PNG"
    printed = capsys.readouterr().out
    assert "FN rate" in printed and "wrote" in printed


def test_a_second_method_embeds_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from bindkit.embed.backends.bow import BagOfWordsEmbedder

    data = write_rows(tmp_path / "pairs.jsonl", pair_rows("cache-test"))
    assert run("--data", str(data), "--out", str(tmp_path / "s.jsonl"), "--k", "3") == 0

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("embedded again")

    monkeypatch.setattr(BagOfWordsEmbedder, "_encode_texts", refuse)
    for method in ("hn", "hn-margin", "random"):
        out = tmp_path / f"{method}.jsonl"
        assert run("--data", str(data), "--out", str(out), "--k", "3", "--method", method) == 0
        assert len(out.read_text().splitlines()) == 16  # the baselines: one cluster per row


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        ([{"query": "a red cube"}], [], "row has no 'positive'"),
        (pair_rows()[:8], ["--k", "8"], "needs at least 9 per task"),
        (pair_rows("big") + pair_rows()[:3], ["--k", "3"], "task (no task) has 3 rows"),
        (
            [{"query": f"q{i}", "positive": f"p{i % 4}"} for i in range(12)],
            ["--k", "4"],
            "--k 4 is larger than the pool",
        ),
    ],
)
def test_bad_input_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    rows: list[dict[str, Any]],
    args: list[str],
    message: str,
) -> None:
    data = write_rows(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / "c.jsonl"
    assert run("--data", str(data), "--out", str(out), *args) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not out.exists()


def test_images_the_model_cannot_embed_and_missing_images(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "cat.png").write_bytes(b"\x89PNG")
    rows = pair_rows()
    rows[0]["positive"] = "cat.png"
    data = write_rows(tmp_path / "pairs.jsonl", rows)
    assert run("--data", str(data), "--out", str(tmp_path / "c.jsonl"), "--k", "3") == 2
    err = capsys.readouterr().err
    assert "image inputs, which this model cannot embed" in err

    rows[0]["positive"] = "dog.jpg"
    write_rows(data, rows)
    assert run("--data", str(data), "--out", str(tmp_path / "c.jsonl"), "--k", "3") == 2
    assert "image 'dog.jpg' not found" in capsys.readouterr().err


def test_a_killed_run_leaves_the_previous_file_and_a_rerun_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bindkit.mining.pipeline as mining

    data = write_rows(tmp_path / "pairs.jsonl", pair_rows("x") + pair_rows("y"))
    out = tmp_path / "c.jsonl"
    out.write_text("previous\n")
    real = mining.run_method
    calls = []

    def dies_on_the_second_task(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(mining, "run_method", dies_on_the_second_task)
    assert run("--data", str(data), "--out", str(out), "--k", "3") == 130
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.jsonl", "pairs.jsonl"]
    monkeypatch.setattr(mining, "run_method", real)
    assert run("--data", str(data), "--out", str(out), "--k", "3") == 0
    assert json.loads(out.read_text().splitlines()[0])["task"] == "x"


def test_library_call_and_bad_options() -> None:
    from bindkit.errors import BindkitError
    from bindkit.mining import MineConfig

    with pytest.raises(BindkitError, match="did you mean saha"):
        MineConfig(method="sahaa")
    with pytest.raises(BindkitError, match="--k 0"):
        MineConfig(k=0)


def test_clusters_without_negatives_are_dropped_and_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # seven "x" rows and one "y": with the label filter an x anchor's only valid negative is y,
    # which phase 2 gives to one leftover; the other leftovers find nothing
    rows = pair_rows(labelled=False)[:8]
    for i, row in enumerate(rows):
        row["label"] = "y" if i == 0 else "x"
    data = write_rows(tmp_path / "pairs.jsonl", rows)
    out = tmp_path / "c.jsonl"
    assert run("--data", str(data), "--out", str(out), "--k", "1", "--m", "8") == 0
    clusters = [json.loads(line) for line in out.read_text().splitlines()]
    # phase 1: (y, some x); phase 2: (x, y) once, then five x anchors with nothing left
    assert [len(c["pairs"]) for c in clusters] == [2, 2]
    report = json.loads((tmp_path / "c.diagnostics.json").read_text())["total"]
    assert report["dropped_singletons"] == 5 and report["uncovered_rows"] == 8 - 3
    assert report["clusters"] == len(clusters) and "1" not in report["cluster_sizes"]
    assert "dropped" in capsys.readouterr().out


def test_vectors_memory_mapped_or_chunked_give_the_same_pools(tmp_path: Path) -> None:
    import numpy as np

    from bindkit.embed.backends.bow import BagOfWordsEmbedder
    from bindkit.mining.data import read_pairs
    from bindkit.mining.pipeline import VectorStore, build_pools

    rows = read_pairs(write_rows(tmp_path / "p.jsonl", pair_rows("a") + pair_rows("b")[:9]))
    embedder = BagOfWordsEmbedder(spec="bow")
    plain = build_pools(embedder, rows)
    store = VectorStore(budget=0, near=tmp_path / "c.jsonl")  # everything over budget: spill
    mapped = build_pools(embedder, rows, store, chunk=5)
    assert store.folder is not None and store.folder.name.startswith(".c.jsonl.")
    for task, (members, pool) in plain.items():
        other_members, other = mapped[task]
        assert other_members == members
        assert isinstance(other.queries, np.memmap) and other.queries.mode == "r"
        np.testing.assert_array_equal(other.queries, pool.queries)
        np.testing.assert_array_equal(other.candidates, pool.candidates)
        np.testing.assert_array_equal(other.positive, pool.positive)
    store.close()
    assert not store.folder.exists()


def test_max_memory_spills_vectors_and_writes_the_same_clusters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bindkit.mining.pipeline as mining

    data = write_rows(tmp_path / "pairs.jsonl", pair_rows("a") + pair_rows("b"))
    assert run("--data", str(data), "--out", str(tmp_path / "ram.jsonl"), "--k", "3") == 0

    class Tiny(mining.VectorStore):
        def __init__(self, budget: int | None, near: Path) -> None:
            assert budget == 8 << 20  # --max-memory 8M reaches the store
            super().__init__(0, near)

    monkeypatch.setattr(mining, "VectorStore", Tiny)
    out = tmp_path / "disk.jsonl"
    assert run("--data", str(data), "--out", str(out), "--k", "3", "--max-memory", "8M") == 0
    assert out.read_bytes() == (tmp_path / "ram.jsonl").read_bytes()
    report = json.loads((tmp_path / "disk.diagnostics.json").read_text())
    assert report["provenance"]["vectors"] == "memory-mapped"
    assert report["provenance"]["options"]["max_memory"] == 8 << 20
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".vectors")]


@pytest.mark.parametrize(
    ("text", "size"),
    [("512M", 512 << 20), ("2G", 2 << 30), ("1.5GiB", 3 << 29), ("4096k", 4 << 20)],
)
def test_sizes_parse(text: str, size: int) -> None:
    from bindkit.mining.pipeline import parse_size

    assert parse_size(text) == size


def _no_model(monkeypatch: pytest.MonkeyPatch) -> None:
    import bindkit.embed.registry

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise AssertionError("the model was loaded before the inputs were checked")

    monkeypatch.setattr(bindkit.embed.registry, "load_embedder", refuse)


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("missing", [], "no such file"),
        ("empty", [], "no rows"),
        ("corrupt", [], "not valid JSON"),
        ("binary", [], "cannot read it as UTF-8"),
        ("ok", ["--k", "0"], "--k 0"),
        ("ok", ["--m", "-1"], "--m -1"),
        ("ok", ["--margin", "nan"], "--margin nan"),
        ("ok", ["--margin", "inf"], "--margin inf"),
        ("ok", ["--nprobe", "0"], "nprobe"),
        ("ok", ["--max-memory", "lots"], "--max-memory 'lots'"),
        ("ok", ["--max-memory", "1K"], "give at least 4M"),
        ("ok", ["--max-memory", "nan"], "--max-memory 'nan'"),
        ("ok", ["--k", "40"], "needs at least 41 per task"),
        ("out-under-file", [], "cannot be created"),
        ("out-is-dir", [], "is a directory"),
    ],
)
def test_bad_inputs_are_refused_before_the_model_loads(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    setup: str,
    args: list[str],
    message: str,
) -> None:
    _no_model(monkeypatch)
    data = tmp_path / "pairs.jsonl"
    out = tmp_path / "c.jsonl"
    if setup == "ok" or setup.startswith("out"):
        write_rows(data, pair_rows())
    elif setup == "empty":
        data.write_text("\n\n")
    elif setup == "corrupt":
        data.write_text('{"query": "a", "positive": \n')
    elif setup == "binary":
        data.write_bytes(b"\xff\xfe\x00")
    if setup == "out-under-file":
        (tmp_path / "file").write_text("x")
        out = tmp_path / "file" / "c.jsonl"
    elif setup == "out-is-dir":
        out.mkdir()
    assert (
        main(["mine", "--model", "st:default", "--data", str(data), "--out", str(out), *args]) == 2
    )
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1, err


@pytest.mark.parametrize("target", ["same", "symlink", "diagnostics"])
def test_the_output_may_not_be_the_input(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    target: str,
) -> None:
    _no_model(monkeypatch)
    data = write_rows(tmp_path / "p.jsonl", pair_rows())
    before = data.read_bytes()
    out = data
    if target == "symlink":  # the same file by another name
        out = tmp_path / "link.jsonl"
        out.symlink_to(data)
    elif target == "diagnostics":  # OUT.diagnostics.json would replace the data
        data = data.rename(tmp_path / "p.diagnostics.json")
        out = tmp_path / "p.jsonl"
    code = main(["mine", "--model", "st:default", "--data", str(data), "--out", str(out)])
    assert code == 2
    assert "an output never replaces an input" in capsys.readouterr().err
    assert data.read_bytes() == before


KILLED_MID_RUN = """
import os, signal, sys
import bindkit.mining.pipeline as mining
from bindkit.cli import main

real_run, calls = mining.run_method, []

def run_method(*args):
    calls.append(1)
    if len(calls) == 2:  # after the first task, vectors embedded and spilled to disk
        os.kill(os.getpid(), signal.SIGKILL)
    return real_run(*args)

class Spilling(mining.VectorStore):
    def __init__(self, budget, near):
        super().__init__(0, near)

mining.run_method, mining.VectorStore = run_method, Spilling
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_mine_killed_with_sigkill_then_rerun_gives_byte_identical_output(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys

    data = write_rows(tmp_path / "pairs.jsonl", pair_rows("x") + pair_rows("y"))
    env = {**os.environ, "BINDKIT_CACHE_DIR": str(tmp_path / "cache"), "BINDKIT_PROGRESS": "0"}
    args = ["--model", "bow", "--data", str(data), "--k", "3", "--max-memory", "64M"]
    reference = tmp_path / "ref" / "c.jsonl"
    assert main(["mine", *args, "--out", str(reference)]) == 0

    out = tmp_path / "run" / "c.jsonl"
    out.parent.mkdir()
    out.write_text("previous\n")
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_MID_RUN, "mine", *args, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    assert out.read_text() == "previous\n"  # the old file, untouched
    strays = [p for p in out.parent.iterdir() if p.name.endswith(".vectors")]
    assert len(strays) == 1  # the spilled vectors of the killed run
    rerun = subprocess.run(
        [sys.executable, "-m", "bindkit", "mine", *args, "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert out.read_bytes() == reference.read_bytes()
    ref_report = json.loads(reference.with_name("c.diagnostics.json").read_text())
    report = json.loads(out.with_name("c.diagnostics.json").read_text())
    ref_report["provenance"].pop("vectors"), report["provenance"].pop("vectors")
    assert report == ref_report
    assert sorted(p.name for p in out.parent.iterdir()) == sorted(
        p.name for p in reference.parent.iterdir()
    )
