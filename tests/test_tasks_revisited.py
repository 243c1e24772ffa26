"""Revisited Oxford/Paris mAP against a literal port of revisitop's compute_map, and the task on
a small fixture in the published layout (gnd_*.pkl + jpg/)."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder
from _per_query import mean_is_score, stored
from bindkit.evaluation import evaluate
from bindkit.metrics.instance import mean_ap, query_ap, revisited_maps, trapezoid_ap


def _reference_map(ranks: np.ndarray, gnd: list[dict[str, np.ndarray]]) -> float:
    """revisitop python/evaluate.py compute_map, loop for loop (ranks: database × queries)."""
    total, empty = 0.0, 0
    for i in range(len(gnd)):
        qgnd = gnd[i]["ok"]
        if qgnd.shape[0] == 0:
            empty += 1
            continue
        qgndj = gnd[i]["junk"]
        pos = np.arange(ranks.shape[0])[np.isin(ranks[:, i], qgnd)]
        junk = np.arange(ranks.shape[0])[np.isin(ranks[:, i], qgndj)]
        k = ij = 0
        if len(junk):
            ip = 0
            while ip < len(pos):
                while ij < len(junk) and pos[ip] > junk[ij]:
                    k += 1
                    ij += 1
                pos[ip] = pos[ip] - k
                ip += 1
        ap = 0.0
        for j in range(len(pos)):
            rank = pos[j]
            p0 = 1.0 if rank == 0 else j / rank
            p1 = (j + 1) / (rank + 1)
            ap += (p0 + p1) / len(qgnd) / 2
        total += ap
    return total / (len(gnd) - empty)


def test_hand_computed_ap() -> None:
    # positives at ranks 0 and 2 of 2 positives: (1 + 1)/2/2 + (1/2 + 2/3)/2/2
    assert trapezoid_ap(np.array([0, 2]), 2) == pytest.approx(0.5 + 7 / 24)
    # a junk image ranked above the second positive moves it from rank 2 to rank 1: AP 1
    assert query_ap(np.array([5, 9, 7]), positives=[5, 7], junk=[9]) == 1.0
    assert np.isnan(query_ap(np.array([1, 2]), positives=[]))


@pytest.mark.parametrize("seed", range(5))
def test_mean_ap_equals_the_revisitop_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    nq, nd = 6, 60
    sim = rng.standard_normal((nq, nd))
    positives, junk, gnd = [], [], []
    for q in range(nq):
        perm = rng.permutation(nd)
        ok = perm[: rng.integers(0, 8)] if q else perm[:0]  # query 0 has no positives
        bad = perm[10 : 10 + rng.integers(0, 10)]
        positives.append(ok.tolist())
        junk.append(bad.tolist())
        gnd.append({"ok": ok, "junk": bad})
    ranks = np.argsort(-sim, axis=1, kind="stable").T
    ours, aps = mean_ap(sim, positives, junk)
    assert np.isnan(aps[0])
    assert ours == pytest.approx(_reference_map(ranks, gnd), abs=1e-12)


def _reference_precision(ranks: np.ndarray, gnd: list[dict], kappas: list[int]) -> np.ndarray:
    """revisitop's mean precision at kappas, spelled out: the junk-shifted 1-based positive
    ranks, k' = min(last positive rank, k), positives within k' over k'; queries without
    positives are left out."""
    rows = []
    for i, g in enumerate(gnd):
        if len(g["ok"]) == 0:
            continue
        column = list(ranks[:, i])
        junk_seen, shifted = 0, []
        for position, image in enumerate(column):
            if image in set(g["junk"]):
                junk_seen += 1
            elif image in set(g["ok"]):
                shifted.append(position - junk_seen + 1)
        rows.append(
            [sum(r <= min(max(shifted), k) for r in shifted) / min(max(shifted), k) for k in kappas]
        )
    return np.mean(rows, axis=0)


def test_precision_at_k_by_hand_and_against_the_revisitop_definition() -> None:
    from bindkit.metrics.instance import positive_ranks, precision_at

    # junk first, then positive 0 at position 2 and positive 3 at position 4: 1-based 2 and 4
    ranks = positive_ranks(np.array([1, 2, 0, 4, 3, 5]), positives=[0, 3], junk=[1])
    assert ranks.tolist() == [1, 3]
    assert [precision_at(ranks, k) for k in (1, 5, 10)] == [0.0, 0.5, 0.5]
    rng = np.random.default_rng(3)
    sim = rng.standard_normal((7, 40))
    gnd = []
    for _ in range(7):
        perm = rng.permutation(40)
        gnd.append(
            {"easy": perm[:3].tolist(), "hard": perm[3:6].tolist(), "junk": perm[6:9].tolist()}
        )
    got = revisited_maps(sim, gnd)
    order = np.argsort(-sim, axis=1, kind="stable").T
    medium = [{"ok": g["easy"] + g["hard"], "junk": g["junk"]} for g in gnd]
    expected = _reference_precision(order, medium, [1, 5, 10])
    assert [got[f"mp_at_{k}_medium"] for k in (1, 5, 10)] == pytest.approx(expected, abs=1e-12)
    hard = [{"ok": g["hard"], "junk": g["junk"] + g["easy"]} for g in gnd]
    expected = _reference_precision(order, hard, [1, 5, 10])
    assert [got[f"mp_at_{k}_hard"] for k in (1, 5, 10)] == pytest.approx(expected, abs=1e-12)


def test_settings_pick_positive_and_junk_lists() -> None:
    sim = np.array([[0.9, 0.8, 0.7, 0.6]])
    gnd = [{"easy": [2], "hard": [0], "junk": [1]}]
    maps = revisited_maps(sim, gnd)
    # easy: ok [2], junk [1, 0] -> rank 0 -> 1; medium: ok [2, 0], junk [1] -> ranks 0, 1 -> 1
    # hard: ok [0], junk [1, 2] -> rank 0 -> 1; now move the hard image down
    assert {k: v for k, v in maps.items() if k.startswith("map_")} == {
        "map_easy": 1.0,
        "map_medium": 1.0,
        "map_hard": 1.0,
    }
    sim = np.array([[0.1, 0.8, 0.7, 0.6]])
    maps = revisited_maps(sim, gnd)
    assert maps["map_easy"] == 1.0
    assert maps["map_hard"] == pytest.approx(trapezoid_ap(np.array([1]), 1))  # item 3 above it


def test_roxford_task_on_a_fixture(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    root = tmp_path / "roxford5k"
    (root / "jpg").mkdir(parents=True)
    colours = {"b": (0, 0, 255), "a": (255, 0, 0), "c": (0, 255, 0)}
    for name, colour in colours.items():
        pil.new("RGB", (8, 8), colour).save(root / "jpg" / f"{name}.jpg", format="PNG")
    query = pil.new("RGB", (8, 8), (0, 0, 255))
    query.paste((255, 0, 0), (6, 0, 8, 8))  # the landmark: the red right quarter
    query.save(root / "jpg" / "q0.jpg", format="PNG")
    gnd = [{"bbx": [6, 0, 8, 8], "easy": [1], "hard": [2], "junk": []}]
    with (root / "gnd_roxford5k.pkl").open("wb") as handle:
        pickle.dump({"imlist": ["b", "a", "c"], "qimlist": ["q0"], "gnd": gnd}, handle)
    (record,) = evaluate(
        [ColourEmbedder()],
        task="roxford5k",
        data=root,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
    )
    assert record["pairing"] == "ii" and record["counts"] == {"queries": 1, "database": 3}
    # uncropped, the query is mostly blue and b ranks first (AP 0.25); cropped it is red
    assert record["scores"]["map_easy"] == 1.0
    # hard: c is below b; a (easy) is junk there and is removed from the ranking
    assert record["scores"]["map_hard"] == pytest.approx(trapezoid_ap(np.array([1]), 1))
    stored_scores = stored(tmp_path / "r", record)
    assert list(stored_scores) == ["ap_medium", "ap_easy", "ap_hard"]  # the main score first
    for setting in ("easy", "medium", "hard"):
        mean_is_score(tmp_path / "r", record, f"ap_{setting}", f"map_{setting}")
    medium = stored_scores["ap_medium"]
    assert medium.ids == ("q0.jpg",)  # image names relative to the image root
    assert medium.top == (("a.jpg", "b.jpg", "c.jpg"),)  # the cropped query is red


def test_missing_revisited_files_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.errors import DataFormatError

    with pytest.raises(DataFormatError, match=r"gnd_rparis6k\.pkl: not found; it is published at"):
        evaluate(
            [ColourEmbedder()], task="rparis6k", data=tmp_path, out=tmp_path / "r", verbose=False
        )
    with (tmp_path / "gnd_rparis6k.pkl").open("wb") as handle:
        pickle.dump({"imlist": ["x"], "qimlist": ["q"], "gnd": [{"bbx": [0, 0, 1, 1]}]}, handle)
    from bindkit.errors import BindkitError

    with pytest.raises(BindkitError, match="rparis6k: 2 of 2 images missing"):
        evaluate(
            [ColourEmbedder()], task="rparis6k", data=tmp_path, out=tmp_path / "r", verbose=False
        )
    with pytest.raises(BindkitError, match="nothing to score"):  # mAP needs every image
        evaluate(
            [ColourEmbedder()],
            task="rparis6k",
            data=tmp_path,
            out=tmp_path / "r",
            verbose=False,
            allow_missing_images=True,
        )
    assert "mAP needs every image" in capsys.readouterr().err


class ColourEmbedder(TableEmbedder):
    """Images → their mean colour (so a crop that drops the dark corner matches red best)."""

    def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        from bindkit.embed.images import load_image

        out = []
        for image in images:
            pil = image if hasattr(image, "getpixel") else load_image(image)
            v = np.asarray(pil.convert("RGB"), np.float32).reshape(-1, 3).mean(axis=0) + 1.0
            out.append(v / np.linalg.norm(v))
        return np.stack(out)


def _revisited_fixture(root: Path, bbx: list[float]) -> None:
    pil = pytest.importorskip("PIL.Image")
    (root / "jpg").mkdir(parents=True)
    for name, colour in {"b": (0, 0, 255), "a": (255, 0, 0), "c": (0, 255, 0)}.items():
        pil.new("RGB", (8, 8), colour).save(root / "jpg" / f"{name}.jpg", format="PNG")
    query = pil.new("RGB", (8, 8), (0, 0, 255))
    query.paste((255, 0, 0), (6, 0, 8, 8))
    query.save(root / "jpg" / "q0.jpg", format="PNG")
    gnd = [{"bbx": bbx, "easy": [1], "hard": [2], "junk": []}]
    with (root / "gnd_roxford5k.pkl").open("wb") as handle:
        pickle.dump({"imlist": ["b", "a", "c"], "qimlist": ["q0"], "gnd": gnd}, handle)


@pytest.mark.parametrize(
    ("bbx", "message"),
    [
        ([float("nan"), 0, 8, 8], "box nan 0 8 8 is not finite"),
        ([8, 0, 6, 8], "box 8 0 6 8 is inverted"),
        ([20, 0, 30, 8], "box 20 0 30 8 lies wholly outside its 8x8 image"),
        ([1, 2, 3], "the box is not four numbers x1 y1 x2 y2"),
    ],
)
def test_a_revisited_box_without_pixels_is_refused_at_load(
    tmp_path: Path, bbx: list[float], message: str
) -> None:
    from bindkit.errors import DataFormatError
    from bindkit.tasks.base import get_task

    _revisited_fixture(tmp_path / "roxford5k", bbx)
    with pytest.raises(
        DataFormatError, match=r"gnd_roxford5k.pkl: query q0 \(gnd\[0\]\): " + message
    ):
        get_task("roxford5k").load(tmp_path / "roxford5k")


def test_a_revisited_box_past_the_edge_is_clipped(tmp_path: Path) -> None:
    """revisitop's Python example would pad the crop with black (PIL); its crop_qim.m stops at
    the edge, as bindkit does: the crop is the red quarter alone."""
    _revisited_fixture(tmp_path / "roxford5k", [6, 0, 30, 30])
    seen: list[tuple[int, int]] = []

    class Recording(ColourEmbedder):
        def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
            seen.extend(i.size for i in images if hasattr(i, "getpixel"))
            return super().embed_images(images, role=role, instruction=instruction)

    (record,) = evaluate(
        [Recording()],
        task="roxford5k",
        data=tmp_path / "roxford5k",
        out=tmp_path / "r",
        verbose=False,
    )
    assert seen == [(2, 8)]
    assert record["scores"]["map_easy"] == 1.0
