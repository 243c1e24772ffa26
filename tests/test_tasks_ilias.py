"""ILIAS mAP@k against a verbatim copy of the official evaluation (ilias-vrg/ilias,
evaluation/src/dataset.py ``_compute_AP`` and its mean), and the ``ilias`` / ``ilias_fine`` tasks
on a small fixture in the published layout (image_ids/, ilias_core/, taxonomy.json, yfcc100m)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from _fakes import TableEmbedder
from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.metrics.ilias import ap_at_k, mean_ap_at_k
from bindkit.tasks.base import EvalContext
from bindkit.tasks.instance.ilias import Ilias, IliasFine, fine_classes, query_box


# -- the official code, verbatim (only `self.gt[instance]` became the `gt` argument) ---------
def _official_compute_ap(gt, ids, scores, ranks, k, excluded=None):  # type: ignore[no-untyped-def]
    from sklearn.metrics import average_precision_score

    if excluded is not None:
        e = [i for i in range(len(ranks)) if ids[ranks[i]] in excluded]
        scores = np.delete(scores.copy(), e, 0)
        ranks = np.delete(ranks.copy(), e, 0)
    else:
        excluded = set()

    # sort by descending score
    order = np.argsort(-scores)
    top_ids = ids[ranks[order][:k]]

    gt = gt - set(excluded)
    y_true = np.isin(top_ids, list(gt))
    y_score = scores[order][:k]

    if not y_true.any():
        return 0.0, 0.0

    ap = average_precision_score(y_true, y_score)
    ap *= y_true.sum() / min(k, len(gt))
    oracle = y_true.mean() * (k / len(gt))
    return ap, oracle


def _official_map(q_ids, db_ids, sims, ranks, k):  # type: ignore[no-untyped-def]
    """``ILIAS._evaluate_pkl`` without the report: gt from the positives' first path part."""
    gt: dict[str, set[str]] = {}
    for img in db_ids:
        if "/pos/" in img:
            gt.setdefault(img.split("/")[0], set()).add(img)
    db_ids = np.asarray(db_ids)
    aps = []
    for q, s, r in zip(q_ids, sims, ranks, strict=True):
        ins = q.split("/")[0]
        ap, _ = _official_compute_ap(gt.get(ins, set()), db_ids, s, r, k)
        aps.append(ap * 100)
    return float(np.mean(aps)) / 100, np.array(aps) / 100


def _knn(q: np.ndarray, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The official search's output: the k best scores per query and their database rows."""
    sims = q @ x.T
    ranks = np.argsort(-sims, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(sims, ranks, axis=1), ranks


# -- the metric ------------------------------------------------------------------------------
def test_ap_by_hand() -> None:
    # positives at ranks 2 and 3 of 3 listed; 4 positives exist, k = 3: (1/2 + 2/3) / 3
    assert ap_at_k(np.array([0.9, 0.8, 0.7]), np.array([0, 1, 1], bool), 4, 3) == pytest.approx(
        (1 / 2 + 2 / 3) / 3
    )
    # k = 10 > 4 positives: divided by 4, not by the 2 found
    assert ap_at_k(np.array([0.9, 0.8, 0.7]), np.array([0, 1, 1], bool), 4, 10) == pytest.approx(
        (1 / 2 + 2 / 3) / 4
    )
    # no positive in the list: 0, not NaN
    assert ap_at_k(np.array([0.9, 0.8]), np.array([0, 0], bool), 3, 10) == 0.0
    # a tie between a positive and a negative is one threshold: precision 1/2 at it
    assert ap_at_k(np.array([0.5, 0.5]), np.array([1, 0], bool), 1, 10) == 0.5
    assert ap_at_k(np.array([0.5, 0.5]), np.array([0, 1], bool), 1, 10) == 0.5


@pytest.mark.parametrize("seed", range(6))
def test_map_equals_the_official_code(seed: int) -> None:
    pytest.importorskip("sklearn")
    rng = np.random.default_rng(seed)
    n_obj, dim = 6, 5
    db_ids = [f"o{o}/pos/P{o}_{j}.jpg" for o in range(n_obj) for j in range(rng.integers(1, 6))]
    db_ids += [f"yfcc_{i:05d}.tar/{i}" for i in range(40)]
    q_ids = [f"o{o}/query/Q{o}_{j}.jpg" for o in range(n_obj) for j in range(2)]
    x = rng.standard_normal((len(db_ids), dim)).astype(np.float32)
    if seed % 2:  # quantised vectors: many exactly tied scores
        x = np.round(x)
    q = rng.standard_normal((len(q_ids), dim)).astype(np.float32)
    for k in (3, 10, 1000):
        sims, ranks = _knn(q, x, min(k, len(db_ids)))
        expected, expected_aps = _official_map(q_ids, db_ids, sims, ranks, k)
        positives = [
            {i for i, d in enumerate(db_ids) if d.startswith(f"{qi.split('/')[0]}/pos/")}
            for qi in q_ids
        ]
        got, aps = mean_ap_at_k(sims, ranks, positives, k)
        assert got == pytest.approx(expected, abs=1e-12)
        assert aps == pytest.approx(expected_aps, abs=1e-12)


def test_the_blocked_search_feeds_the_metric_as_a_dense_ranking_does() -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((500, 16)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[:20] + 0.3 * rng.standard_normal((20, 16)).astype(np.float32)
    positives = [{i, i + 20, i + 40} for i in range(20)]
    dense = mean_ap_at_k(*_knn(q, x, 100), positives, 100)[0]
    from bindkit.mining.index import exact_search

    blocked = mean_ap_at_k(*exact_search(q, x, 100, memory=1 << 20), positives, 100)[0]
    assert blocked == pytest.approx(dense, abs=1e-12)


def test_query_box_is_the_union_clipped_at_zero(tmp_path: Path) -> None:
    box = tmp_path / "Q_bbox.txt"
    box.write_text("2 3 4 5\n-1 6 2 4\n")
    assert query_box(box) == (0, 3, 6, 10)
    box.write_text("2 3 4\n")
    with pytest.raises(DataFormatError, match="four integers"):
        query_box(box)


# -- the fixture -----------------------------------------------------------------------------
OBJECTS = {  # object → (category, mid, fine)
    "amber_a_000": ("toy", "stuffed", "plushie"),
    "brisk_b_001": ("toy", "stuffed", "plushie"),
    "cozy_c_002": ("art", "painting", "other"),
    "dandy_d_003": ("art", "sculpture", "ceramics/clay"),
}


def _write_ilias(root: Path, rng: np.random.Generator) -> dict[str, Any]:
    pil = pytest.importorskip("PIL.Image")
    core = root / "ilias_core"
    ids = root / "image_ids"
    ids.mkdir(parents=True)
    colours = {o: rng.integers(30, 225, 3) for o in OBJECTS}
    queries, texts, positives = [], [], []
    for n, (obj, colour) in enumerate(colours.items()):
        (core / obj / "query").mkdir(parents=True)
        (core / obj / "pos").mkdir()
        for j in range(2 if n == 0 else 1):
            name = f"{obj}/query/Q{n:03d}_{j:02d}.jpg"
            picture = pil.new("RGB", (10, 8), (255, 255, 255))  # a white background ...
            picture.paste(tuple(int(c) for c in colour), (2, 1, 7, 6))  # ... and the object
            picture.save(core / name, format="PNG")
            # two boxes whose union is the object's square
            (core / name).with_name(f"Q{n:03d}_{j:02d}_bbox.txt").write_text("2 1 3 5\n4 1 3 5\n")
            queries.append(name)
        text = f"object {obj}\n"
        (core / obj / "query" / f"T{n:03d}.txt").write_text(text)
        texts.append((f"{obj}/query/T{n:03d}.txt", text, colour))
        for j in range(n + 2):
            name = f"{obj}/pos/P{n:03d}_{j:02d}.jpg"
            shade = np.clip(colour + rng.integers(-60, 60, 3), 0, 255)
            pil.new("RGB", (6, 6), tuple(int(c) for c in shade)).save(core / name, format="PNG")
            positives.append(name)
    distractors = []
    for shard in ("s0.tar", "s1.tar"):
        (root / "yfcc100m" / shard).mkdir(parents=True)
        for key in range(3):
            colour = tuple(int(c) for c in rng.integers(0, 255, 3))
            pil.new("RGB", (6, 6), colour).save(
                root / "yfcc100m" / shard / f"{key}.jpg", format="PNG"
            )
            distractors.append(f"{shard}/{key}")
    (ids / "image_query_ids.txt").write_text("".join(f"{q},0\n" for q in reversed(queries)))
    (ids / "text_query_ids.txt").write_text("".join(f"{t}\n" for t, _, _ in texts))
    (ids / "positive_ids.txt").write_text("".join(f"{p},0.1,20\n" for p in positives))
    with gzip.open(ids / "distractor_ids.txt.gz", "wt") as handle:
        handle.write("".join(f"{d}\n" for d in distractors))
    tree: dict[str, Any] = {}
    for obj, (category, mid, fine) in OBJECTS.items():
        tree.setdefault(category, {}).setdefault(mid, {}).setdefault(fine, []).append(obj)
    (root / "taxonomy.json").write_text(json.dumps(tree))
    return {"queries": queries, "texts": texts, "positives": positives, "distractors": distractors}


class ColourEmbedder(TableEmbedder):
    """Images → their mean colour; texts → the colour of the object they name (as a table)."""

    def __init__(self, texts: list[tuple[str, str, np.ndarray]]) -> None:
        super().__init__({t: np.asarray(c, np.float32) + 1.0 for _, t, c in texts}, dim=3)
        self.image_calls: list[int] = []

    def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        from bindkit.embed.images import load_image

        self.image_calls.append(len(images))
        out = []
        for image in images:
            pil = image if hasattr(image, "getpixel") else load_image(image)
            v = np.asarray(pil.convert("RGB"), np.float32).reshape(-1, 3).mean(axis=0) + 1.0
            out.append(v / np.linalg.norm(v))
        return np.stack(out).astype(np.float32)


def _expected(
    root: Path,
    fx: dict[str, Any],
    model: ColourEmbedder,
    pairing: str,
    db: list[str],
    k: int,
    crop: bool = False,
) -> tuple[float, np.ndarray, list[str], list[list[str]]]:
    """The official pipeline: queries read as feature_extraction's dataset does (whole, as with
    its default ``--crop_resize False``, or cropped with numpy as ``_crop_resize`` does), the
    kNN list, then the official mAP."""
    from PIL import Image, ImageOps

    core = root / "ilias_core"
    if pairing == "ii":
        q_ids = sorted(fx["queries"])
        crops = []
        for q in q_ids:
            image = ImageOps.exif_transpose(Image.open(core / q).convert("RGB"))
            if not crop:
                crops.append(image)
                continue
            boxes = np.loadtxt(str(core / q).replace(".jpg", "_bbox.txt"), dtype=int)
            boxes = boxes.reshape(-1, 4) if boxes.ndim == 1 else boxes
            x0, y0 = np.min(boxes[:, 0]).clip(0, 10000), np.min(boxes[:, 1]).clip(0, 10000)
            x1 = np.max(boxes[:, 0] + boxes[:, 2]).clip(0, 10000)
            y1 = np.max(boxes[:, 1] + boxes[:, 3]).clip(0, 10000)
            crops.append(Image.fromarray(np.array(image)[y0:y1, x0:x1]))
        q = model.embed_images(crops)
    else:
        q_ids = [t for t, _, _ in fx["texts"]]
        q = model.embed_texts([text for _, text, _ in fx["texts"]])
    paths = [core / d if "/pos/" in d else root / "yfcc100m" / f"{d}.jpg" for d in db]
    x = model.embed_images(paths)
    sims, ranks = _knn(q, x, min(k, len(db)))
    got = _official_map(q_ids, db, sims, ranks, k)
    return got[0], got[1], q_ids, [[db[j] for j in row[:5]] for row in ranks]


@pytest.mark.parametrize("crop", [None, True], ids=["default", "crop"])
@pytest.mark.parametrize("distractors", [0, 4])
def test_ilias_image_and_text_queries_equal_the_official_code(
    tmp_path: Path, distractors: int, crop: bool | None
) -> None:
    """The default is the official default (whole query photos); ``crop=True`` is the official
    ``--crop_resize True``."""
    pytest.importorskip("sklearn")
    root = tmp_path / "ilias"
    fx = _write_ilias(root, np.random.default_rng(7))
    model = ColourEmbedder(fx["texts"])
    options = {} if crop is None else {"crop": crop}
    task = Ilias(k=5, distractors=distractors, **options)
    records = evaluate(
        [model],
        task=task,
        data=root,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        report=False,
    )
    assert {r["pairing"] for r in records} == {"ii", "ti"}
    # the database is embedded once for both pairings (queries come in their own calls)
    assert model.image_calls.count(len(fx["positives"])) == 1
    db = sorted(fx["positives"]) + fx["distractors"][:distractors]
    for r in records:
        expected, *_ = _expected(root, fx, model, r["pairing"], db, 5, crop=bool(crop))
        assert r["scores"]["map"] == pytest.approx(expected, abs=1e-9)
        assert r["counts"]["database"] == len(db)
        assert r["options"]["distractors"] == distractors
        assert r["options"]["crop"] is bool(crop)
    assert 0 < records[0]["scores"]["map"] < 1  # the fixture does not make every query perfect


def test_per_query_ap_ids_and_top5(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    root = tmp_path / "ilias"
    fx = _write_ilias(root, np.random.default_rng(7))
    model = ColourEmbedder(fx["texts"])
    task = Ilias(k=5)
    dataset = task.load(root)
    result = task.evaluate(model, dataset, "default", "ii", EvalContext())
    assert result is not None
    per = result["per_query"]
    _, expected_aps, q_ids, top = _expected(root, fx, model, "ii", sorted(fx["positives"]), 5)
    assert per["metric"] == "ap" and per["ids"] == q_ids
    assert per["values"] == pytest.approx(expected_aps.tolist(), abs=1e-9)
    assert per["top"] == top and all(len(row) == 5 for row in top)


def test_query_crops_are_opt_in_and_change_the_score(tmp_path: Path) -> None:
    """As the official extraction (``--crop_resize`` defaults to False), queries are whole unless
    ``--task-option crop=true`` asks for ``_crop_resize``'s cut."""
    from bindkit.tasks.base import get_task

    for name in ("ilias", "ilias_fine"):
        assert get_task(name).crop is False
        assert get_task(name, {"crop": "true"}).crop is True
    assert get_task("ilias").options("default")["crop"] is False
    root = tmp_path / "ilias"
    fx = _write_ilias(root, np.random.default_rng(7))
    ctx = EvalContext()
    whole = Ilias(k=5).evaluate(
        ColourEmbedder(fx["texts"]), Ilias(k=5).load(root), "default", "ii", ctx
    )
    cropping = Ilias(k=5, crop=True)
    cropped = cropping.evaluate(
        ColourEmbedder(fx["texts"]), cropping.load(root), "default", "ii", ctx
    )
    assert cropped is not None and whole is not None
    assert cropped["per_query"]["values"] != whole["per_query"]["values"]


def test_faiss_and_numpy_give_the_same_map(tmp_path: Path) -> None:
    pytest.importorskip("faiss")
    root = tmp_path / "ilias"
    fx = _write_ilias(root, np.random.default_rng(3))
    got = {}
    for index in ("numpy", "faiss"):
        task = Ilias(k=4, index=index, distractors=6)
        result = task.evaluate(
            ColourEmbedder(fx["texts"]), task.load(root), "default", "ii", EvalContext()
        )
        assert result is not None
        got[index] = result["per_query"]["values"]
    assert got["faiss"] == pytest.approx(got["numpy"], abs=1e-6)


def test_fine_classes_search_their_own_positives(tmp_path: Path) -> None:
    pytest.importorskip("sklearn")
    root = tmp_path / "ilias"
    fx = _write_ilias(root, np.random.default_rng(11))
    model = ColourEmbedder(fx["texts"])
    records = evaluate(
        [model],
        task="ilias_fine",
        data=root,
        pairings="ii",
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        report=False,
    )
    # "other" leaves are left out; "/" and spaces in class names become "-"
    assert sorted(r["subset"] for r in records) == ["fine/art/ceramics-clay", "fine/toy/plushie"]
    plush = next(r for r in records if r["subset"] == "fine/toy/plushie")
    members = ("amber_a_000", "brisk_b_001")
    db = sorted(p for p in fx["positives"] if p.startswith(members))
    fx_plush = {**fx, "queries": [q for q in fx["queries"] if q.startswith(members)]}
    expected, *_ = _expected(root, fx_plush, model, "ii", db, 1000)
    assert plush["scores"]["map"] == pytest.approx(expected, abs=1e-9)
    assert plush["counts"] == {"queries": 3, "database": len(db), "distractors": 0}
    # one database embedding serves every class
    assert model.image_calls.count(len(fx["positives"])) == 1
    (table,) = IliasFine().tables(records)
    assert table.columns == ["model", "pairing", "art", "toy", "all"]
    from bindkit.records.tables import pct

    clay = next(r for r in records if r["subset"] == "fine/art/ceramics-clay")["scores"]["map"]
    mean = (clay + plush["scores"]["map"]) / 2
    assert table.rows == [
        [
            "fake:table",
            "I→I",
            f"{pct(clay)} (1)",
            f"{pct(plush['scores']['map'])} (1)",
            f"{pct(mean)} (2)",
        ]
    ]


def test_fine_class_names_from_the_taxonomy() -> None:
    taxonomy = {"a": ("toy", "action figure", "funko pop"), "b": ("toy", "x", "other")}
    assert fine_classes(taxonomy) == {"fine/toy/funko-pop": ["a"]}


def test_missing_ilias_files_are_named(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"image_ids: not found; .*vrg\.fel\.cvut\.cz"):
        Ilias().load(tmp_path)
    root = tmp_path / "ilias"
    _write_ilias(root, np.random.default_rng(0))
    (root / "taxonomy.json").unlink()
    Ilias().load(root)  # the taxonomy is needed only per class
    with pytest.raises(DataFormatError, match=r"taxonomy\.json: not found; .*misc/taxonomy\.json"):
        IliasFine().load(root)
    with pytest.raises(BindkitError, match="lists only 6"):
        task = Ilias(distractors=9)
        task.evaluate(TableEmbedder(), task.load(root), "default", "ii", EvalContext())
    with pytest.raises(BindkitError, match="index='annoy'"):
        Ilias(index="annoy")
    with pytest.raises(BindkitError, match="per-class evaluation"):
        IliasFine(distractors=3)


def test_a_repeated_positive_line_is_read_once_as_the_official_set(tmp_path: Path) -> None:
    """D3: the official ground truth is a set per object, so a line listed twice in
    positive_ids.txt is one database image, embedded and counted once."""
    pytest.importorskip("sklearn")
    root = tmp_path / "ilias"
    fx = _write_ilias(root, np.random.default_rng(7))
    ids = root / "image_ids" / "positive_ids.txt"
    lines = ids.read_text().splitlines(keepends=True)
    ids.write_text("".join([*lines, lines[0], lines[3]]))
    model = ColourEmbedder(fx["texts"])
    task = Ilias(k=5)
    result = task.evaluate(model, task.load(root), "default", "ii", EvalContext())
    assert result is not None and result["counts"]["database"] == len(fx["positives"])
    expected, *_ = _expected(root, fx, model, "ii", sorted(fx["positives"]), 5)
    assert result["scores"]["map"] == pytest.approx(expected, abs=1e-9)


def test_a_repeated_query_id_is_refused_with_its_lines(tmp_path: Path) -> None:
    root = tmp_path / "ilias"
    _write_ilias(root, np.random.default_rng(7))
    ids = root / "image_ids" / "text_query_ids.txt"
    first = ids.read_text().splitlines()[0]
    ids.write_text(ids.read_text() + first + "\n")
    with pytest.raises(DataFormatError, match=rf"text_query_ids.txt:5: id {first} repeats line 1"):
        Ilias().load(root)


def test_the_box_check_sees_the_photo_as_exif_turns_it(tmp_path: Path) -> None:
    """The crop is cut from the EXIF-oriented photo (as the official dataset loads it), so a
    box is inside or outside that picture, not the stored pixels."""
    pil = pytest.importorskip("PIL.Image")
    from bindkit.tasks.instance.ilias import check_query_boxes, crop_query

    query = tmp_path / "obj" / "query" / "Q000_00.jpg"
    query.parent.mkdir(parents=True)
    exif = pil.Exif()
    exif[0x0112] = 6  # stored 10 x 8, shown turned: 8 x 10
    pil.new("RGB", (10, 8), (200, 0, 0)).save(query, format="JPEG", exif=exif)
    bbox = query.with_name("Q000_00_bbox.txt")
    bbox.write_text("0 8 4 5\n")  # y 8..13: inside the turned photo (height 10) only
    check_query_boxes(tmp_path, ["obj/query/Q000_00.jpg"])
    assert crop_query(query).size == (4, 2)  # clipped at the bottom edge
    bbox.write_text("8 0 4 4\n")  # x 8..12: past the turned photo's width 8
    with pytest.raises(DataFormatError, match="box 8 0 12 4 lies wholly outside its 8x10 image"):
        check_query_boxes(tmp_path, ["obj/query/Q000_00.jpg"])
