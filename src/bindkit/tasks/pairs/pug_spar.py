"""PUG:SPAR (Bordes et al., 2023; facebookresearch/PUG): Unreal Engine scenes of up to two
animals; bindkit scores its attribute-binding setting, two different animals with two textures.

Protocol as the publisher's ``PUG_SPAR/run_eval_vlms_on_spar.py`` scores it ("double animal
setting with attributes", hard negative, over all worlds, captions without the world's name):
rows with two different animals whose first animal has texture Blue (its partner Red) or Grass
(its partner Stone), one subset each; the image must score
``"This is a photo of a {c1} textured with {t1} and a {c2} textured with {t2}"`` above the same
caption with the animals exchanged. The script orders the two captions by a coin flip and takes
the argmax, so a tie is right half the time: bindkit credits a tie 1/2 (``share``), its
expectation. The script's other settings (scenes, single animals, positions, retrieval over all
captions) do not test binding and are not scored.

Files as published, either layout: the tarball's folder (``PUG_SPAR.tar.gz`` from
dl.fbaipublicfiles.com) with ``labels.csv`` (``filename`` relative to the folder, and the columns
below), or the Hub's parquet export (``facebook/PUG_SPAR``, ``data/train-*.parquet``, the image
embedded) with the same columns: ``character_name``, ``character2_name``, ``character_texture``,
``character2_texture`` ("blank" where no animal stands).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import sha256_bytes, sha256_file
from bindkit.errors import DataFormatError
from bindkit.tasks import _images
from bindkit.tasks._files import read_csv_rows, read_parquet_rows
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.pairs._binding import BindingItem, BindingTask

LABELS = "labels.csv"
COLUMNS = ("character_name", "character2_name", "character_texture", "character2_texture")
SUBSETS = {"blue_red": "Blue", "grass_stone": "Grass"}  # subset: the first animal's texture
BLANK = "blank"
PUBLISHED = "PUG:SPAR's images (https://dl.fbaipublicfiles.com/large_objects/pug/PUG_SPAR.tar.gz)"


def captions(row: dict[str, Any]) -> tuple[str, str]:
    """The row's caption and its hard negative (the animals exchanged), as the script writes
    them."""
    c1, c2 = row["character_name"], row["character2_name"]
    t1, t2 = row["character_texture"], row["character2_texture"]
    return (
        f"This is a photo of a {c1} textured with {t1} and a {c2} textured with {t2}",
        f"This is a photo of a {c2} textured with {t1} and a {c1} textured with {t2}",
    )


def attribute_rows(rows: list[dict[str, Any]], texture: str) -> list[int]:
    """The script's rows for one texture: two animals, different ones, the first textured
    ``texture``."""
    return [
        i
        for i, r in enumerate(rows)
        if r["character_name"] != BLANK
        and r["character2_name"] != BLANK
        and r["character_texture"] == texture
        and r["character_name"] != r["character2_name"]
    ]


@dataclass(frozen=True)
class PugSparData:
    rows: list[dict[str, Any]]  # the columns, plus "image": a file name or (parquet file, row)
    subsets: dict[str, list[int]]
    image_root: Path | None  # None: the images are embedded in the parquet rows


def read_pug_spar(data: Path) -> tuple[list[dict[str, Any]], str, Path | None]:
    """Rows, the data's hash and the image folder (None for the parquet export)."""
    if data.is_dir() and (data / LABELS).is_file():
        read = read_csv_rows(data / LABELS, ("filename", *COLUMNS), f"the published {LABELS}")
        named: list[dict[str, Any]] = [{**row, "image": row["filename"]} for row in read]
        return named, sha256_file(data / LABELS), data
    files = [data] if data.is_file() else sorted(data.rglob("*.parquet"))
    if not files:
        raise DataFormatError(
            f"{data}: neither {LABELS} nor .parquet files; pass the unpacked PUG_SPAR.tar.gz "
            "folder or the Hub's data/ folder"
        )
    rows: list[dict[str, Any]] = []
    for file in files:  # the images stay on disk until a subset is scored (17 GB in all)
        for number, row in enumerate(read_parquet_rows(file, COLUMNS)):
            rows.append({**row, "image": (file, number)})
    digest = sha256_bytes("".join(sha256_file(f) for f in files).encode())
    return rows, digest, None


def parquet_images(cells: list[tuple[Path, int]], where: str) -> list[Any]:
    """The images of the given (parquet file, row) cells, in that order, one file read at a
    time."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    out: dict[tuple[Path, int], Any] = {}
    for file in dict.fromkeys(f for f, _ in cells):
        numbers = [n for f, n in cells if f == file]
        column = pq.read_table(file, columns=["image"]).column("image").take(numbers).to_pylist()
        for number, cell in zip(numbers, column, strict=True):
            out[(file, number)] = _images.decode_image(cell, f"{where}: {file} row {number}")
    return [out[c] for c in cells]


class PugSpar(BindingTask):
    metadata = TaskMetadata(
        name="pug_spar",
        description="PUG:SPAR: two textured animals; the caption above the one with the animals "
        "exchanged (image→text, hard negative)",
        main_score="accuracy",
        reference="Bordes et al., 2023 (arXiv 2308.03977); github.com/facebookresearch/PUG "
        "PUG_SPAR/run_eval_vlms_on_spar.py",
        subsets=tuple(SUBSETS),
        modalities=("text", "image"),
        pairings=("it",),
        ties="share",
        license="CC BY-NC 4.0, not to be used to train generative AI models (the PUG LICENSE)",
        published="https://huggingface.co/datasets/facebook/PUG_SPAR (data/*.parquet) or "
        "https://dl.fbaipublicfiles.com/large_objects/pug/PUG_SPAR.tar.gz",
        data_dir="pug_spar",
        data_help=f"the folder holding {LABELS} and the images, or the Hub's parquet files",
        fetchable=True,
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        rows, digest, folder = read_pug_spar(data)
        for i, row in enumerate(rows):
            if any(not isinstance(row[c], str) for c in COLUMNS):
                raise DataFormatError(f"{data}: row {i}: {', '.join(COLUMNS)} must be strings")
        root = image_root if image_root is not None else folder
        subsets = {name: attribute_rows(rows, t) for name, t in SUBSETS.items()}
        payload = PugSparData(rows, subsets, root if folder is not None else None)
        return Dataset(data.name, digest, str(data), payload, tuple(SUBSETS), has_images=True)

    def default_subsets(self, dataset: Dataset) -> tuple[str, ...]:
        """Both texture pairs: the script reports each."""
        return dataset.subsets

    def binding_items(
        self, dataset: Dataset, subset: str, ctx: EvalContext
    ) -> tuple[list[BindingItem], dict[str, int]]:
        data: PugSparData = dataset.payload
        chosen = data.subsets[subset]
        counts = {"items": len(chosen)}
        where = f"pug_spar {subset}"
        if data.image_root is not None:
            names = [data.rows[i]["image"] for i in chosen]
            mask = _images.present(names, data.image_root, where, PUBLISHED, ctx)
            counts["missing_images"] = int((~mask).sum())
            chosen = [i for i, ok in zip(chosen, mask, strict=True) if ok]
            images: list[Any] = _images.refs(
                [data.rows[i]["image"] for i in chosen], data.image_root
            )
        else:
            images = parquet_images([data.rows[i]["image"] for i in chosen], where)
        return [
            BindingItem(f"row{i}", image, *captions(data.rows[i]))
            for i, image in zip(chosen, images, strict=True)
        ], counts
