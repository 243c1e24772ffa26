"""Every official score of a benchmark is computed, declared in its metadata and shown in the
report (issue 20, finding 9): Winoground/ColorSwap/BiVLC text and image scores (BiVLC per type),
ARO micro and per-relation accuracy, revisitop mP@1/5/10, SugarCrepe++ Image-P1/P2-Neg."""

from __future__ import annotations

import io
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder
from bindkit.evaluation import evaluate
from bindkit.tasks.base import task_classes

E = np.eye(8, dtype=np.float32)


def test_sugarcrepe_pp_reports_image_p1_neg_and_image_p2_neg(tmp_path: Path) -> None:
    data = tmp_path / "scpp"
    data.mkdir()
    rows = [
        {"id": 0, "filename": "a.jpg", "caption": "p1", "caption2": "p2", "negative_caption": "n"},
        {"id": 1, "filename": "b.jpg", "caption": "q1", "caption2": "q2", "negative_caption": "m"},
    ]
    for subset in ("replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj"):
        (data / f"{subset}.json").write_text(json.dumps(rows))
    images = tmp_path / "coco"
    images.mkdir()
    for name in ("a.jpg", "b.jpg"):
        (images / name).write_bytes(name.encode())
    # image a: P1 above N, P2 below; image b: both above N
    vectors = {"a.jpg": E[0], "p1": E[0], "p2": -E[0], "n": E[1]}
    vectors |= {"b.jpg": E[2], "q1": E[2], "q2": E[2] + E[3], "m": E[4]}
    (record,) = evaluate(
        [TableEmbedder(vectors)],
        task="sugarcrepe_pp",
        data=data,
        image_root=images,
        pairings="it",
        subsets="swap_att",
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert record["scores"] == {"itt_accuracy": 0.5, "image_p1_neg": 1.0, "image_p2_neg": 0.5}
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| fake:table | I→T | image_p1_neg | 100.0 |" in report
    assert "| fake:table | I→T | image_p2_neg | 50.0 |" in report


def _png(rgb: tuple[int, int, int]) -> dict[str, object]:
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), rgb).save(buffer, format="PNG")
    return {"bytes": buffer.getvalue(), "path": None}


def test_bivlc_reports_i2t_and_t2i_per_type(tmp_path: Path) -> None:
    pytest.importorskip("PIL")
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    rows = [
        {
            "image": _png((255, 0, 0)),
            "caption": "pos",
            "negative_image": _png((0, 0, 255)),
            "negative_caption": "neg",
            "type": "swap",
        },
        {  # the two captions embed alike: a tie on both sides (wrong)
            "image": _png((0, 255, 0)),
            "caption": "p2",
            "negative_image": _png((0, 254, 0)),
            "negative_caption": "n2",
            "type": "replace",
        },
    ]
    file = tmp_path / "bivlc" / "data" / "test-00000-of-00001.parquet"
    file.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows), file)
    vectors = {"rgb255-0-0": E[0], "rgb0-0-255": E[1], "pos": E[0], "neg": E[1]}
    vectors |= {"rgb0-255-0": E[2] + E[5], "rgb0-254-0": E[3] + E[5], "p2": E[2], "n2": E[2]}
    (record,) = evaluate(
        [TableEmbedder(vectors)],
        task="bivlc",
        data=tmp_path / "bivlc",
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    scores = record["scores"]
    assert scores["text_score_by_tag"] == {"replace": 0.0, "swap": 1.0}
    assert scores["image_score_by_tag"] == {"replace": 0.0, "swap": 1.0}
    assert scores["group_score_by_tag"]["swap"] == 1.0
    report = (tmp_path / "r" / "report.md").read_text()
    assert "## bivlc (bivlc) scores per type (%)" in report
    assert "| model | score | replace | swap |" in report
    assert "| fake:table | text_score | 0.0 | 100.0 |" in report
    assert "| fake:table | image_score |" in report
    assert "## bivlc (bivlc) scores (%)" in report  # text, image and group side by side
    assert "| fake:table | I→T | text_score |" in report


def test_winoground_text_and_image_scores_are_in_the_report(tmp_path: Path) -> None:
    data = tmp_path / "winoground"
    (data / "images").mkdir(parents=True)
    row = {
        "id": 0,
        "caption_0": "a",
        "caption_1": "b",
        "image_0": "x",
        "image_1": "y",
        "tag": "Object",
    }
    (data / "examples.jsonl").write_text(json.dumps(row) + "\n")
    for name in ("x", "y"):
        (data / "images" / f"{name}.png").write_bytes(name.encode())
    vectors = {"a": E[0], "b": E[1], "x.png": E[0], "y.png": E[1]}
    evaluate(
        [TableEmbedder(vectors)],
        task="winoground",
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    report = (tmp_path / "r" / "report.md").read_text()
    for name in ("group_score", "text_score", "image_score"):
        assert f"| fake:table | I→T | {name} | 100.0 |" in report
    assert "## winoground (winoground) scores per tag (%)" in report


def test_aro_micro_and_per_relation_accuracy_are_in_the_report(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    (tmp_path / "images").mkdir()
    pil.new("RGB", (10, 10), (255, 0, 0)).save(tmp_path / "images" / "1.jpg", format="PNG")
    box = {"bbox_x": 0, "bbox_y": 0, "bbox_w": 5, "bbox_h": 10}
    rows = [
        {"image_path": "1.jpg", **box, "true_caption": "t", "false_caption": "f",
         "relation_name": "on"},
        {"image_path": "1.jpg", **box, "true_caption": "t", "false_caption": "f",
         "relation_name": "on"},
        {"image_path": "1.jpg", **box, "true_caption": "f", "false_caption": "t",
         "relation_name": "above"},
    ]  # fmt: skip
    (tmp_path / "visual_genome_relation.json").write_text(json.dumps(rows))
    model = TableEmbedder({"rgb255-0-0": E[0], "t": E[0], "f": E[1]})  # crops: by colour

    evaluate([model], task="aro", data=tmp_path, out=tmp_path / "r", cache=False, verbose=False)
    (path,) = (tmp_path / "r").rglob("it.json")
    record = json.loads(path.read_text())
    assert record["scores"]["accuracy"] == 0.5  # macro over on (1.0) and above (0.0)
    assert record["scores"]["accuracy_micro"] == pytest.approx(2 / 3)
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| fake:table | I→T | accuracy_micro | 66.7 |" in report
    assert "## aro (aro) vg_relation accuracy per relation (%)" in report
    assert "| above | 0.0 |" in report and "| on | 100.0 |" in report


def test_revisited_reports_mp_at_k_for_every_protocol(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    (tmp_path / "jpg").mkdir()
    colours = {"db0": (255, 0, 0), "db1": (0, 0, 255), "db2": (0, 255, 0), "q": (250, 0, 0)}
    for name, rgb in colours.items():
        pil.new("RGB", (8, 8), rgb).save(tmp_path / "jpg" / f"{name}.jpg", format="PNG")
    gnd = [{"bbx": [0, 0, 8, 8], "easy": [1], "hard": [0], "junk": [2]}]
    with (tmp_path / "gnd_roxford5k.pkl").open("wb") as handle:
        pickle.dump({"imlist": ["db0", "db1", "db2"], "qimlist": ["q"], "gnd": gnd}, handle)
    model = TableEmbedder(
        {"db0.jpg": E[0], "db1.jpg": E[0] + E[1], "db2.jpg": E[2], "rgb250-0-0": E[0]}
    )
    (record,) = evaluate(
        [model], task="roxford5k", data=tmp_path, out=tmp_path / "r", cache=False, verbose=False
    )
    declared = task_classes()["roxford5k"].metadata.scores
    assert {f"mp_at_{k}_{s}" for k in (1, 5, 10) for s in ("easy", "medium", "hard")} <= set(
        declared
    )
    assert {*declared, "map_medium"} == set(record["scores"])
    # ranking db0, db1, db2: hard = [db0] first: mP@1 1; easy = [db1], db0 junk: rank 1 → 1
    assert record["scores"]["mp_at_1_hard"] == 1.0 and record["scores"]["mp_at_1_easy"] == 1.0
    # medium: db0, db1 at 1-based 1, 2: P@1 = 1, P@5 = min(5, 2) → 2/2
    assert record["scores"]["mp_at_5_medium"] == 1.0
    report = (tmp_path / "r" / "report.md").read_text()
    assert "| fake:table | I→I | mp_at_10_hard | 100.0 |" in report


def test_revisited_names_the_pickle_when_given_the_matlab_file(tmp_path: Path) -> None:
    from bindkit.errors import DataFormatError

    (tmp_path / "gnd_roxford5k.mat").write_bytes(b"MATLAB 5.0 MAT-file")
    for data in (tmp_path, tmp_path / "gnd_roxford5k.mat"):
        with pytest.raises(DataFormatError, match=r"MATLAB ground truth is not read; pass gnd_"):
            evaluate([TableEmbedder()], task="roxford5k", data=data, out=tmp_path / "r")


def test_mmeb_finds_the_hub_convert_layout(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    data = tmp_path / "MMEB-eval"
    (data / "eval_images").mkdir(parents=True)
    row = {"qry_text": "a dog", "qry_img_path": "", "tgt_text": ["dog", "cat"]}
    row["tgt_img_path"] = ["", ""]
    for subset in ("ImageNet-1K", "MSCOCO_t2i"):
        file = data / subset / "test" / "0000.parquet"  # refs/convert/parquet
        file.parent.mkdir(parents=True)
        pq.write_table(pa.Table.from_pylist([row]), file)
    model = TableEmbedder({"a dog": E[0], "dog": E[0], "cat": E[1]})
    records = evaluate([model], task="mmeb", data=data, out=tmp_path / "r", verbose=False)
    assert [r["subset"] for r in records] == ["ImageNet-1K", "MSCOCO_t2i"]
    assert all(r["scores"]["hit_at_1"] == 1.0 for r in records)


def _rotated_jpeg(path: Path) -> None:
    """Stored pixels: red top half, blue bottom half; EXIF Orientation 6 (shown rotated 90° to
    the right, which puts the blue bottom-left corner at the top left)."""
    pil = pytest.importorskip("PIL.Image")
    image = pil.new("RGB", (20, 20), (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, 20, 10))
    exif = pil.Exif()
    exif[0x0112] = 6
    path.parent.mkdir(parents=True, exist_ok=True)
    image.save(path, format="JPEG", exif=exif.tobytes(), quality=100)


class _MeanColour(TableEmbedder):
    """Images → their mean colour, so a test sees which pixels a crop kept."""

    def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        from bindkit.embed.images import load_image

        out = []
        for image in images:
            pil = image if hasattr(image, "getpixel") else load_image(image)
            v = np.asarray(pil.convert("RGB"), np.float32).reshape(-1, 3).mean(axis=0) + 1.0
            out.append(np.pad(v / np.linalg.norm(v), (0, 5)))
        return np.stack(out).astype(np.float32)


def test_aro_crops_the_stored_pixels_as_the_original(tmp_path: Path) -> None:
    _rotated_jpeg(tmp_path / "images" / "1.jpg")
    box = {"bbox_x": 0, "bbox_y": 0, "bbox_w": 10, "bbox_h": 10}  # red in the stored pixels
    rows = [{"image_path": "1.jpg", **box, "true_caption": "red", "false_caption": "blue",
             "relation_name": "on"}]  # fmt: skip
    (tmp_path / "visual_genome_relation.json").write_text(json.dumps(rows))
    model = _MeanColour({"red": np.pad([1.0, 0, 0], (0, 5)), "blue": np.pad([0, 0, 1.0], (0, 5))})
    (record,) = evaluate(
        [model], task="aro", data=tmp_path, out=tmp_path / "r", cache=False, verbose=False
    )
    assert record["scores"]["accuracy_micro"] == 1.0  # rotated first, the box would be blue


def test_revisited_query_crop_uses_the_stored_pixels(tmp_path: Path) -> None:
    from bindkit.tasks.instance._base import crop as _crop

    _rotated_jpeg(tmp_path / "q.jpg")
    crop = np.asarray(_crop(tmp_path / "q.jpg", [0, 0, 10, 10], "q"), np.float32)
    assert crop.shape == (10, 10, 3)
    assert crop[..., 0].mean() > 200 and crop[..., 2].mean() < 50  # the stored red half


def test_saber_plot_keeps_a_models_colour_and_gives_each_panel_a_legend() -> None:
    pytest.importorskip("matplotlib")
    from bindkit.results.report import by_n_figure

    def record(model: str, pairing: str, created: str) -> dict:
        return {
            "task": "saber",
            "model": {"spec": model},
            "data": {"name": "s", "key": "s-1"},
            "subset": "default",
            "pairing": pairing,
            "created": created,
            "scores": {"mcq_accuracy_by_n": {"2": 0.5, "3": 0.4}},
        }

    # a text-only model first in the tt panel, absent from the image panels
    records = [record("bow", "tt", "1"), record("clip", "tt", "2")]
    records += [record("clip", p, "3") for p in ("ti", "it", "ii")]
    fig = by_n_figure(records)
    colours: dict[str, set] = {}
    for ax in fig.axes:
        assert ax.get_legend() is not None
        shown = {t.get_text() for t in ax.get_legend().get_texts()}
        lines = {
            line.get_label(): line.get_color()
            for line in ax.get_lines()
            if line.get_label()[0] != "_"
        }
        assert shown == set(lines)
        for model, colour in lines.items():
            colours.setdefault(model, set()).add(str(colour))
    assert all(len(c) == 1 for c in colours.values()), colours
    assert colours["bow"] != colours["clip"]
