"""SugarCrepe++ (Dumpala et al., NeurIPS 2024; Sri-Harsha/scpp): two positive captions P1, P2 and
one negative N per COCO image, in five subsets.

- ITT (pairing ``it``): correct when s(I, P1) > s(I, N) and s(I, P2) > s(I, N); the paper's
  Image-P1-Neg and Image-P2-Neg rows are each comparison alone (``image_p1_neg``,
  ``image_p2_neg``).
- TOT (pairing ``tt``, text-only models too): correct when s(P1, P2) > s(P1, N) and
  s(P1, P2) > s(P2, N).

Both comparisons are strict (a tie is wrong). Files as published: ``data/<subset>.json``, a list
of ``{"id", "filename", "caption", "caption2", "negative_caption"}``. In swap_obj two rows (ids 2
and 8) have ``caption == negative_caption``; they are kept as published (TOT can never get them
right) and counted in ``counts.caption_equals_negative``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_bytes
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.pairwise import TIE_RULES, Ties, beats, rowdot
from bindkit.tasks import _images
from bindkit.tasks._files import read_json
from bindkit.tasks._halves import halve_by_image
from bindkit.tasks.base import Dataset, EvalContext, Task, TaskMetadata
from bindkit.tasks.pairs._base import COCO

SUBSETS = ("replace_att", "replace_obj", "replace_rel", "swap_att", "swap_obj")
FIELDS = ("filename", "caption", "caption2", "negative_caption")


@dataclass(frozen=True)
class SCPPData:
    items: dict[str, list[dict[str, str]]]
    image_root: Path | None


def read_scpp(
    directory: Path, subsets: tuple[str, ...] = SUBSETS
) -> dict[str, list[dict[str, str]]]:
    """Every subset file of a SugarCrepe++ ``data`` folder, checked field by field."""
    out: dict[str, list[dict[str, str]]] = {}
    for subset in subsets:
        path = directory / f"{subset}.json"
        rows = read_json(path, f"the published SugarCrepe++ file {subset}.json")
        if isinstance(rows, dict):  # the Hugging Face export keys rows by index
            rows = list(rows.values())
        if not isinstance(rows, list) or not rows:
            raise DataFormatError(f"{path}: expected a non-empty list of items")
        for number, row in enumerate(rows):
            for key in FIELDS:
                if not isinstance(row, dict) or not isinstance(row.get(key), str):
                    raise DataFormatError(f"{path}: item {number}: field {key!r} must be a string")
        out[subset] = rows
    return out


class SugarCrepePP(Task):
    metadata = TaskMetadata(
        name="sugarcrepe_pp",
        description="SugarCrepe++: two positives vs a negative, image-text (ITT), text-only (TOT)",
        main_score="tot_accuracy",
        scores=("itt_accuracy", "image_p1_neg", "image_p2_neg"),
        reference="Dumpala et al., NeurIPS 2024 Datasets & Benchmarks; github.com/Sri-Harsha/scpp",
        subsets=SUBSETS,
        modalities=("text", "image"),
        pairings=("tt", "it"),
        ties="wrong",
        license="see github.com/Sri-Harsha/scpp",
        published="https://github.com/Sri-Harsha/scpp (data/*.json)",
        data_dir="sugarcrepe_pp",
        data_help="the folder of replace_att.json ... swap_obj.json",
        fetchable=True,
    )
    tie_rules = TIE_RULES

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None  # resolve_data gives a path: this task has no built-in set
        if not data.is_dir():
            raise DataFormatError(f"{data}: not a folder; pass {self.metadata.data_help}")
        items = read_scpp(data)
        digest = sha256_bytes(b"".join((data / f"{s}.json").read_bytes() for s in SUBSETS))
        payload = SCPPData(items, _images.image_root(data, image_root))
        return Dataset(data.name, digest, str(data), payload, SUBSETS, has_images=True)

    def halve(self, dataset: Dataset, half: str) -> Dataset:
        """Keyed by the COCO image: an image and all its captions lie in one half, in
        SugarCrepe and SugarCrepe++ alike (most SugarCrepe++ items rewrite a SugarCrepe one)."""
        return halve_by_image(dataset, half)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        data: SCPPData = dataset.payload
        rows = data.items[subset]
        ids = [str(r.get("id", k)) for k, r in enumerate(rows)]  # the published id
        counts: dict[str, int] = {
            "items": len(rows),
            "caption_equals_negative": sum(r["caption"] == r["negative_caption"] for r in rows),
        }
        if pairing == "it":
            names = [r["filename"] for r in rows]
            where = f"{self.metadata.name} {subset}"
            mask = _images.present(names, data.image_root, where, COCO, ctx)
            counts["missing_images"] = int((~mask).sum())
            rows = [r for r, ok in zip(rows, mask, strict=True) if ok]
            ids = [i for i, ok in zip(ids, mask, strict=True) if ok]
            if not rows:
                return None
        ties = self.metadata.tie_rule(subset)
        p1, p2, n = _embed_captions(embedder, rows, self.document_instruction(subset, ctx))
        if pairing == "tt":
            correct = score_tot(p1, p2, n, ties)
            return {
                "scores": {"tot_accuracy": float(correct.mean())},
                "counts": counts,
                "per_query": {"metric": "correct", "ids": ids, "values": correct.tolist()},
            }
        assert data.image_root is not None
        images = embedder.embed_images(
            _images.refs([r["filename"] for r in rows], data.image_root),
            role="query",
            instruction=self.query_instruction(subset, ctx),
        )
        correct = score_itt(images, p1, p2, n, ties)
        counts["scored"] = len(rows)
        negative = rowdot(images, n)
        scores = {
            "itt_accuracy": float(correct.mean()),
            "image_p1_neg": float(beats(rowdot(images, p1), negative, ties).mean()),
            "image_p2_neg": float(beats(rowdot(images, p2), negative, ties).mean()),
        }
        per_query = {"metric": "correct", "ids": ids, "values": correct.tolist()}
        return {"scores": scores, "counts": counts, "per_query": per_query}


def _embed_captions(
    embedder: Embedder, rows: list[dict[str, str]], instruction: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    texts = [r[k] for k in ("caption", "caption2", "negative_caption") for r in rows]
    vectors = embedder.embed_texts(texts, role="document", instruction=instruction)
    m = len(rows)
    return vectors[:m], vectors[m : 2 * m], vectors[2 * m :]


def score_tot(p1: np.ndarray, p2: np.ndarray, n: np.ndarray, ties: Ties) -> np.ndarray:
    """Per item: s(P1,P2) above s(P1,N) and s(P1,P2) above s(P2,N), under ``ties``."""
    positive = rowdot(p1, p2)
    right: np.ndarray = beats(positive, rowdot(p1, n), ties) * beats(positive, rowdot(p2, n), ties)
    return right


def score_itt(
    image: np.ndarray, p1: np.ndarray, p2: np.ndarray, n: np.ndarray, ties: Ties
) -> np.ndarray:
    """Per item: s(I,P1) above s(I,N) and s(I,P2) above s(I,N), under ``ties``."""
    negative = rowdot(image, n)
    right: np.ndarray = beats(rowdot(image, p1), negative, ties) * beats(
        rowdot(image, p2), negative, ties
    )
    return right
