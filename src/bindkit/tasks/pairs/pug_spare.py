"""PUG:SPARE (Koishigarina et al., ICLR 2026): PUG:SPAR's animal scenes re-rendered in Unreal
Engine without its positional shortcut, two animals with eight textures; the image must score
its caption ("Red Cat and Blue Dog") above the caption with the textures exchanged.

Protocol as the publisher's ``alignment/pug_alignment.py`` scores pretrained CLIP ("before
alignment"; ``get_accuracy`` in ``alignment/pug_alignment_utils.py``): image→text, one positive
and one negative caption (:mod:`bindkit.tasks.pairs._koishigarina`), strict comparison (a tie is
wrong). Subsets are the publisher's seeded train/val/test split; ``test`` is scored unless
``--subsets`` says. Its split lists a row once per drawn binding whose scene it shows, so a row
can be scored twice, as there (counted in ``repeated``).

Files as published (Google Drive, ``PUGSPARELoader`` in ``data_loading/pug.py``): a folder with
``PUG_SPARE.csv`` (columns ``filename``, ``world_name``, ``character_name``, ``character2_name``,
``character_texture``, ``character2_texture``) and one image folder per world
(``Desert/``, ``Island/``, ``MountainRange/``, ``Spaceship/``), read as ``<world>/<filename>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bindkit._io import sha256_file
from bindkit.errors import DataFormatError
from bindkit.tasks import _images
from bindkit.tasks._files import read_csv_rows
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.pairs._binding import BindingItem, BindingTask
from bindkit.tasks.pairs._koishigarina import (
    SPLITS,
    Binding,
    attributes_swapped,
    canonical,
    caption,
    pug_caption_list,
    pug_split,
    repeats,
)

LABELS = "PUG_SPARE.csv"
COLUMNS = (
    "filename",
    "world_name",
    "character_name",
    "character2_name",
    "character_texture",
    "character2_texture",
)
PUBLISHED = "PUG:SPARE's world folders (kdariina/CLIP-not-BoW-unimodally README, Google Drive)"


@dataclass(frozen=True)
class PugSpareData:
    files: list[str]  # <world>/<filename>
    labels: list[Binding]
    splits: dict[str, list[int]]
    known: frozenset[Binding]
    image_root: Path


def read_pug_spare(path: Path) -> tuple[list[str], list[Binding], list[Binding]]:
    """Image paths, bindings and the publisher's caption list (its attribute and object lists:
    ``character_texture`` and ``character_name`` in order of first appearance)."""
    rows = read_csv_rows(path, COLUMNS, f"the published {LABELS}")
    if not rows:
        raise DataFormatError(f"{path}: no rows; pass the published {LABELS}")
    labels: list[Binding] = [
        (r["character_texture"], r["character_name"], r["character2_texture"], r["character2_name"])
        for r in rows
    ]
    textures = list(dict.fromkeys(r["character_texture"] for r in rows))
    animals = list(dict.fromkeys(r["character_name"] for r in rows))
    listed = pug_caption_list(textures, animals)
    known = frozenset(listed)
    for lineno, label in enumerate(labels, start=2):
        if canonical(label, known) is None or canonical(attributes_swapped(label), known) is None:
            raise DataFormatError(
                f"{path}:{lineno}: {caption(label)!r} has no caption in the publisher's list "
                "(two different animals, two different textures, each seen as a first "
                "character); pass the file as published"
            )
    files = [f"{r['world_name']}/{r['filename']}" for r in rows]
    return files, labels, listed


class PugSpare(BindingTask):
    metadata = TaskMetadata(
        name="pug_spare",
        description="PUG:SPARE: two textured animals; the caption above its texture-swapped "
        "negative (image→text)",
        main_score="accuracy",
        reference="Koishigarina et al., ICLR 2026; github.com/kdariina/CLIP-not-BoW-unimodally "
        "alignment/pug_alignment_utils.py",
        subsets=SPLITS,
        modalities=("text", "image"),
        pairings=("it",),
        ties="wrong",
        license="not stated; Unreal Engine NoAI assets: not for training or developing "
        "generative AI (the publisher's README)",
        published="https://github.com/kdariina/CLIP-not-BoW-unimodally (Google Drive)",
        data_dir="pug_spare",
        data_help=f"the folder holding {LABELS} and the world folders",
        fetchable=True,
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        if not data.is_dir():
            raise DataFormatError(f"{data}: not a folder; pass {self.metadata.data_help}")
        files, labels, listed = read_pug_spare(data / LABELS)
        root = image_root if image_root is not None else data
        payload = PugSpareData(files, labels, pug_split(labels, listed), frozenset(listed), root)
        digest = sha256_file(data / LABELS)
        return Dataset(data.name, digest, str(data), payload, SPLITS, has_images=True)

    def binding_items(
        self, dataset: Dataset, subset: str, ctx: EvalContext
    ) -> tuple[list[BindingItem], dict[str, int]]:
        data: PugSpareData = dataset.payload
        rows = data.splits[subset]
        counts = {"items": len(rows), "repeated": repeats(rows)}
        ids = occurrence_ids(rows)
        names = [data.files[i] for i in rows]
        mask = _images.present(names, data.image_root, f"pug_spare {subset}", PUBLISHED, ctx)
        counts["missing_images"] = int((~mask).sum())
        kept = [(i, key) for i, key, ok in zip(rows, ids, mask, strict=True) if ok]
        refs = _images.refs([data.files[i] for i, _ in kept], data.image_root)
        items = []
        for (i, key), ref in zip(kept, refs, strict=True):
            positive, negative = bindings(data, i)
            items.append(BindingItem(key, ref, caption(positive), caption(negative)))
        return items, counts


def bindings(data: PugSpareData, row: int) -> tuple[Binding, Binding]:
    """The row's positive and negative binding as the caption list holds them (read_pug_spare
    checked that it holds both)."""
    positive = canonical(data.labels[row], data.known)
    negative = canonical(attributes_swapped(data.labels[row]), data.known)
    assert positive is not None and negative is not None
    return positive, negative


def occurrence_ids(rows: list[int]) -> list[str]:
    """Per scored entry: ``row<i>`` (the labels file's data row), ``row<i>#2`` for its second
    listing, so ids stay unique where the split lists a row twice."""
    seen: dict[int, int] = {}
    out = []
    for i in rows:
        seen[i] = seen.get(i, 0) + 1
        out.append(f"row{i}" if seen[i] == 1 else f"row{i}#{seen[i]}")
    return out
