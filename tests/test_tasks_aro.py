"""ARO VG-Relation / VG-Attribution on fixtures in the published JSON layout: bbox crops, the
argmax tie rule (a tie is wrong), and the original's macro averages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from _per_query import mean_is_score
from bindkit.errors import BindkitError
from bindkit.evaluation import evaluate
from bindkit.tasks.pairs.aro import SYMMETRIC, macro_accuracy


def test_macro_averages_follow_the_original() -> None:
    correct = np.array([1.0, 0.0, 1.0, 1.0])
    groups = ["on", "on", "next to", "above"]  # "next to" is in the symmetric list
    assert "next to" in SYMMETRIC and "on" not in SYMMETRIC
    mean, per = macro_accuracy(correct, groups, "vg_relation")
    assert per == {"above": 1.0, "on": 0.5} and mean == 0.75
    many = ["red_blue"] * 25 + ["big_small"] * 24
    mean, per = macro_accuracy(np.r_[np.ones(25), np.zeros(24)], many, "vg_attribution")
    assert per == {"red_blue": 1.0} and mean == 1.0  # pairs with < 25 items are left out


class _Colours:
    """Images → mean colour; captions → a fixed colour word vector."""

    spec = "fake:colours"
    modalities = frozenset({"text", "image"})
    fingerprint = "colours"
    words: ClassVar[dict[str, tuple[float, float, float]]] = {
        "red": (1.0, 0.0, 0.0),
        "blue": (0.0, 0.0, 1.0),
        "green": (0.0, 1.0, 0.0),
    }

    def describe(self) -> dict[str, str]:
        return {}

    def embed_texts(self, texts, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        return np.array([self.words[t.split()[0]] for t in texts], np.float32)

    def embed_images(self, images, *, role="query", instruction=None):  # type: ignore[no-untyped-def]
        out = [np.asarray(i.convert("RGB"), np.float32).reshape(-1, 3).mean(0) for i in images]
        return np.stack([v / np.linalg.norm(v) for v in out])


def test_vg_relation_fixture_crops_and_ties(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    (tmp_path / "images").mkdir()
    image = pil.new("RGB", (10, 10), (0, 0, 255))
    image.paste((255, 0, 0), (0, 0, 5, 10))  # red left half, blue right half
    image.save(tmp_path / "images" / "1.jpg", format="PNG")
    box = {"bbox_x": 0, "bbox_y": 0, "bbox_w": 5, "bbox_h": 10}  # the red half
    rows = [
        {
            "image_path": "1.jpg",
            **box,
            "true_caption": "red thing",
            "false_caption": "blue thing",
            "relation_name": "on",
        },
        {
            "image_path": "1.jpg",
            **box,
            "true_caption": "red a",
            "false_caption": "red b",
            "relation_name": "above",
        },  # identical vectors: a tie, wrong
        {
            "image_path": "gone.jpg",
            **box,
            "true_caption": "red",
            "false_caption": "blue",
            "relation_name": "on",
        },
    ]
    (tmp_path / "visual_genome_relation.json").write_text(json.dumps(rows))
    with pytest.raises(BindkitError, match=r"aro vg_relation: 1 of 3 images missing \(first: "):
        evaluate([_Colours()], task="aro", data=tmp_path, out=tmp_path / "r", verbose=False)
    (record,) = evaluate(
        [_Colours()],
        task="aro",
        data=tmp_path,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        allow_missing_images=True,
    )
    assert record["partial"] is True
    assert record["subset"] == "vg_relation"
    assert record["scores"]["accuracy_by"] == {"above": 0.0, "on": 1.0}
    assert record["scores"]["accuracy"] == 0.5
    assert record["counts"] == {"items": 3, "scored": 2, "missing_images": 1, "groups_averaged": 2}
    # the macro score averages groups; the per-query credit averages to the micro score
    assert len(mean_is_score(tmp_path / "r", record, "correct", "accuracy_micro").ids) == 2
