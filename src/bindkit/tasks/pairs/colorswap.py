"""ColorSwap (Burapacheep et al., 2024; stanfordnlp/colorswap): 2,000 items of two captions that
swap colour words between two objects, with their two images. Winoground's text, image and group
scores, strict comparisons (see :mod:`bindkit.tasks.pairs._base`).

Files as published: the Hub's parquet export (``data/train-*.parquet``, ``data/test-*.parquet``)
with columns ``id``, ``image_1``, ``image_2`` (embedded image bytes), ``caption_1``,
``caption_2``. Each split is a subset; the test split alone is scored unless ``--subsets`` says.
"""

from __future__ import annotations

from bindkit.tasks.base import TaskMetadata
from bindkit.tasks.pairs._parquet import ParquetPairsTask

COLUMNS = {
    "id": "id",
    "caption_0": "caption_1",
    "caption_1": "caption_2",
    "image_0": "image_1",
    "image_1": "image_2",
}


class ColorSwap(ParquetPairsTask):
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
        subsets=("test",),
        fetchable=True,
    )
    columns = COLUMNS
