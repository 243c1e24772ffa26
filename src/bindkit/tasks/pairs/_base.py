"""What the caption-choice tasks share.

Winoground, ColorSwap and BiVLC (:class:`PairsTask`): two captions and two images per item,
scored with the Winoground text / image / group scores (Thrush et al., CVPR 2022), each
comparison under the task's tie rule (``TaskMetadata.ties``; Winoground's own: strict).

With s(c, i) the similarity of caption c and image i:

- text: s(c0,i0) > s(c1,i0) and s(c1,i1) > s(c0,i1)
- image: s(c0,i0) > s(c0,i1) and s(c1,i1) > s(c1,i0)
- group: both.

Images are embedded with role "query" and captions with role "document", as in SugarCrepe.

SugarCrepe and ARO's VG subsets: one image, a positive and a negative caption, correct when the
positive scores above under the task's tie rule (:func:`prefers_positive`; theirs: strictly).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from bindkit.embed.images import ImageInput
from bindkit.embed.protocol import Embedder
from bindkit.metrics.pairwise import TIE_RULES, Ties, beats, rowdot
from bindkit.records.tables import Table, as_dict, label, pct
from bindkit.tasks.base import EvalContext, Task

COCO = "COCO val2017 images (http://images.cocodataset.org/zips/val2017.zip)"


@dataclass(frozen=True)
class PairItem:
    """One item: captions c0, c1 and images i0, i1 (paths, or PIL images decoded lazily)."""

    id: str
    caption_0: str
    caption_1: str
    image_0: Any
    image_1: Any
    tag: str = ""


def score_pairs(
    c0: np.ndarray, c1: np.ndarray, i0: np.ndarray, i1: np.ndarray, ties: Ties
) -> dict[str, np.ndarray]:
    """Per item text, image and group credit from unit vectors, each comparison under ``ties``
    (:func:`bindkit.metrics.pairwise.beats`)."""
    s00, s01 = rowdot(c0, i0), rowdot(c0, i1)
    s10, s11 = rowdot(c1, i0), rowdot(c1, i1)
    text = beats(s00, s10, ties) * beats(s11, s01, ties)
    image = beats(s00, s01, ties) * beats(s11, s10, ties)
    return {"text_score": text, "image_score": image, "group_score": text * image}


def evaluate_pairs(
    embedder: Embedder,
    items: Sequence[PairItem],
    images: tuple[Sequence[ImageInput], Sequence[ImageInput]],
    query_instruction: str | None,
    document_instruction: str | None,
    ties: Ties,
) -> dict[str, Any]:
    n = len(items)
    captions = embedder.embed_texts(
        [x.caption_0 for x in items] + [x.caption_1 for x in items],
        role="document",
        instruction=document_instruction,
    )
    pictures = embedder.embed_images(
        list(images[0]) + list(images[1]), role="query", instruction=query_instruction
    )
    per_item = score_pairs(captions[:n], captions[n:], pictures[:n], pictures[n:], ties)
    scores: dict[str, Any] = {k: float(v.mean()) for k, v in per_item.items()}
    tags = sorted({x.tag for x in items if x.tag})
    if tags:
        index = np.array([x.tag for x in items])
        for name in ("text_score", "image_score", "group_score"):
            scores[f"{name}_by_tag"] = {t: float(per_item[name][index == t].mean()) for t in tags}
    ids = [x.id for x in items]
    if len(set(ids)) != len(ids):  # ids that repeat cannot name items: their places do
        ids = [str(k) for k in range(n)]
    per_query = [  # the group score first: Winoground's, ColorSwap's and BiVLC's main score
        {"metric": name, "ids": ids, "values": per_item[name].tolist()}
        for name in ("group_score", "text_score", "image_score")
    ]
    return {"scores": scores, "counts": {"items": n}, "per_query": per_query}


def tag_tables(task: str, what: str, records: list[dict[str, Any]]) -> list[Table]:
    """Per data: model × score rows, one column per tag (Winoground's tags, BiVLC's types)."""
    from bindkit.records.fields import group_by_data

    tables = []
    for data_name, group in group_by_data(records):
        tags = sorted({t for r in group for t in as_dict(r["scores"].get("group_score_by_tag"))})
        if not tags:
            continue
        rows = []
        several = len({r.get("subset") for r in group}) > 1
        for r in group:
            for name in ("text_score", "image_score", "group_score"):
                values = as_dict(r["scores"].get(f"{name}_by_tag"))
                if values:
                    model = f"{label(r)} ({r.get('subset')})" if several else label(r)
                    rows.append([model, name, *(pct(values.get(t)) for t in tags)])
        tables.append(
            Table(f"{task} ({data_name}) scores per {what} (%)", ["model", "score", *tags], rows)
        )
    return tables


def prefers_positive(
    images: np.ndarray, positive: np.ndarray, negative: np.ndarray, ties: Ties
) -> np.ndarray:
    """Per item: credit for s(image, positive) above s(image, negative) under ``ties``."""
    return beats(rowdot(images, positive), rowdot(images, negative), ties)


class PairsTask(Task):
    """A benchmark of two captions × two images per item: Winoground's scores, by tag."""

    tag_label: ClassVar[str] = "tag"  # what the data's tags are, in the per-tag table's title
    tie_rules = TIE_RULES

    def score_items(
        self,
        embedder: Embedder,
        items: Sequence[PairItem],
        images: tuple[Sequence[ImageInput], Sequence[ImageInput]],
        subset: str,
        ctx: EvalContext,
    ) -> dict[str, Any]:
        """:func:`evaluate_pairs` with this task's instructions for ``subset``."""
        return evaluate_pairs(
            embedder,
            items,
            images,
            self.query_instruction(subset, ctx),
            self.document_instruction(subset, ctx),
            self.metadata.tie_rule(subset),
        )

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        """Text, image and group scores per tag (Winoground's Object / Relation / Both, BiVLC's
        types), where the data has tags."""
        return tag_tables(self.metadata.name, self.tag_label, records)
