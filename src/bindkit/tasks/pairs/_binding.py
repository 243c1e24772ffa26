"""What the controlled binding benchmarks share (CLEVR-binding, PUG:SPAR, PUG:SPARE): each item
is one image, its caption and one hard-negative caption, and it is correct when the image scores
the caption above the negative under the task's tie rule (``TaskMetadata.ties``).

A task lists a subset's items (:meth:`BindingTask.binding_items`); scoring is shared, and so is
the mteb view of the same items (``bindkit.mteb_bridge.mteb_pairs.binding_tasks``).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import Any

from bindkit.embed.protocol import Embedder
from bindkit.metrics.pairwise import TIE_RULES, beats, rowdot
from bindkit.tasks.base import Dataset, EvalContext, Task


@dataclass(frozen=True)
class BindingItem:
    """One image (an ``ImageRef`` or a decoded PIL image), its caption and the negative."""

    id: str
    image: Any
    positive: str
    negative: str


class BindingTask(Task):
    """Image→text: the caption above its hard negative, credited by the task's tie rule."""

    tie_rules = TIE_RULES

    @abstractmethod
    def binding_items(
        self, dataset: Dataset, subset: str, ctx: EvalContext
    ) -> tuple[list[BindingItem], dict[str, int]]:
        """The subset's scored items, in the publisher's order, and counts of what was read and
        left out (missing images, items without a negative)."""

    def default_subsets(self, dataset: Dataset) -> tuple[str, ...]:
        """The first declared subset: the one the publisher reports."""
        return self.metadata.subsets[:1]

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        items, counts = self.binding_items(dataset, subset, ctx)
        if not items:
            return None
        pictures = embedder.embed_images(
            [x.image for x in items], role="query", instruction=self.query_instruction(subset, ctx)
        )
        texts = embedder.embed_texts(
            [x.positive for x in items] + [x.negative for x in items],
            role="document",
            instruction=self.document_instruction(subset, ctx),
        )
        n = len(items)
        ties = self.metadata.tie_rule(subset)
        credit = beats(rowdot(pictures, texts[:n]), rowdot(pictures, texts[n:]), ties)
        return {
            "scores": {"accuracy": float(credit.mean())},
            "counts": {**counts, "scored": n},
            "per_query": {
                "metric": "correct",
                "ids": [x.id for x in items],
                "values": credit.tolist(),
            },
        }
