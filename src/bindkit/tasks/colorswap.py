"""ColorSwap (Burapacheep et al., 2024; stanfordnlp/colorswap): 2,000 items of two captions that
swap colour words between two objects, with their two images. Winoground's text, image and group
scores, strict comparisons (see :mod:`bindkit.tasks._pairs`).

Files as published: the Hub's parquet export (``data/test-*.parquet``) with columns ``id``,
``image_1``, ``image_2`` (embedded image bytes), ``caption_1``, ``caption_2``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindkit.embed.protocol import Embedder
from bindkit.tasks._pairs import evaluate_pairs
from bindkit.tasks._parquet_pairs import images_of, load_pairs
from bindkit.tasks.base import Dataset, EvalContext, Task, TaskMetadata

COLUMNS = {
    "id": "id",
    "caption_0": "caption_1",
    "caption_1": "caption_2",
    "image_0": "image_1",
    "image_1": "image_2",
}


class ColorSwap(Task):
    metadata = TaskMetadata(
        name="colorswap",
        description="ColorSwap: colour-swapped caption and image pairs; text, image, group scores",
        main_score="group_score",
        scores=("text_score", "image_score"),
        reference="Burapacheep et al., 2024; huggingface.co/datasets/stanfordnlp/colorswap",
        modalities=("text", "image"),
        pairings=("it",),
        ties="wrong",
        license="MIT (see the dataset card)",
        published="https://huggingface.co/datasets/stanfordnlp/colorswap (data/*.parquet)",
        data_dir="colorswap",
        data_help="the parquet file or the folder holding it (pip install 'bindkit[benchmarks]')",
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        return load_pairs(data, "colorswap", self.metadata.data_help, COLUMNS)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any]:
        items = dataset.payload
        images = (images_of(items, 0, dataset.source), images_of(items, 1, dataset.source))
        return evaluate_pairs(embedder, items, images, self.query_instruction(subset, ctx), None)
