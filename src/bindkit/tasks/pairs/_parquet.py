"""Tasks whose published files are Hugging Face parquet exports with the images embedded
(ColorSwap, BiVLC): the shared loader and task, so each benchmark module only names its columns.

A folder may hold several splits (ColorSwap publishes train and test): each split is a subset,
named by its file (``data/test-00000-of-00001.parquet``) or folder (``default/test/0000.parquet``,
the Hub's ``refs/convert/parquet`` layout), and the test split alone is scored by default, as
the papers report it; ``--subsets train`` scores another.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from bindkit._io import sha256_file
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.tasks._files import read_parquet_rows
from bindkit.tasks._images import decode_image
from bindkit.tasks.base import Dataset, EvalContext
from bindkit.tasks.pairs._base import PairItem, PairsTask

SPLIT_NAMES = ("train", "validation", "valid", "val", "test")
REPORTED_SPLIT = "test"


def split_of(file: Path, root: Path) -> str:
    """The split a parquet file belongs to: a folder named like a split, else the file name
    before its first ``-`` or ``.`` (``test-00000-of-00001.parquet`` → ``test``)."""
    relative = file.relative_to(root) if file != root else Path(file.name)
    for part in relative.parts[:-1]:
        if part in SPLIT_NAMES:
            return part
    return relative.name.split(".")[0].split("-")[0] or relative.name


def parquet_splits(data: Path, what: str) -> dict[str, list[Path]]:
    """A parquet file, or every ``*.parquet`` under a folder, grouped by split."""
    files = [data] if data.is_file() else sorted(data.rglob("*.parquet"))
    if not files:
        raise DataFormatError(f"{data}: no .parquet files; pass {what}")
    splits: dict[str, list[Path]] = {}
    for file in files:
        splits.setdefault(split_of(file, data), []).append(file)
    return dict(sorted(splits.items(), key=lambda kv: (kv[0] != REPORTED_SPLIT, kv[0])))


def load_pairs(
    data: Path, name: str, what: str, columns: dict[str, str], tag: str | None = None
) -> Dataset:
    """``columns`` maps caption_0, caption_1, image_0, image_1 (and id) to the file's names."""
    splits = parquet_splits(data, what)
    wanted = list(columns.values()) + ([tag] if tag else [])
    payload: dict[str, list[PairItem]] = {}
    for split, files in splits.items():
        items: list[PairItem] = []
        for file in files:
            for number, row in enumerate(read_parquet_rows(file, wanted)):
                where = f"{file}: row {number}"
                for key in ("caption_0", "caption_1"):
                    if not isinstance(row[columns[key]], str):
                        raise DataFormatError(f"{where}: {columns[key]!r} must be a string")
                items.append(
                    PairItem(
                        str(row.get(columns.get("id", ""), f"{file.name}:{number}")),
                        row[columns["caption_0"]],
                        row[columns["caption_1"]],
                        row[columns["image_0"]],
                        row[columns["image_1"]],
                        str(row[tag]) if tag and row.get(tag) is not None else "",
                    )
                )
        payload[split] = items
    digest = "".join(sha256_file(f) for files in splits.values() for f in files)
    from bindkit._io import sha256_bytes

    return Dataset(
        name, sha256_bytes(digest.encode()), str(data), payload, tuple(splits), has_images=True
    )


def images_of(items: list[PairItem], side: int, where: str) -> list[Any]:
    return [
        decode_image(x.image_0 if side == 0 else x.image_1, f"{where} item {x.id}") for x in items
    ]


class ParquetPairsTask(PairsTask):
    """Load the Hub export's splits, score the test split by default (Winoground scores; text
    (I2T), image (T2I) and group scores per type where the data has types)."""

    columns: ClassVar[dict[str, str]]
    tag: ClassVar[str | None] = None  # the column of each item's type
    tag_label = "type"

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        meta = self.metadata
        return load_pairs(data, meta.name, meta.data_help, self.columns, self.tag)

    def default_subsets(self, dataset: Dataset) -> tuple[str, ...]:
        present = dataset.subsets
        return (REPORTED_SPLIT,) if REPORTED_SPLIT in present else present

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any]:
        items = dataset.payload[subset]
        where = f"{dataset.source} ({subset})"
        images = (images_of(items, 0, where), images_of(items, 1, where))
        return self.score_items(embedder, items, images, subset, ctx)
