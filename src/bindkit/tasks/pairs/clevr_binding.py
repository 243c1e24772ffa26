"""CLEVR-binding (Koishigarina et al., ICLR 2026, on CLEVR scenes of Johnson et al., 2017):
rendered scenes of two coloured solids; the image must score its caption ("red cube and blue
sphere") above the caption with the colours exchanged ("blue cube and red sphere").

Protocol as the publisher's ``alignment/clevr_alignment.py`` scores pretrained CLIP ("before
alignment"; ``get_accuracy`` in ``alignment/clevr_alignment_utils.py``): image→text, one
positive and one negative caption (:mod:`bindkit.tasks.pairs._koishigarina`), a tie counts
correct (``>=``), and a scene whose two objects share a colour is left out (its negative is its
positive). Subsets are the publisher's seeded train/val/test split of the scenes; ``test`` is
scored unless ``--subsets`` says. bindkit compares unit vectors (cosine, as the seed ranks); the
publisher's script compares raw dot products with captions it did not normalise.

Files as published (Google Drive, ``CLEVRLoader`` in ``data_loading/clevr.py``): a folder with
``output_2obj.csv`` (no header; ``filename,object,colour,object,colour`` per line) and the images
in ``images_2obj/``. The 3- to 10-object sets the publisher also renders are used only for
linear probing there, with no image–text protocol, so bindkit reads the 2-object set alone.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from bindkit._io import sha256_file
from bindkit.errors import DataFormatError
from bindkit.tasks import _images
from bindkit.tasks._files import need_file, read_text
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.pairs._binding import BindingItem, BindingTask
from bindkit.tasks.pairs._koishigarina import (
    SPLITS,
    Binding,
    attributes_swapped,
    canonical,
    caption,
    clevr_split,
)

LABELS = "output_2obj.csv"
IMAGES = "images_2obj"
COLOURS = ("blue", "brown", "cyan", "gray", "green", "purple", "red", "yellow")
SHAPES = ("cube", "cylinder", "sphere")
PUBLISHED = "the publisher's CLEVR 2-object set (kdariina/CLIP-not-BoW-unimodally README)"


def caption_list(
    colours: tuple[str, ...] = COLOURS, shapes: tuple[str, ...] = SHAPES
) -> frozenset[Binding]:
    """The bindings the publisher's caption list holds (``get_pair_labels``): two different
    shapes, each scene once, in the naming order met first when colours and shapes are walked in
    sorted order (the publisher walks Python sets, whose order changes from run to run; sorted is
    the order its ``data_loading/clevr.py`` indexes them in)."""
    listed: list[Binding] = []
    held: set[Binding] = set()
    for a1 in colours:
        for o1 in shapes:
            for a2 in colours:
                for o2 in shapes:
                    if o1 == o2 or (a2, o2, a1, o1) in held:
                        continue
                    listed.append((a1, o1, a2, o2))
                    held.add((a1, o1, a2, o2))
    return frozenset(listed)


@dataclass(frozen=True)
class ClevrData:
    files: list[str]  # image file names, relative to the image folder
    labels: list[Binding]
    splits: dict[str, list[int]]
    image_root: Path


def read_labels(path: Path) -> tuple[list[str], list[Binding]]:
    """``output_2obj.csv``: per line a file name and (shape, colour) twice, read as (colour,
    shape, colour, shape) as the publisher's ``read_data`` swaps them."""
    files: list[str] = []
    labels: list[Binding] = []
    for lineno, row in enumerate(csv.reader(read_text(path).splitlines()), start=1):
        if not row:
            continue
        where = f"{path}:{lineno}"
        if len(row) != 5:
            raise DataFormatError(
                f"{where}: expected filename and two (shape, colour) pairs, found {len(row)} "
                "fields; pass the 2-object set's labels file as published"
            )
        name, o1, a1, o2, a2 = (v.strip() for v in row)
        for value, vocab in ((o1, SHAPES), (o2, SHAPES), (a1, COLOURS), (a2, COLOURS)):
            if value not in vocab:
                raise DataFormatError(f"{where}: {value!r} is not one of {', '.join(vocab)}")
        if o1 == o2:
            raise DataFormatError(f"{where}: both objects are {o1}s; the protocol needs two shapes")
        files.append(name)
        labels.append((a1, o1, a2, o2))
    if not labels:
        raise DataFormatError(f"{path}: no scenes; pass the 2-object set's {LABELS}")
    return files, labels


class ClevrBinding(BindingTask):
    metadata = TaskMetadata(
        name="clevr_binding",
        description="CLEVR-binding: two coloured solids; the caption above its colour-swapped "
        "negative (image→text)",
        main_score="accuracy",
        reference="Koishigarina et al., ICLR 2026; github.com/kdariina/CLIP-not-BoW-unimodally "
        "alignment/clevr_alignment_utils.py; CLEVR: Johnson et al., CVPR 2017",
        subsets=SPLITS,
        modalities=("text", "image"),
        pairings=("it",),
        ties="correct",
        license="not stated by the publisher (CLEVR itself: CC BY 4.0)",
        published="https://github.com/kdariina/CLIP-not-BoW-unimodally (Google Drive, 2obj)",
        data_dir="clevr_binding",
        data_help=f"the folder holding {LABELS} and {IMAGES}/",
        fetchable=True,
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        if not data.is_dir():
            raise DataFormatError(f"{data}: not a folder; pass {self.metadata.data_help}")
        labels_file = need_file(data / LABELS, self.metadata.data_help)
        files, labels = read_labels(labels_file)
        root = image_root if image_root is not None else data / IMAGES
        payload = ClevrData(files, labels, clevr_split(labels), root)
        return Dataset(
            data.name, sha256_file(labels_file), str(data), payload, SPLITS, has_images=True
        )

    def binding_items(
        self, dataset: Dataset, subset: str, ctx: EvalContext
    ) -> tuple[list[BindingItem], dict[str, int]]:
        data: ClevrData = dataset.payload
        known = caption_list()
        items = []
        for i in data.splits[subset]:
            positive = canonical(data.labels[i], known)
            negative = canonical(attributes_swapped(data.labels[i]), known)
            assert positive is not None and negative is not None  # read_labels checked them
            items.append((data.files[i], caption(positive), caption(negative)))
        counts = {"items": len(items)}
        items = [x for x in items if x[1] != x[2]]  # one colour twice: no negative
        counts["same_colour"] = counts["items"] - len(items)
        names = [name for name, _, _ in items]
        mask = _images.present(names, data.image_root, f"clevr_binding {subset}", PUBLISHED, ctx)
        counts["missing_images"] = int((~mask).sum())
        kept = [x for x, ok in zip(items, mask, strict=True) if ok]
        refs = _images.refs([name for name, _, _ in kept], data.image_root)
        return [
            BindingItem(name, ref, p, n) for (name, p, n), ref in zip(kept, refs, strict=True)
        ], counts
