"""Tasks whose published files are Hugging Face parquet exports with the images embedded
(ColorSwap, BiVLC): the shared loader, so each benchmark module only names its columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bindkit._io import sha256_file
from bindkit.errors import DataFormatError
from bindkit.tasks._pairs import PairItem, decode_image, read_parquet_rows
from bindkit.tasks.base import Dataset


def parquet_files(data: Path, what: str) -> list[Path]:
    """A parquet file, or every ``*.parquet`` under a folder (the Hub's ``data/`` layout)."""
    files = [data] if data.is_file() else sorted(data.rglob("*.parquet"))
    if not files:
        raise DataFormatError(f"{data}: no .parquet files; pass {what}")
    return files


def load_pairs(
    data: Path, name: str, what: str, columns: dict[str, str], tag: str | None = None
) -> Dataset:
    """``columns`` maps caption_0, caption_1, image_0, image_1 (and id) to the file's names."""
    files = parquet_files(data, what)
    wanted = list(columns.values()) + ([tag] if tag else [])
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
    digest = "".join(sha256_file(f) for f in files)
    from bindkit._io import sha256_bytes

    return Dataset(name, sha256_bytes(digest.encode()), str(data), items, has_images=True)


def images_of(items: list[PairItem], side: int, where: str) -> list[Any]:
    return [
        decode_image(x.image_0 if side == 0 else x.image_1, f"{where} item {x.id}") for x in items
    ]
