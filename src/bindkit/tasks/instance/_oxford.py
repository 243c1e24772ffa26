"""The Oxford Buildings convention, shared by Oxford5K, Paris6K (:mod:`bindkit.tasks.instance.
oxford_paris`, whose docstring gives the reading and scoring rules) and Sculptures 6k: per query
``<name>_query.txt`` (one line ``<image> x1 y1 x2 y2``) and ``<name>_good.txt``,
``<name>_ok.txt``, ``<name>_junk.txt``, plus an image folder matched by file stem; the reader,
the collection listing and the task base :class:`OxfordConvention`.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.embed.images import ImageRef
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.instance import oxford_map, rankings
from bindkit.tasks import _images
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.instance._base import InstanceTask, crop, nothing_scored, top
from bindkit.tasks.instance._boxes import check_box, check_inside

LISTS = ("good", "ok", "junk")


@dataclass(frozen=True)
class GtQuery:
    """One query of an Oxford-convention ground-truth folder."""

    name: str  # e.g. all_souls_1
    image: str  # the query image's stem, prefix removed (all_souls_000013)
    box: tuple[float, float, float, float]  # x1, y1, x2, y2 in the stored pixels
    good: tuple[str, ...]
    ok: tuple[str, ...]
    junk: tuple[str, ...]


def _lines(path: Path, published: str) -> list[str]:
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; the ground truth is published at {published}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise DataFormatError(f"{path}: not UTF-8 text; download the ground truth again") from None
    return [line.strip() for line in text.splitlines() if line.strip()]


def gt_folder(data: Path, published: str) -> Path:
    """The folder of ``*_query.txt`` files: ``data`` itself or its one subfolder holding them."""
    if any(data.glob("*_query.txt")):
        return data
    found = sorted(p for p in data.iterdir() if p.is_dir() and any(p.glob("*_query.txt")))
    if len(found) != 1:
        what = "no" if not found else f"{len(found)} folders with"
        raise DataFormatError(
            f"{data}: {what} *_query.txt ground-truth files; pass --data with the one ground-truth "
            f"folder published at {published}"
        )
    return found[0]


def read_gt(folder: Path, published: str, prefix: str = "") -> list[GtQuery]:
    """Every query of an Oxford-convention ground-truth folder, by query name.

    ``prefix`` is stripped from the image name of each query line (Oxford's ``oxc1_``)."""
    queries = []
    for file in sorted(folder.glob("*_query.txt")):
        name = file.name[: -len("_query.txt")]
        lines = _lines(file, published)
        fields = lines[0].split() if len(lines) == 1 else []
        if len(fields) != 5:
            raise DataFormatError(
                f"{file}: expected one line '<image> x1 y1 x2 y2'; download the ground truth again"
            )
        try:
            numbers = [float(v) for v in fields[1:]]
        except ValueError:
            raise DataFormatError(f"{file}: the box {fields[1:]} is not four numbers") from None
        box = check_box(numbers, f"{file}: query {name}")
        image = fields[0][len(prefix) :] if prefix and fields[0].startswith(prefix) else fields[0]
        lists = {k: tuple(_lines(folder / f"{name}_{k}.txt", published)) for k in LISTS}
        queries.append(GtQuery(name, image, box, **lists))
    if not queries:
        raise DataFormatError(f"{folder}: no *_query.txt files; it is published at {published}")
    if not any(q.good or q.ok for q in queries):
        raise DataFormatError(
            f"{folder}: no query has a good or ok image (every *_good.txt and *_ok.txt is empty), "
            f"so there is no AP to compute; download the ground truth again ({published})"
        )
    return queries


def _where(folder: Path, q: GtQuery) -> str:
    return f"{folder / f'{q.name}_query.txt'}: query {q.name}"


def check_query_boxes(queries: list[GtQuery], folder: Path, root: Path) -> None:
    """Refuse, before any model loads, a query box lying wholly outside its image (for the
    query images present under ``root``; missing ones are named when the task runs)."""
    if not root.is_dir():
        return
    stems = collection(root)
    for q in queries:
        if q.image in stems:
            check_inside(q.box, root / stems[q.image], False, _where(folder, q))


def collection(root: Path) -> dict[str, str]:
    """Image stem → path relative to ``root`` for every ``*.jpg`` below it, in path order."""
    found: dict[str, str] = {}
    for path in sorted(root.rglob("*.jpg")):
        rel = path.relative_to(root).as_posix()
        if path.stem in found:
            raise DataFormatError(
                f"{root}: {found[path.stem]} and {rel} share the name {path.stem}; the ground "
                "truth names images by stem, so keep one"
            )
        found[path.stem] = rel
    return found


def listing_sha256(root: Path) -> str:
    """A digest of the collection's file names and sizes: the database is whatever the folder
    holds, so a result is recomputed when that changes."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.jpg")) if root.is_dir() else []:
        digest.update(f"{path.relative_to(root).as_posix()}\t{path.stat().st_size}\n".encode())
    return digest.hexdigest()


def readable(root: Path, names: list[str]) -> np.ndarray:
    """A mask of the files PIL can identify as images (header only)."""
    from PIL import Image, UnidentifiedImageError

    mask = np.ones(len(names), bool)
    for i, name in enumerate(names):
        try:
            with Image.open(root / name):
                pass
        except (UnidentifiedImageError, OSError):
            mask[i] = False
    return mask


class OxfordConvention(InstanceTask):
    """A benchmark published as Oxford-style ground-truth files plus an image folder."""

    metadata = TaskMetadata(name="_oxford_convention", description="", main_score="map")
    prefix = ""  # stripped from query-file image names
    images_dir = "images"  # the release's image folder name, beside the ground truth
    missing_fix: str | None = None  # how to get images the ground truth names (default: where)

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        published = self.metadata.published
        folder = gt_folder(data, published)
        queries = read_gt(folder, published, self.prefix)
        digest = hashlib.sha256()
        for q in queries:
            digest.update(repr(q).encode())
        if image_root is not None:
            root = image_root
        else:
            near = [p / self.images_dir for p in (data, folder.parent)]
            root = next((p for p in near if p.is_dir()), near[0])
        check_query_boxes(queries, folder, root)
        name = self.metadata.name
        return Dataset(
            name,
            digest.hexdigest(),
            str(folder),
            (queries, root),
            has_images=True,
            images_sha256=functools.cache(lambda: listing_sha256(root)),  # once per load
        )

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        queries: list[GtQuery] = dataset.payload[0]
        root: Path = dataset.payload[1]
        where = self.metadata.name
        published = self.metadata.published
        if not root.is_dir():
            raise DataFormatError(
                f"{where}: image folder {root} not found; pass --image-root with the images "
                f"published at {published}"
            )
        stems = collection(root)
        named = sorted({s for q in queries for s in (q.image, *q.good, *q.ok, *q.junk)})
        if any(s not in stems for s in named):
            paths = [stems.get(s, f"{s}.jpg") for s in named]
            _images.present(paths, root, where, published, ctx, self.missing_fix)
            nothing_scored(where, ctx)
            return None
        names = list(stems.values())
        ok = readable(root, names)
        if not ok.all():
            bad = [n for n, good in zip(names, ok, strict=True) if not good]
            ctx.note(
                f"{where}: {len(bad)} files are not readable images and are left out "
                f"(first: {', '.join(bad[:3])})"
            )
            names = [n for n, good in zip(names, ok, strict=True) if good]
        index = {Path(n).stem: i for i, n in enumerate(names)}
        if any(q.image not in index for q in queries):
            lost = next(q for q in queries if q.image not in index)
            raise DataFormatError(f"{where}: query {lost.name}'s image {lost.image} is unreadable")
        crops = [
            crop(root / names[index[q.image]], q.box, _where(Path(dataset.source), q))
            for q in queries
        ]
        empty = [q.name for q in queries if not (q.good or q.ok)]
        if empty:
            ctx.note(
                f"warning: {where}: {len(empty)} of {len(queries)} queries have no good or ok "
                f"image and are left out of the mean (first: {empty[0]})"
            )
        qv = embedder.embed_images(
            crops, role="query", instruction=self.query_instruction(subset, ctx)
        )
        xv = embedder.embed_images(
            [ImageRef(root / n) for n in names],
            role="document",
            instruction=self.metadata.document_instruction,
        )
        positives = [[index[s] for s in {*q.good, *q.ok} if s in index] for q in queries]
        junk = [[index[s] for s in set(q.junk) if s in index] for q in queries]
        n_positives = [len({*q.good, *q.ok}) for q in queries]
        similarity = qv @ xv.T
        mean, aps = oxford_map(similarity, positives, junk, n_positives)
        per_query = {
            "metric": "ap",
            "ids": [names[index[q.image]] for q in queries],
            "values": [float(v) for v in aps],
            "top": top(rankings(similarity), names),
        }
        return {
            "scores": {"map": mean},
            "counts": {"queries": len(queries), "database": len(names)},
            "per_query": per_query,
        }


def convention_metadata(
    name: str, title: str, published: str, reference: str, images: str, fetchable: bool = True
) -> TaskMetadata:
    """The metadata of a benchmark published in the Oxford Buildings convention."""
    return TaskMetadata(
        name=name,
        description=f"{title}, original protocol: instance retrieval mAP, query crops",
        main_score="map",
        reference=reference,
        modalities=("image",),
        pairings=("ii",),
        license="see the publisher (Flickr images)",
        published=published,
        data_dir=name,
        data_help=f"the ground-truth folder (*_query.txt, *_good/ok/junk.txt), images in {images}/",
        fetchable=fetchable,
    )
