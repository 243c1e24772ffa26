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
