"""MMEB v1 on a fixture in the Hub's parquet layout: Hit@1 with ties counted right (argmax keeps
index 0), image and text sides, missing images, and the meta-task table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder
from _per_query import mean_is_score
from bindkit.evaluation import evaluate

E = np.eye(8, dtype=np.float32)


def _write(path: Path, rows: list[dict[str, object]]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def test_mmeb_fixture(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "MMEB-eval"
    images = data / "eval_images"
    (images / "ImageNet-1K").mkdir(parents=True)
    for name in ("dog.jpg", "cat.jpg"):
        (images / "ImageNet-1K" / name).write_bytes(name.encode())
    inst = "<|image_1|>\nRepresent the given image for classification"
    _write(
        data / "ImageNet-1K" / "test-00000-of-00001.parquet",
        [
            {
                "qry_text": inst,
                "qry_img_path": "ImageNet-1K/dog.jpg",
                "tgt_text": ["dog", "cat", "car"],
                "tgt_img_path": ["", "", ""],
            },
            {
                "qry_text": inst,
                "qry_img_path": "ImageNet-1K/cat.jpg",
                "tgt_text": ["cat", "kitten"],
                "tgt_img_path": ["", ""],
            },  # a tie: right
            {
                "qry_text": inst,
                "qry_img_path": "ImageNet-1K/missing.jpg",
                "tgt_text": ["x", "y"],
                "tgt_img_path": ["", ""],
            },
        ],
    )
    _write(
        data / "MSCOCO_t2i" / "test-00000-of-00001.parquet",
        [
            {
                "qry_text": "Find me an everyday image that matches the given caption: a dog",
                "qry_img_path": "",
                "tgt_text": [inst, inst],
                "tgt_img_path": ["ImageNet-1K/cat.jpg", "ImageNet-1K/dog.jpg"],
            },
        ],
    )
    model = TableEmbedder(
        {
            "dog.jpg": E[0],
            "dog": E[0],
            "cat": E[1],
            "car": E[2],
            "cat.jpg": E[1],
            "kitten": E[1],
            "Find me an everyday image that matches the given caption: a dog": E[0],
        }
    )
    records = evaluate(
        [model],
        task="mmeb",
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        allow_missing_images=True,
    )
    by = {r["subset"]: r for r in records}
    assert list(by) == ["ImageNet-1K", "MSCOCO_t2i"]  # declared order, only those present
    assert by["ImageNet-1K"]["scores"] == {"hit_at_1": 1.0}
    assert by["ImageNet-1K"]["counts"] == {"rows": 3, "scored": 2, "missing_images": 1}
    assert by["MSCOCO_t2i"]["scores"] == {"hit_at_1": 0.0}  # the answer (cat) is not the dog
    hits = mean_is_score(tmp_path / "r", by["ImageNet-1K"], "hit", "hit_at_1")
    assert len(hits.ids) == 2  # the row with a missing image is left out
    assert "mmeb ImageNet-1K: 1 of 3 images missing" in capsys.readouterr().err
    # the instruction reached the embedder with the image token removed
    assert ("image", 2, "Represent the given image for classification") in model.calls
    report = (tmp_path / "r" / "report.md").read_text()
    assert "## MMEB Hit@1 per meta-task" in report
    assert "| fake:table | 100.0 (1) | – | 0.0 (1) | – | 50.0 (2) |" in report
