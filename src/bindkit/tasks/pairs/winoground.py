"""Winoground (Thrush et al., CVPR 2022; facebook/winoground): 400 items of two captions with the
same words in a different order and their two images. Text, image and group scores, strict
comparisons (see :mod:`bindkit.tasks.pairs._base`).

Files as published on the Hugging Face Hub (data/): ``examples.jsonl`` with ``id``,
``caption_0``, ``caption_1``, ``image_0``, ``image_1`` (names without extension), ``tag``, ... and
``images/<name>.png`` (unzipped ``images.zip``). Items with a missing image are reported and left
out.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindkit._io import sha256_file
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.tasks import _images
from bindkit.tasks._files import jsonl_rows, need_file
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.pairs._base import PairItem, PairsTask

FIELDS = ("caption_0", "caption_1", "image_0", "image_1")


class Winoground(PairsTask):
    metadata = TaskMetadata(
        name="winoground",
        description="Winoground: two captions × two images; text, image and group scores",
        main_score="group_score",
        scores=("text_score", "image_score"),
        reference="Thrush et al., CVPR 2022; huggingface.co/datasets/facebook/winoground",
        modalities=("text", "image"),
        pairings=("it",),
        ties="wrong",
        license="see the dataset card (Getty Images licence terms)",
        published="https://huggingface.co/datasets/facebook/winoground (data/)",
        data_dir="winoground",
        data_help="the folder of examples.jsonl and images/",
        fetchable=True,
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        file = data / "examples.jsonl" if data.is_dir() else data
        need_file(file, "Winoground's examples.jsonl")
        items = []
        for lineno, row in jsonl_rows(file):
            for key in FIELDS:
                if not isinstance(row, dict) or not isinstance(row.get(key), str):
                    raise DataFormatError(f"{file}:{lineno}: field {key!r} must be a string")
            items.append(
                PairItem(
                    str(row.get("id", lineno)),
                    row["caption_0"],
                    row["caption_1"],
                    f"{row['image_0']}.png",
                    f"{row['image_1']}.png",
                    str(row.get("collapsed_tag") or row.get("tag") or ""),
                )
            )
        if not items:
            raise DataFormatError(f"{file}: no items")
        root = _images.image_root(file.parent, image_root)
        return Dataset("winoground", sha256_file(file), str(file), (items, root), has_images=True)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        items, root = dataset.payload
        names = [x.image_0 for x in items] + [x.image_1 for x in items]
        mask = _images.present(names, root, "winoground", self.metadata.published, ctx)
        n = len(items)
        keep = [x for k, x in enumerate(items) if mask[k] and mask[n + k]]
        if not keep:
            return None
        images = (
            _images.refs([x.image_0 for x in keep], root),
            _images.refs([x.image_1 for x in keep], root),
        )
        result = self.score_items(embedder, keep, images, subset, ctx)
        result["counts"] |= {"missing_images": int((~mask).sum()), "items_total": n}
        return result
