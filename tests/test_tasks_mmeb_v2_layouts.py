"""MMEB-V2's annotation files in the layouts the Hub publishes them in.

``VLM2Vec/UCF101``, ``VLM2Vec/Kinetics-700`` and ``VLM2Vec/SmthSmthV2`` hold ``data/train.jsonl``
and ``data/test.jsonl`` named by their card's ``configs:``; ``VLM2Vec/MSVD`` holds
``msvd_{train,val,test}.json`` at the root; ``VLM2Vec/MVBench`` one JSON file per config;
``VLM2Vec/HMDB51``'s parquet is its ``refs/convert/parquet`` revision (``default/test/*.parquet``).
VLM2Vec reads each with ``datasets.load_dataset(hub_id, config, split=...)``; these fixtures
restate the layouts and check that the readers get every row.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bindkit.errors import DataFormatError
from bindkit.tasks.mmeb._mmeb_v2_data import SOURCES
from bindkit.tasks.mmeb._mmeb_v2_video import MVBENCH_SUBSETS

pytest.importorskip("datasets")
pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")


def _card(base: Path, configs: dict[str, dict[str, str]]) -> None:
    """A dataset card whose ``configs:`` maps each config's splits to files."""
    lines = ["---", "configs:"]
    for name, splits in configs.items():
        lines += [f"- config_name: {name}", "  data_files:"]
        for split, path in splits.items():
            lines += [f"  - split: {split}", f"    path: {path}"]
    base.mkdir(parents=True, exist_ok=True)
    (base / "README.md").write_text("\n".join([*lines, "---", "", "A card."]) + "\n")


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _ids(name: str, root: Path) -> list[str]:
    return [q.id for q in SOURCES[name].reader(root, name, SOURCES[name]).queries]


@pytest.mark.parametrize(
    ("name", "repo"),
    [("UCF101", "VLM2Vec/UCF101"), ("K700", "VLM2Vec/Kinetics-700")],
)
def test_jsonl_under_data_named_by_the_card(tmp_path: Path, name: str, repo: str) -> None:
    base = tmp_path / repo
    _card(base, {"default": {"train": "data/train.jsonl", "test": "data/test.jsonl"}})
    _jsonl(base / "data/train.jsonl", [{"video_id": "t0", "pos_text": "Archery"}])
    test = [{"video_id": "v1", "pos_text": "Archery"}, {"video_id": "v2", "pos_text": "Biking"}]
    _jsonl(base / "data/test.jsonl", test)
    assert _ids(name, tmp_path) == ["v1", "v2"]  # the test split only


def test_smthsmthv2_jsonl(tmp_path: Path) -> None:
    base = tmp_path / "VLM2Vec/SmthSmthV2"
    _card(base, {"default": {"train": "data/train.jsonl", "test": "data/test.jsonl"}})
    row = {"video_id": 7, "pos_text": "pushing a box", "neg_text": ["pushing a box", "x"]}
    _jsonl(base / "data/train.jsonl", [row | {"video_id": 1}])
    _jsonl(base / "data/test.jsonl", [row])
    split = SOURCES["SmthSmthV2"].reader(tmp_path, "SmthSmthV2", SOURCES["SmthSmthV2"])
    assert [(q.id, q.candidates) for q in split.queries] == [("7", ("pushing a box", "x"))]


def test_msvd_root_json(tmp_path: Path) -> None:
    base = tmp_path / "VLM2Vec/MSVD"
    _card(
        base,
        {
            "default": {
                "train": "msvd_train.json",
                "validation": "msvd_val.json",
                "test": "msvd_test.json",
            }
        },
    )
    for split, vid in (("train", "tr"), ("val", "va"), ("test", "te")):
        rows = [{"video_id": f"{vid}{i}", "caption": [f"a dog {i}", "other"]} for i in range(2)]
        (base / f"msvd_{split}.json").write_text(json.dumps(rows))
    assert _ids("MSVD", tmp_path) == ["te0", "te1"]


def test_msvd_root_json_without_a_card(tmp_path: Path) -> None:
    """The file name alone names the split, as ``datasets`` infers it."""
    base = tmp_path / "VLM2Vec/MSVD"
    base.mkdir(parents=True)
    (base / "msvd_test.json").write_text(json.dumps([{"video_id": "a", "caption": "c"}]))
    assert _ids("MSVD", tmp_path) == ["a"]


def test_mvbench_json_per_config(tmp_path: Path) -> None:
    base = tmp_path / "VLM2Vec/MVBench"
    _card(base, {s: {"train": f"json/{s}.json"} for s in MVBENCH_SUBSETS})
    for i, s in enumerate(MVBENCH_SUBSETS):
        row = {"video": f"c{i}.mp4", "question": "q?", "candidates": ["a", "b"], "answer": "b"}
        (base / "json").mkdir(exist_ok=True)
        (base / f"json/{s}.json").write_text(json.dumps([row]))
    ids = _ids("MVBench", tmp_path)
    assert ids == [f"{s}/{i}" for i, s in enumerate(MVBENCH_SUBSETS)]


def test_hmdb51_parquet_from_refs_convert(tmp_path: Path) -> None:
    """``hf download VLM2Vec/HMDB51 --revision refs/convert/parquet``: ``default/test/*.parquet``
    (with the card of that revision, which names no files)."""
    base = tmp_path / "VLM2Vec/HMDB51"
    (base / "default/test").mkdir(parents=True)
    (base / "default/train").mkdir(parents=True)
    rows = [{"video_id": "brush_hair_1", "pos_text": "brush_hair"}]
    pq.write_table(pa.Table.from_pylist(rows), base / "default/test/0000.parquet")
    pq.write_table(pa.Table.from_pylist(rows * 2), base / "default/train/0000.parquet")
    assert _ids("HMDB51", tmp_path) == ["brush_hair_1"]


def test_a_json_file_without_a_field_names_it(tmp_path: Path) -> None:
    base = tmp_path / "VLM2Vec/UCF101"
    _card(base, {"default": {"test": "data/test.jsonl"}})
    _jsonl(base / "data/test.jsonl", [{"video_id": "v1"}])
    with pytest.raises(DataFormatError, match=r"test\.jsonl: no field 'pos_text'"):
        _ids("UCF101", tmp_path)


def test_no_annotation_files_names_the_download(tmp_path: Path) -> None:
    (tmp_path / "VLM2Vec/UCF101").mkdir(parents=True)
    with pytest.raises(DataFormatError, match=r"download huggingface.co/datasets/VLM2Vec/UCF101"):
        _ids("UCF101", tmp_path)


# -- seed 002's sizes ---------------------------------------------------------------------------
def _split(queries: int, candidates: int, ranking: str) -> Any:
    from bindkit.tasks.mmeb._mmeb_v2_files import Input, Query, Split

    names = tuple(f"c{i}" for i in range(candidates))
    local = ranking == "local"
    split = Split(
        [
            Query(str(i), Input("text", "q"), names if local else (), ("c0",))
            for i in range(queries)
        ],
        {n: Input("text", n) for n in names},
        ranking,  # type: ignore[arg-type]
    )
    return split


def test_seed_002_sizes_match_quietly() -> None:
    from bindkit.tasks.mmeb.mmeb_v2 import size_warning

    assert size_warning("ActivityNetQA", _split(1000, 2, "local")) is None
    assert size_warning("Breakfast", _split(433, 10, "global")) is None
    assert size_warning("UCF101", _split(1000, 101, "global")) is None
    assert size_warning("EgoSchema", _split(500, 5, "local")) is None
    assert size_warning("K700", _split(1000, 700, "global")) is None
    assert size_warning("Video-MME", _split(1000, 4, "local")) is None
    assert size_warning("MSVD", _split(3, 3, "global")) is None  # not a seed-002 dataset


def test_seed_002_sizes_that_differ_warn_in_one_line() -> None:
    from bindkit.tasks.mmeb.mmeb_v2 import size_warning

    line = size_warning("ActivityNetQA", _split(999, 2, "local"))
    assert line == (
        "warning: mmeb_v2 ActivityNetQA: 999 queries, 2 candidates per query; seed 002 reports "
        "1,000 queries, 2 candidates per query: check the download "
        "(huggingface.co/datasets/VLM2Vec/ActivityNetQA)"
    )
    assert "3 candidates per query" in str(size_warning("ActivityNetQA", _split(1000, 3, "local")))
    assert "9 candidates; seed 002 reports 433 queries, 10 candidates" in str(
        size_warning("Breakfast", _split(433, 9, "global"))
    )
    assert "1,000 queries" in str(size_warning("UCF101", _split(1000, 100, "global")))
    assert str(size_warning("EgoSchema", _split(499, 5, "local"))).startswith(
        "warning: mmeb_v2 EgoSchema: 499 queries; seed 002 reports 500 queries:"
    )
    for name, n in (("K700", 1001), ("Video-MME", 10)):
        assert size_warning(name, _split(n, 4, "global")) is not None


def test_the_task_finds_and_hashes_json_layouts(tmp_path: Path) -> None:
    """``load`` lists a dataset as present from its JSON files, and its data identity follows
    them (a changed JSONL file changes it)."""
    from bindkit.tasks.base import get_task

    ucf = tmp_path / "VLM2Vec/UCF101"
    _card(ucf, {"default": {"test": "data/test.jsonl"}})
    _jsonl(ucf / "data/test.jsonl", [{"video_id": "v1", "pos_text": "Archery"}])
    msvd = tmp_path / "VLM2Vec/MSVD"
    _card(msvd, {"default": {"test": "msvd_test.json"}})
    (msvd / "msvd_test.json").write_text(json.dumps([{"video_id": "a", "caption": "c"}]))
    task = get_task("mmeb_v2")
    dataset = task.load(tmp_path)
    assert set(dataset.subsets) == {"UCF101", "MSVD"}
    before = task.data_identity(dataset, "UCF101", "it")
    _jsonl(ucf / "data/test.jsonl", [{"video_id": "v2", "pos_text": "Archery"}])
    assert task.data_identity(task.load(tmp_path), "UCF101", "it") != before
    assert task.data_identity(task.load(tmp_path), "MSVD", "it") == task.data_identity(
        dataset, "MSVD", "it"
    )
