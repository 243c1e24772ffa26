"""Winoground, ColorSwap and BiVLC: text, image and group scores on fixtures in their published
formats (Winoground's examples.jsonl + images/, the Hub's parquet exports with embedded images)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder
from _per_query import mean_is_score
from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.tasks.pairs._base import score_pairs

E = np.eye(8, dtype=np.float32)


def test_scores_follow_winoground_and_count_ties_wrong() -> None:
    # item 0: perfect; item 1: c0 fits both images best (text wrong, image right);
    # item 2: everything equal (all wrong)
    c0 = np.array([E[0], E[0], E[5]])
    c1 = np.array([E[1], E[1], E[5]])
    i0 = np.array([E[0], E[0], E[5]])
    i1 = np.array([E[1], (E[0] * 0.8 + E[1] * 0.6), E[5]])
    s = score_pairs(c0, c1, i0, i1, "wrong")
    assert s["text_score"].tolist() == [1.0, 0.0, 0.0]
    assert s["image_score"].tolist() == [1.0, 1.0, 0.0]
    assert s["group_score"].tolist() == [1.0, 0.0, 0.0]


def test_winoground_fixture_with_a_missing_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "winoground"
    (data / "images").mkdir(parents=True)
    rows = [
        {
            "id": 0,
            "caption_0": "a mug in grass",
            "caption_1": "grass in a mug",
            "image_0": "ex_0_img_0",
            "image_1": "ex_0_img_1",
            "tag": "Object",
            "collapsed_tag": "Object",
        },
        {
            "id": 1,
            "caption_0": "x",
            "caption_1": "y",
            "image_0": "ex_1_img_0",
            "image_1": "ex_1_img_1",
            "tag": "Relation",
            "collapsed_tag": "Relation",
        },
    ]
    (data / "examples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for name in ("ex_0_img_0", "ex_0_img_1", "ex_1_img_0"):
        (data / "images" / f"{name}.png").write_bytes(name.encode())
    model = TableEmbedder(
        {
            "a mug in grass": E[0],
            "grass in a mug": E[1],
            "ex_0_img_0.png": E[0],
            "ex_0_img_1.png": E[1],
        }
    )
    with pytest.raises(BindkitError, match="winoground: 1 of 4 images missing"):
        evaluate([model], task="winoground", data=data, out=tmp_path / "r", verbose=False)
    (record,) = evaluate(
        [model],
        task="winoground",
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        allow_missing_images=True,
    )
    assert record["partial"] is True
    assert record["scores"]["group_score"] == 1.0 and record["scores"]["text_score"] == 1.0
    assert record["scores"]["group_score_by_tag"] == {"Object": 1.0}
    assert record["counts"] == {"items": 1, "missing_images": 1, "items_total": 2}
    for name in ("group_score", "text_score", "image_score"):
        assert mean_is_score(tmp_path / "r", record, name, name).ids == ("0",)  # the scored one
    assert "winoground: 1 of 4 images missing" in capsys.readouterr().err
    (data / "examples.jsonl").write_text('{"caption_0": "x"}\n')
    with pytest.raises(
        DataFormatError, match=r"examples\.jsonl:1: field 'caption_1' must be a string"
    ):
        evaluate([model], task="winoground", data=data, out=tmp_path / "r", verbose=False)


def _png(rgb: tuple[int, int, int]) -> dict[str, object]:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), rgb).save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def _parquet(path: Path, rows: list[dict[str, object]]) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)


def test_colorswap_parquet_fixture(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    rows = [
        {
            "id": 0,
            "image_1": _png((255, 0, 0)),
            "image_2": _png((0, 0, 255)),
            "caption_1": "a red cup and a blue hat",
            "caption_2": "a blue cup and a red hat",
        },
        {
            "id": 1,
            "image_1": _png((0, 255, 0)),
            "image_2": _png((9, 9, 9)),
            "caption_1": "green",
            "caption_2": "grey",
        },
    ]
    _parquet(tmp_path / "colorswap" / "data" / "test-00000-of-00001.parquet", rows)
    train = [{**rows[1], "id": 7}] * 3  # another split beside it: never mixed into test
    _parquet(tmp_path / "colorswap" / "data" / "train-00000-of-00001.parquet", train)
    model = TableEmbedder(
        {
            "rgb255-0-0": E[0],
            "rgb0-0-255": E[1],
            "a red cup and a blue hat": E[0],
            "a blue cup and a red hat": E[1],
            "rgb0-255-0": E[2],
            "rgb9-9-9": E[2],
            "green": E[2],
            "grey": E[3],
        }
    )
    (record,) = evaluate(
        [model],
        task="colorswap",
        data=tmp_path / "colorswap",
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    # item 1: both images identical -> the image score ties (wrong), text score also fails for c1
    assert record["subset"] == "test"
    assert record["scores"] == {"text_score": 0.5, "image_score": 0.5, "group_score": 0.5}
    assert record["counts"] == {"items": 2}
    assert len(mean_is_score(tmp_path / "r", record, "group_score", "group_score").ids) == 2
    (other,) = evaluate(
        [model],
        task="colorswap",
        data=tmp_path / "colorswap",
        subsets="train",
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert other["subset"] == "train" and other["counts"] == {"items": 3}


def test_parquet_splits_by_file_name_and_by_the_hub_convert_layout(tmp_path: Path) -> None:
    from bindkit.tasks.pairs._parquet import parquet_splits

    for name in ("data/test-00000-of-00002.parquet", "data/test-00001-of-00002.parquet"):
        (tmp_path / "a" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "a" / name).touch()
    (tmp_path / "a" / "data" / "train-00000-of-00001.parquet").touch()
    assert {k: len(v) for k, v in parquet_splits(tmp_path / "a", "x").items()} == {
        "test": 2,
        "train": 1,
    }
    for split in ("train", "test"):  # refs/convert/parquet: <config>/<split>/0000.parquet
        (tmp_path / "b" / "default" / split).mkdir(parents=True)
        (tmp_path / "b" / "default" / split / "0000.parquet").touch()
    assert list(parquet_splits(tmp_path / "b", "x")) == ["test", "train"]


def test_bivlc_parquet_fixture_and_missing_column(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    rows = [
        {
            "image": _png((255, 0, 0)),
            "caption": "pos",
            "negative_image": _png((0, 0, 255)),
            "negative_caption": "neg",
            "type": "swap",
            "subtype": "att",
        },
        {
            "image": _png((0, 255, 0)),
            "caption": "p2",
            "negative_image": _png((9, 9, 9)),
            "negative_caption": "n2",
            "type": "replace",
            "subtype": "obj",
        },
    ]
    file = tmp_path / "bivlc" / "test.parquet"
    _parquet(file, rows)
    model = TableEmbedder({"rgb255-0-0": E[0], "rgb0-0-255": E[1], "pos": E[0], "neg": E[1]})
    (record,) = evaluate(
        [model], task="bivlc", data=file, out=tmp_path / "r", cache=False, verbose=False
    )
    assert record["scores"]["group_score_by_tag"]["swap"] == 1.0
    assert record["scores"]["group_score"] == pytest.approx(
        record["scores"]["group_score_by_tag"]["replace"] / 2 + 0.5
    )
    _parquet(file, [{k: v for k, v in r.items() if k != "negative_image"} for r in rows])
    with pytest.raises(DataFormatError, match="no column 'negative_image'"):
        evaluate([model], task="bivlc", data=file, out=tmp_path / "r2", cache=False, verbose=False)
