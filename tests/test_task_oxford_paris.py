"""Oxford5K / Paris6K under the original protocol: the AP against a restatement of the Oxford
Buildings compute_ap.cpp loop (hand cases and random rankings), and the tasks on fixtures in the
published layout (gt_files_170407-style ground truth + image folder)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder
from bindkit.metrics.instance import oxford_ap, oxford_map


def _compute_ap_cpp(pos: set[str], amb: set[str], ranked_list: list[str]) -> float:
    """compute_ap.cpp's compute_ap, statement for statement, in its float32 arithmetic."""
    f = np.float32
    old_recall, old_precision, ap = f(0.0), f(1.0), f(0.0)
    intersect_size = 0
    j = 0
    for i in range(len(ranked_list)):
        if ranked_list[i] in amb:
            continue
        if ranked_list[i] in pos:
            intersect_size += 1
        recall = f(intersect_size / f(len(pos)))
        precision = f(intersect_size / (j + 1.0))
        ap = f(ap + (recall - old_recall) * ((old_precision + precision) / 2.0))
        old_recall = recall
        old_precision = precision
        j += 1
    return float(ap)


def test_hand_checked_cases() -> None:
    ranking = np.array([0, 1, 2, 3, 4])
    # positives at ranks 0 and 2: (1 + 1)/2/2 + (1/2 + 2/3)/2/2
    assert oxford_ap(ranking, [0, 2]) == pytest.approx(0.5 + 7 / 24)
    # junk 1 removed: the positives are at ranks 0 and 1 → 1
    assert oxford_ap(ranking, [0, 2], junk=[1]) == 1.0
    # an ok image counts as much as a good one: the caller passes good ∪ ok
    assert oxford_ap(ranking, [0, 4]) == pytest.approx((1 + (1 / 4 + 2 / 5) / 2) / 2)
    # a positive also listed as junk is skipped but still counts in the denominator
    assert oxford_ap(ranking, [0, 1], junk=[1]) == pytest.approx(0.5)
    # a positive that is not in the ranking lowers the AP (compute_ap divides by |pos|)
    assert oxford_ap(ranking, [0], n_positives=2) == pytest.approx(0.5)
    assert np.isnan(oxford_ap(ranking, []))
    names = [str(i) for i in range(5)]
    for pos, junk in (({"0", "2"}, set()), ({"0", "2"}, {"1"}), ({"0", "1"}, {"1"})):
        ours = oxford_ap(ranking, [int(p) for p in pos], [int(j) for j in junk])
        assert ours == pytest.approx(_compute_ap_cpp(pos, junk, names), abs=1e-6)


def test_ties_rank_in_database_order() -> None:
    # every score equal: the database order stands, so image 2 is third → (0 + 1/3) / 2
    mean, aps = oxford_map(np.array([[0.5, 0.5, 0.5]]), [[2]], [[]])
    assert mean == pytest.approx(1 / 6) and aps.tolist() == pytest.approx([1 / 6])


@pytest.mark.parametrize("seed", range(5))
def test_oxford_map_equals_the_compute_ap_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nq, nd = 5, 80
    sim = rng.standard_normal((nq, nd)).round(1)  # rounded: ties occur
    names = [f"img_{i:04d}" for i in range(nd)]
    positives, junk, expected = [], [], []
    for _ in range(nq):
        perm = rng.permutation(nd)
        pos = perm[: rng.integers(1, 10)]
        bad = perm[5 : 5 + rng.integers(0, 12)]  # may overlap the positives
        positives.append(pos.tolist())
        junk.append(bad.tolist())
    mean, aps = oxford_map(sim, positives, junk)
    for q in range(nq):
        order = np.argsort(-sim[q], kind="stable")
        ranked = [names[i] for i in order]
        pos_set = {names[i] for i in positives[q]}
        junk_set = {names[i] for i in junk[q]}
        expected.append(_compute_ap_cpp(pos_set, junk_set, ranked))
    assert aps.tolist() == pytest.approx(expected, abs=1e-6)
    assert mean == pytest.approx(float(np.mean(expected)), abs=1e-6)


class ColourEmbedder(TableEmbedder):
    """Images → their mean colour, so a query crop changes what matches."""

    def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        from bindkit.embed.images import load_image

        out = []
        for image in images:
            pil = image if hasattr(image, "getpixel") else load_image(image)
            v = np.asarray(pil.convert("RGB"), np.float32).reshape(-1, 3).mean(axis=0) + 1.0
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


COLOURS = {  # cosine to pure red: a1 1.0 > a3 .998 > b2 .957 > a2 .893 > query .316 > b1
    "a1": (255, 0, 0),
    "a3": (250, 10, 0),
    "b2": (200, 60, 0),
    "a2": (180, 90, 0),
    "b1": (0, 0, 255),
}


def _write_release(
    root: Path, images: Path, stem: str, query_line_prefix: str, nested: bool
) -> dict[str, str]:
    """One query (``<stem>_1``) in the published layout; returns stem → relative image path."""
    pil = pytest.importorskip("PIL.Image")
    gt = root / "gt"
    gt.mkdir(parents=True)
    paths = {}
    for key, colour in {**COLOURS, "q": (0, 0, 255)}.items():
        name = f"{stem}_{key}"
        rel = f"{stem}/{name}.jpg" if nested else f"{name}.jpg"
        (images / rel).parent.mkdir(parents=True, exist_ok=True)
        picture = pil.new("RGB", (8, 8), colour)
        if key == "q":
            picture.paste((255, 0, 0), (6, 0, 8, 8))  # the landmark: the red right quarter
        picture.save(images / rel, format="PNG")  # lossless, whatever the extension says
        paths[name] = rel
    (gt / f"{stem}_1_query.txt").write_text(f"{query_line_prefix}{stem}_q 6.0 0.0 8.0 8.0\n")
    (gt / f"{stem}_1_good.txt").write_text(f"{stem}_a1\n{stem}_q\n")
    (gt / f"{stem}_1_ok.txt").write_text(f"{stem}_a2\n")
    (gt / f"{stem}_1_junk.txt").write_text(f"{stem}_a3\n")
    return paths


# the crop is red: non-junk order a1 b2 a2 q b1, positives a1, a2, q at ranks 0, 2, 3
EXPECTED_AP = (1.0 + (1 / 2 + 2 / 3) / 2 + (2 / 3 + 3 / 4) / 2) / 3


def test_oxford5k_task_on_a_fixture(tmp_path: Path) -> None:
    from bindkit.evaluation import evaluate

    data = tmp_path / "oxford5k"
    paths = _write_release(data, data / "oxbuild_images", "all_souls", "oxc1_", nested=False)
    (record,) = evaluate(
        [ColourEmbedder()],
        task="oxford5k",
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert record["counts"] == {"queries": 1, "database": 6}
    assert record["scores"]["map"] == pytest.approx(EXPECTED_AP, abs=1e-9)
    ranked = ["all_souls_a1", "all_souls_a3", "all_souls_b2", "all_souls_a2", "all_souls_q"]
    cpp = _compute_ap_cpp(
        {"all_souls_a1", "all_souls_q", "all_souls_a2"}, {"all_souls_a3"}, [*ranked, "b1"]
    )
    assert record["scores"]["map"] == pytest.approx(cpp, abs=1e-6)
    assert paths["all_souls_q"] == "all_souls_q.jpg"


def test_paris6k_task_reads_nested_folders_and_per_query(tmp_path: Path) -> None:
    from bindkit.tasks.base import EvalContext, get_task

    data = tmp_path / "paris6k"
    _write_release(data, data / "paris", "paris_defense", "", nested=True)
    task = get_task("paris6k")
    dataset = task.load(data)
    result = task.evaluate(ColourEmbedder(), dataset, "default", "ii", EvalContext())
    assert result is not None
    assert result["scores"]["map"] == pytest.approx(EXPECTED_AP, abs=1e-9)
    per_query = result["per_query"]
    assert per_query["metric"] == "ap"
    assert per_query["ids"] == ["paris_defense/paris_defense_q.jpg"]
    assert per_query["values"] == pytest.approx([EXPECTED_AP])
    assert per_query["top"][0][:2] == [
        "paris_defense/paris_defense_a1.jpg",
        "paris_defense/paris_defense_a3.jpg",
    ]


def test_unreadable_files_are_left_out_with_a_note(tmp_path: Path) -> None:
    from bindkit.tasks.base import EvalContext, get_task

    data = tmp_path / "paris6k"
    _write_release(data, data / "paris", "paris_defense", "", nested=True)
    (data / "paris" / "paris_defense" / "paris_louvre_000136.jpg").write_bytes(b"")
    notes: list[str] = []
    task = get_task("paris6k")
    result = task.evaluate(
        ColourEmbedder(), task.load(data), "default", "ii", EvalContext(warn=notes.append)
    )
    assert result is not None and result["counts"]["database"] == 6
    assert result["scores"]["map"] == pytest.approx(EXPECTED_AP, abs=1e-9)
    assert any("1 files are not readable images" in n for n in notes)


def test_missing_files_are_named(tmp_path: Path) -> None:
    from bindkit.errors import BindkitError, DataFormatError
    from bindkit.tasks.base import EvalContext, get_task

    task = get_task("oxford5k")
    with pytest.raises(DataFormatError, match=r"no \*_query.txt ground-truth files.*oxbuildings"):
        task.load(tmp_path)
    data = tmp_path / "oxford5k"
    _write_release(data, data / "oxbuild_images", "all_souls", "oxc1_", nested=False)
    (data / "gt" / "all_souls_1_ok.txt").unlink()
    with pytest.raises(DataFormatError, match=r"all_souls_1_ok.txt: not found"):
        task.load(data)
    (data / "gt" / "all_souls_1_ok.txt").write_text("all_souls_a2\nall_souls_zz\n")
    with pytest.raises(
        BindkitError, match=r"1 of 5 images missing \(first: .*oxbuild_images/all_souls_zz\.jpg\)"
    ):
        task.evaluate(ColourEmbedder(), task.load(data), "default", "ii", EvalContext())


def test_sculptures6k_reads_the_oxford_convention(tmp_path: Path) -> None:
    from bindkit.evaluation import evaluate

    data = tmp_path / "sculptures6k"
    _write_release(data, data / "images" / "test", "Henry_Moore_Arch", "", nested=False)
    (record,) = evaluate(
        [ColourEmbedder()],
        task="sculptures6k",
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert record["counts"] == {"queries": 1, "database": 6}
    assert record["scores"]["map"] == pytest.approx(EXPECTED_AP, abs=1e-9)
    # the database is the folder: an added image makes the stored result stale
    pil = pytest.importorskip("PIL.Image")
    pil.new("RGB", (8, 8), (255, 0, 0)).save(data / "images" / "test" / "x.jpg", format="PNG")
    (again,) = evaluate(
        [ColourEmbedder()],
        task="sculptures6k",
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert again["counts"]["database"] == 7 and again["scores"]["map"] < EXPECTED_AP


@pytest.mark.parametrize(
    ("name", "archives"),
    [
        ("oxford5k", ("oxbuild_images-v1.tgz",)),
        ("paris6k", ("paris_1-v1.tgz", "paris_2-v1.tgz")),
    ],
)
def test_missing_files_name_the_current_vgg_archives(
    tmp_path: Path, name: str, archives: tuple[str, ...]
) -> None:
    """The image archives as the VGG pages serve them now (revisitop's python/download.py)."""
    from bindkit.errors import DataFormatError
    from bindkit.tasks.base import get_task

    with pytest.raises(DataFormatError) as caught:
        get_task(name).load(tmp_path)
    assert all(a in str(caught.value) for a in archives)


def test_sculptures6k_needs_both_halves(tmp_path: Path) -> None:
    """The ground truth names images of train/ and test/ alike: the default root (both halves)
    ranks them all; an image root holding one half is refused with a line saying to pass both."""
    from bindkit.errors import BindkitError
    from bindkit.tasks.base import EvalContext, get_task

    pil = pytest.importorskip("PIL.Image")
    data = tmp_path / "sculptures6k"
    (data / "gt").mkdir(parents=True)
    for half, names in (("train", ["s_a1"]), ("test", ["s_q", "s_a2", "s_b"])):
        (data / "images" / half).mkdir(parents=True)
        for n in names:
            colour = (0, 0, 255) if n == "s_b" else (255, 0, 0)
            pil.new("RGB", (8, 8), colour).save(data / "images" / half / f"{n}.jpg", format="PNG")
    (data / "gt" / "s_1_query.txt").write_text("s_q 0 0 8 8\n")
    (data / "gt" / "s_1_good.txt").write_text("s_a1\ns_a2\n")
    (data / "gt" / "s_1_ok.txt").write_text("")
    (data / "gt" / "s_1_junk.txt").write_text("")
    task = get_task("sculptures6k")
    result = task.evaluate(ColourEmbedder(), task.load(data), "default", "ii", EvalContext())
    assert result is not None and result["counts"]["database"] == 4
    # red query: the three red images (s_a1 and s_a2 relevant, the query itself not) before s_b
    assert result["per_query"]["top"][0][-1] == "test/s_b.jpg"
    half = task.load(data, image_root=data / "images" / "test")
    with pytest.raises(
        BindkitError, match=r"1 of 3 images missing .*s_a1\.jpg.*holding train/ and test/"
    ):
        task.evaluate(ColourEmbedder(), half, "default", "ii", EvalContext())


@pytest.mark.slow
def test_cli_with_builtin_tiny_clip_equals_the_compute_ap_loop(tmp_path: Path) -> None:
    """`bindkit eval --task oxford5k` with a real image model: its mAP is compute_ap.cpp's on the
    ranking of the model's own embeddings of the crop and the collection."""
    import json

    pil = pytest.importorskip("PIL.Image")
    pytest.importorskip("torch")
    from bindkit.cli import main
    from bindkit.embed.images import ImageRef
    from bindkit.embed.registry import load_embedder

    data = tmp_path / "oxford5k"
    gt, images = data / "gt_files_170407", data / "oxbuild_images"
    gt.mkdir(parents=True)
    images.mkdir()
    rng = np.random.default_rng(0)
    names = [f"all_souls_{i:06d}" for i in range(12)]
    colours = [tuple(int(c) for c in rng.integers(0, 256, 3)) for _ in names]
    for name, colour in zip(names, colours, strict=True):
        picture = pil.new("RGB", (64, 48), colour)
        if name == "all_souls_000000":  # the query: its box shows what image 3 shows
            picture.paste(colours[3], (10, 5, 41, 31))
        picture.save(images / f"{name}.jpg", format="PNG")
    (gt / "all_souls_1_query.txt").write_text("oxc1_all_souls_000000 10.5 5.0 40.2 30.9\n")
    (gt / "all_souls_1_good.txt").write_text("all_souls_000003\n")
    (gt / "all_souls_1_ok.txt").write_text("all_souls_000008\n")
    (gt / "all_souls_1_junk.txt").write_text("all_souls_000005\n")
    argv = ["eval", "--model", "builtin:tiny-clip", "--task", "oxford5k", "--data", str(data)]
    assert main([*argv, "--out", str(tmp_path / "r"), "--no-cache"]) in (0, None)
    (file,) = (tmp_path / "r").rglob("ii.json")
    got = json.loads(file.read_text())["scores"]["map"]
    # the engine keeps the per-query APs beside the result, and they average to the mAP
    from bindkit.records.per_query import read_per_query

    stored = read_per_query(file, json.loads(file.read_text()))
    assert stored is not None and stored[0].metric == "ap"
    assert float(np.mean(stored[0].values)) == pytest.approx(got)
    model = load_embedder("builtin:tiny-clip", cache=False, progress=False)
    crop = pil.open(images / "all_souls_000000.jpg").crop((10.5, 5.0, 40.2, 30.9))
    q = model.embed_images([crop])
    x = model.embed_images([ImageRef(images / f"{n}.jpg") for n in names], role="document")
    ranked = [names[i] for i in np.argsort(-(q @ x.T)[0], kind="stable")]
    positives = {"all_souls_000003", "all_souls_000008"}
    assert got == pytest.approx(_compute_ap_cpp(positives, {"all_souls_000005"}, ranked), abs=1e-6)
    uncropped = model.embed_images([ImageRef(images / "all_souls_000000.jpg")])
    other = [names[i] for i in np.argsort(-(uncropped @ x.T)[0], kind="stable")]
    assert got != pytest.approx(_compute_ap_cpp(positives, {"all_souls_000005"}, other), abs=1e-3)


# -- query boxes (bindkit.tasks.instance._boxes): refused in one line, or clipped to the image


@pytest.mark.parametrize(
    ("box", "message"),
    [
        ("nan 0 8 8", "box nan 0 8 8 is not finite"),
        ("0 0 inf 8", "box 0 0 inf 8 is not finite"),
        ("7 0 6 8", r"box 7 0 6 8 is inverted \(x1 > x2 or y1 > y2\)"),
        ("3 3 3 8", "box 3 3 3 8 holds no pixel"),
        ("3.2 3 3.4 8", "box 3.2 3 3.4 8 holds no pixel"),  # nothing left once PIL rounds
        ("-9 -9 -2 8", r"box -9 -9 -2 8 lies wholly outside the image \(left of or above it\)"),
        ("9 0 20 8", "box 9 0 20 8 lies wholly outside its 8x8 image"),
        ("0 8.6 8 20", "box 0 8.6 8 20 lies wholly outside its 8x8 image"),
    ],
)
def test_a_query_box_without_pixels_is_refused_at_load(
    tmp_path: Path, box: str, message: str
) -> None:
    from bindkit.errors import DataFormatError
    from bindkit.tasks.base import get_task

    data = tmp_path / "oxford5k"
    _write_release(data, data / "oxbuild_images", "all_souls", "oxc1_", nested=False)
    (data / "gt" / "all_souls_1_query.txt").write_text(f"oxc1_all_souls_q {box}\n")
    where = r"gt/all_souls_1_query.txt: query all_souls_1: "
    with pytest.raises(DataFormatError, match=where + message):
        get_task("oxford5k").load(data)  # before any model: load reads only the files


@pytest.mark.parametrize("box", ["6 0 20 8", "6 -5 8 30", "6 0 1e12 1e12", "5.6 -0.4 8.4 8.4"])
def test_a_box_past_the_edge_is_clipped_to_the_image(tmp_path: Path, box: str) -> None:
    """No black band: the crop of a box reaching past the image is the crop of its part inside
    (revisitop's crop_qim.m and ILIAS' slicing stop at the edge), so the AP is the fixture's."""
    from bindkit.evaluation import evaluate

    data = tmp_path / "oxford5k"
    _write_release(data, data / "oxbuild_images", "all_souls", "oxc1_", nested=False)
    (data / "gt" / "all_souls_1_query.txt").write_text(f"oxc1_all_souls_q {box}\n")
    sizes: list[tuple[int, int]] = []

    class Recording(ColourEmbedder):
        def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
            sizes.extend(i.size for i in images if hasattr(i, "getpixel"))
            return super().embed_images(images, role=role, instruction=instruction)

    (record,) = evaluate(
        [Recording()], task="oxford5k", data=data, out=tmp_path / "r", verbose=False
    )
    assert sizes == [(2, 8)]  # the red quarter, x 6..8: nothing padded
    assert record["scores"]["map"] == pytest.approx(EXPECTED_AP, abs=1e-9)


def test_the_crop_inside_the_image_is_pils_and_past_the_edge_stops_there(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    from bindkit.tasks.instance._base import crop as _crop

    rng = np.random.default_rng(0)
    path = tmp_path / "q.jpg"
    pil.fromarray(rng.integers(0, 256, (48, 64, 3), dtype=np.uint8)).save(path, format="PNG")
    whole = pil.open(path).convert("RGB")
    inside = (10.5, 5.0, 40.2, 30.9)  # revisitop's example: PIL's crop, its rounding
    assert np.array_equal(np.asarray(_crop(path, inside, "q")), np.asarray(whole.crop(inside)))
    past = _crop(path, (50.0, -7.0, 90.0, 20.0), "q")
    assert past.size == (14, 20)
    assert np.array_equal(np.asarray(past), np.asarray(whole.crop((50, 0, 64, 20))))


def test_a_query_without_positives_is_left_out_with_a_warning(tmp_path: Path) -> None:
    from bindkit.tasks.base import EvalContext, get_task

    data = tmp_path / "oxford5k"
    _write_release(data, data / "oxbuild_images", "all_souls", "oxc1_", nested=False)
    gt = data / "gt"
    (gt / "all_souls_2_query.txt").write_text("oxc1_all_souls_b1 0 0 8 8\n")
    for kind in ("good", "ok", "junk"):
        (gt / f"all_souls_2_{kind}.txt").write_text("")
    notes: list[str] = []
    task = get_task("oxford5k")
    result = task.evaluate(
        ColourEmbedder(), task.load(data), "default", "ii", EvalContext(warn=notes.append)
    )
    assert result is not None
    assert result["scores"]["map"] == pytest.approx(EXPECTED_AP, abs=1e-9)
    assert np.isnan(result["per_query"]["values"][1])
    assert any("1 of 2 queries have no good or ok image" in n and "all_souls_2" in n for n in notes)


def test_crlf_ground_truth_reads_as_lf(tmp_path: Path) -> None:
    """D4: bindkit strips the ``\\r`` of CRLF files (compute_ap.cpp's getline would keep it and
    find no image); the documented leniency gives the LF files' score."""
    from bindkit.evaluation import evaluate

    data = tmp_path / "oxford5k"
    _write_release(data, data / "oxbuild_images", "all_souls", "oxc1_", nested=False)
    for f in (data / "gt").glob("*.txt"):
        f.write_bytes(f.read_bytes().replace(b"\n", b"\r\n"))
    (record,) = evaluate(
        [ColourEmbedder()], task="oxford5k", data=data, out=tmp_path / "r", verbose=False
    )
    assert record["scores"]["map"] == pytest.approx(EXPECTED_AP, abs=1e-9)
