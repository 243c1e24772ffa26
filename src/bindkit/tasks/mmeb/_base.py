"""What MMEB v1 and MMEB-V2 share: v1's four meta-tasks and their datasets (V2's image tasks
are the same lists), and the per-model gathering of scores their meta-task tables average."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from bindkit.records.tables import label
from bindkit.tasks.base import Task

META_TASKS: dict[str, tuple[str, ...]] = {
    "classification": (
        "ImageNet-1K",
        "N24News",
        "HatefulMemes",
        "VOC2007",
        "SUN397",
        "Place365",
        "ImageNet-A",
        "ImageNet-R",
        "ObjectNet",
        "Country211",
    ),
    "vqa": (
        "OK-VQA",
        "A-OKVQA",
        "DocVQA",
        "InfographicsVQA",
        "ChartQA",
        "Visual7W",
        "ScienceQA",
        "VizWiz",
        "GQA",
        "TextVQA",
    ),
    "retrieval": (
        "VisDial",
        "CIRR",
        "VisualNews_t2i",
        "VisualNews_i2t",
        "MSCOCO_t2i",
        "MSCOCO_i2t",
        "NIGHTS",
        "WebQA",
        "FashionIQ",
        "Wiki-SS-NQ",
        "OVEN",
        "EDIS",
    ),
    "grounding": ("MSCOCO", "RefCOCO", "RefCOCO-Matching", "Visual7W-Pointing"),
}


class MMEBTask(Task):
    """An MMEB benchmark: many datasets, reported as the mean of their main score per meta-task."""

    def scores_by_model(
        self, records: list[dict[str, Any]], subsets: Collection[str] | None = None
    ) -> dict[str, dict[str, float]]:
        """Model label → subset → main score, from the records that have one (of ``subsets``
        when given)."""
        by_model: dict[str, dict[str, float]] = {}
        for r in records:
            value = r["scores"].get(self.metadata.main_score)
            if isinstance(value, int | float) and (subsets is None or r.get("subset") in subsets):
                by_model.setdefault(label(r), {})[str(r.get("subset"))] = float(value)
        return by_model
