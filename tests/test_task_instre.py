"""INSTRE: nDCG and graded scores by hand and against scikit-learn's ndcg_score, and the task's
three subsets on a fixture in the published layout (gnd_instre.mat + INSTRE-S1/S2/M folders)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bindkit.metrics.instance import graded_scores, ndcg, trapezoid_ap


def test_ndcg_by_hand() -> None:
    # ranking 2, 0, 1 over gains 2, 1, 0: DCG = 0 + 2/log2(3) + 1/2; ideal 2 + 1/log2(3)
    expected = (2 / np.log2(3) + 0.5) / (2 + 1 / np.log2(3))
    assert ndcg(np.array([2, 0, 1]), np.array([2.0, 1.0, 0.0])) == pytest.approx(expected)
    assert ndcg(np.array([0, 1, 2]), np.array([2.0, 1.0, 0.0])) == 1.0
    assert np.isnan(ndcg(np.array([0, 1]), np.zeros(2)))


@pytest.mark.parametrize("seed", range(4))
def test_graded_scores_against_sklearn_ndcg(seed: int) -> None:
    ndcg_score = pytest.importorskip("sklearn.metrics").ndcg_score

    rng = np.random.default_rng(seed)
    sim = rng.standard_normal((6, 40))  # continuous: no ties, where sklearn's tie rule differs
    gains = rng.choice([0.0, 0.0, 0.0, 1.0, 2.0], size=(6, 40))
    gains[:, 0] = 1.0  # every query has a relevant image
    got = graded_scores(sim, gains)
    for q in range(6):
        assert got["ndcg"][q] == pytest.approx(ndcg_score(gains[q : q + 1], sim[q : q + 1]))
        order = np.argsort(-sim[q])
        ranks = np.flatnonzero(gains[q][order] > 0)  # any gain is relevant for the AP
        assert got["ap"][q] == pytest.approx(trapezoid_ap(ranks, len(ranks)))


class PathEmbedder:
    """A fixed random unit vector per image: files by their path under the INSTRE root, PIL
    images (the query crops) by their top-left colour and size, so an uncropped query, or one
    cropped to a box read the wrong way, differs."""

    spec = "fake:path"
    fingerprint = "fake-path"
    modalities = frozenset({"image"})

    def describe(self) -> dict[str, Any]:
        return {"backend": "fake"}

    @staticmethod
    def key(image: Any) -> str:
        if hasattr(image, "getpixel"):
            colour = "-".join(map(str, image.convert("RGB").getpixel((0, 0))))
            return f"rgb{colour}@{image.size[0]}x{image.size[1]}"
        parts = Path(getattr(image, "path", image)).parts
        return "/".join(parts[-3:])

    @staticmethod
    def vector(key: str) -> np.ndarray:
        seed = int(hashlib.sha256(key.encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).standard_normal(6)
        return (v / np.linalg.norm(v)).astype(np.float32)

    def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        return np.stack([self.vector(self.key(i)) for i in images])

    def embed_texts(self, texts, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        raise AssertionError("INSTRE embeds no text")


A1, A2, AQ = (
    "INSTRE-S1/01a_book/001.jpg",
    "INSTRE-S1/01a_book/002.jpg",
    "INSTRE-S1/01a_book/003.jpg",
)
B1, B2 = "INSTRE-S1/01b_panda/001.jpg", "INSTRE-S1/01b_panda/002.jpg"
C1, CQ = "INSTRE-S2/cup/001.jpg", "INSTRE-S2/cup/002.jpg"
M1, M2, MQ = "INSTRE-M/01/001.jpg", "INSTRE-M/01/002.jpg", "INSTRE-M/01/003.jpg"
IMLIST = [A1, A2, B1, B2, C1, M1, M2]
QIMLIST = [AQ, CQ, MQ]
QUERY_COLOURS = {AQ: (200, 0, 0), CQ: (0, 200, 0), MQ: (0, 0, 200)}


LISTED = {AQ: [A1, A2, M1, M2], CQ: [C1], MQ: [M1, M2]}  # the .mat's positives


def _cells(items: list[str]) -> np.ndarray:
    """A 1 × N MATLAB cell array of strings, as gnd_instre.mat stores its image lists."""
    cells = np.empty((1, len(items)), dtype=object)
    for i, item in enumerate(items):
        cells[0, i] = item
    return cells


def _write_release(root: Path, listed: dict[str, list[str]] | None = None) -> None:
    pil = pytest.importorskip("PIL.Image")
    sio = pytest.importorskip("scipy.io")
    for rel in IMLIST + QIMLIST:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        picture = pil.new("RGB", (10, 10), (128, 128, 128))
        if rel in QUERY_COLOURS:
            picture.paste(QUERY_COLOURS[rel], (2, 3, 8, 9))  # the query box, x1 y1 x2 y2
        picture.save(root / rel, format="PNG")
    gnd = np.zeros((1, len(QIMLIST)), dtype=[("ok", object), ("bbx", object)])
    for i, q in enumerate(QIMLIST):
        ok = [IMLIST.index(p) + 1 for p in (listed or LISTED)[q]]  # 1-based, as MATLAB writes
        gnd[0, i] = (np.array([ok], np.float64), np.array([[2.0, 3.0, 8.0, 9.0]]))
    sio.savemat(
        root / "gnd_instre.mat",
        {"qimlist": _cells(QIMLIST), "imlist": _cells(IMLIST), "gnd": gnd},
    )


# gains stated from the dataset's definition, per subset: (queries, gallery, gains)
EXPECTED = {
    "S": ([AQ, CQ], [A1, A2, B1, B2, C1], [[1, 1, 0, 0, 0], [0, 0, 0, 0, 1]]),
    "M_to_S": ([MQ], [A1, A2, B1, B2, C1], [[1, 1, 1, 1, 0]]),
    "M_to_SM": ([MQ], IMLIST, [[1, 1, 1, 1, 0, 2, 2]]),
}


def _query_key(path: str, crop: bool) -> str:
    """What PathEmbedder sees of a query: the 6 × 6 crop of its box, or the whole file."""
    return "rgb" + "-".join(map(str, QUERY_COLOURS[path])) + "@6x6" if crop else path


@pytest.mark.parametrize("crop", [None, False, True], ids=["default", "whole", "crop"])
def test_instre_subsets_on_a_fixture(tmp_path: Path, crop: bool | None) -> None:
    """Queries whole by default (no official INSTRE script crops them); ``crop=true`` cuts each
    to its ``gnd_instre.mat`` box."""
    ndcg_score = pytest.importorskip("sklearn.metrics").ndcg_score
    from bindkit.evaluation import evaluate
    from bindkit.tasks.base import get_task

    root = tmp_path / "instre"
    _write_release(root)
    task = get_task("instre", {} if crop is None else {"crop": str(crop).lower()})
    records = evaluate(
        [PathEmbedder()], task=task, data=root, out=tmp_path / "r", cache=False, verbose=False
    )
    got = {r["subset"]: r for r in records}
    assert sorted(got) == sorted(EXPECTED)
    assert all(r["options"]["crop"] is bool(crop) for r in records)
    for subset, (queries, gallery, gains) in EXPECTED.items():
        q = np.stack([PathEmbedder.vector(_query_key(p, bool(crop))) for p in queries])
        x = np.stack([PathEmbedder.vector(p) for p in gallery])
        sim = q @ x.T
        g = np.array(gains, np.float64)
        aps, nds = [], []
        for i in range(len(queries)):
            order = np.argsort(-sim[i])
            ranks = np.flatnonzero(g[i][order] > 0)
            aps.append(trapezoid_ap(ranks, len(ranks)))
            nds.append(ndcg_score(g[i : i + 1], sim[i : i + 1]))
        record = got[subset]
        assert record["counts"] == {"queries": len(queries), "database": len(gallery)}
        assert record["scores"]["map"] == pytest.approx(np.mean(aps), abs=1e-6)
        assert record["scores"]["ndcg"] == pytest.approx(np.mean(nds), abs=1e-6)


def test_instre_per_query_and_missing_files(tmp_path: Path) -> None:
    from bindkit.errors import BindkitError, DataFormatError
    from bindkit.tasks.base import EvalContext, get_task

    task = get_task("instre")
    with pytest.raises(DataFormatError, match=r"gnd_instre.mat: not found; download gnd_instre"):
        task.load(tmp_path)
    root = tmp_path / "instre"
    _write_release(root)
    dataset = task.load(root)
    result = task.evaluate(PathEmbedder(), dataset, "M_to_SM", "ii", EvalContext())
    assert result is not None
    per_query = result["per_query"]
    assert per_query["metric"] == "ap" and per_query["ids"] == [MQ]
    assert len(per_query["top"][0]) == 5 and set(per_query["top"][0]) <= set(IMLIST)
    notes: list[str] = []
    task.evaluate(PathEmbedder(), dataset, "S", "ii", EvalContext(warn=notes.append))
    assert notes == []  # the fixture's listed positives agree with the folder rule
    _write_release(root, {**LISTED, CQ: [C1, B1]})
    task.evaluate(PathEmbedder(), task.load(root), "S", "ii", EvalContext(warn=notes.append))
    assert len(notes) == 1 and "1 positives listed in gnd_instre.mat" in notes[0]
    assert "INSTRE-S1/01b_panda/001.jpg for INSTRE-S2/cup/002.jpg" in notes[0]
    (root / M1).unlink()
    with pytest.raises(BindkitError, match=r"instre: 1 of 8 images missing"):
        task.evaluate(PathEmbedder(), dataset, "M_to_SM", "ii", EvalContext())


def test_instre_crop_option_is_typed() -> None:
    from bindkit.errors import BindkitError
    from bindkit.tasks.base import get_task

    assert get_task("instre").crop is False
    assert get_task("instre", {"crop": "yes"}).crop is True
    with pytest.raises(BindkitError, match="crop=maybe: not a valid bool"):
        get_task("instre", {"crop": "maybe"})


def _write_gnd(root: Path, boxes: list[list[float]], positives: list[list[float]]) -> None:
    sio = pytest.importorskip("scipy.io")
    gnd = np.zeros((1, len(QIMLIST)), dtype=[("ok", object), ("bbx", object)])
    for i in range(len(QIMLIST)):
        gnd[0, i] = (np.array([positives[i]], np.float64), np.array([boxes[i]], np.float64))
    sio.savemat(
        root / "gnd_instre.mat",
        {"qimlist": _cells(QIMLIST), "imlist": _cells(IMLIST), "gnd": gnd},
    )


BOX = [2.0, 3.0, 8.0, 9.0]
OK = [[1, 2, 6, 7], [5], [6, 7]]  # LISTED, 1-based


def test_instre_boxes_are_checked_at_load_only_for_crops(tmp_path: Path) -> None:
    from bindkit.errors import DataFormatError
    from bindkit.tasks.base import EvalContext, get_task

    root = tmp_path / "instre"
    _write_release(root)
    _write_gnd(root, [BOX, [20.0, 20.0, 30.0, 30.0], BOX], OK)
    get_task("instre").load(root)  # uncropped queries: the box is not used, so not checked
    with pytest.raises(
        DataFormatError,
        match=r"gnd_instre.mat: gnd\[1\] \(query INSTRE-S2/cup/002.jpg\): box 20 20 30 30 lies "
        "wholly outside its 10x10 image",
    ):
        get_task("instre", {"crop": "true"}).load(root)
    _write_gnd(root, [BOX, [2.0, 3.0, 40.0, 9.0], BOX], OK)  # past the right edge: clipped
    task = get_task("instre", {"crop": "true"})
    seen: list[str] = []

    class Recording(PathEmbedder):
        def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
            seen.extend(self.key(i) for i in images if hasattr(i, "getpixel"))
            return super().embed_images(images, role=role, instruction=instruction)

    task.evaluate(Recording(), task.load(root), "S", "ii", EvalContext())
    assert seen == [_query_key(AQ, True), "rgb0-200-0@8x6"]  # CQ: x 2..10, no black band


@pytest.mark.parametrize(
    ("positives", "shown"), [([1.5], "1.5"), ([0], "0"), ([8], "8"), ([float("nan")], "nan")]
)
def test_a_listed_positive_outside_imlist_is_refused(
    tmp_path: Path, positives: list[float], shown: str
) -> None:
    from bindkit.errors import DataFormatError
    from bindkit.tasks.instance.instre import read_gnd

    root = tmp_path / "instre"
    _write_release(root)
    _write_gnd(root, [BOX] * 3, [OK[0], positives, OK[2]])
    with pytest.raises(
        DataFormatError, match=rf"gnd\[1\] lists positive {shown}, not an index 1..7"
    ):
        read_gnd(root / "gnd_instre.mat")
