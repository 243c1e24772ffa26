"""BiVLC (Miranda et al., NeurIPS 2024 D&B; imirandam/BiVLC): SugarCrepe items extended with a
generated negative image, so retrieval runs both ways. I2T = Winoground's text score, T2I = its
image score, plus the group score; strict comparisons (see :mod:`bindkit.tasks.pairs._base`).

Files as published: the Hub's parquet export (``data/test-*.parquet``) with columns ``image``,
``caption``, ``negative_image``, ``negative_caption``, ``type`` (the per-type breakdown). Each
split is a subset; the test split alone is scored unless ``--subsets`` says.
"""

from __future__ import annotations

from bindkit.tasks.base import TaskMetadata
from bindkit.tasks.pairs._parquet import ParquetPairsTask

COLUMNS = {
    "caption_0": "caption",
    "caption_1": "negative_caption",
    "image_0": "image",
    "image_1": "negative_image",
}


class BiVLC(ParquetPairsTask):
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
        subsets=("test",),
        fetchable=True,
    )
    columns = COLUMNS
    tag = "type"
