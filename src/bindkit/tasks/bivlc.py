"""BiVLC (Miranda et al., NeurIPS 2024 D&B; imirandam/BiVLC): SugarCrepe items extended with a
generated negative image, so retrieval runs both ways. I2T = Winoground's text score, T2I = its
image score, plus the group score; strict comparisons (see :mod:`bindkit.tasks._pairs`).

Files as published: the Hub's parquet export (``data/test-*.parquet``) with columns ``image``,
``caption``, ``negative_image``, ``negative_caption``, ``type`` (the per-type breakdown).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindkit.embed.protocol import Embedder
from bindkit.tasks._pairs import evaluate_pairs
from bindkit.tasks._parquet_pairs import images_of, load_pairs
from bindkit.tasks.base import Dataset, EvalContext, Task, TaskMetadata

COLUMNS = {
    "caption_0": "caption",
    "caption_1": "negative_caption",
    "image_0": "image",
    "image_1": "negative_image",
}


class BiVLC(Task):
    metadata = TaskMetadata(
        name="bivlc",
        description="BiVLC: image→text (text score) and text→image (image score) with hard "
        "negative images; group score",
        main_score="group_score",
        scores=("text_score", "image_score"),
        reference="Miranda et al., NeurIPS 2024 D&B; huggingface.co/datasets/imirandam/BiVLC",
        modalities=("text", "image"),
        pairings=("it",),
        ties="wrong",
        license="MIT (see the dataset card); COCO images CC BY 4.0",
        published="https://huggingface.co/datasets/imirandam/BiVLC (data/*.parquet)",
        data_dir="bivlc",
        data_help="the parquet file or the folder holding it (pip install 'bindkit[benchmarks]')",
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        return load_pairs(data, "bivlc", self.metadata.data_help, COLUMNS, tag="type")

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any]:
        items = dataset.payload
        images = (images_of(items, 0, dataset.source), images_of(items, 1, dataset.source))
        return evaluate_pairs(embedder, items, images, self.query_instruction(subset, ctx), None)
