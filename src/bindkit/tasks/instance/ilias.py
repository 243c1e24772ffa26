"""ILIAS (Kordopatis-Zilos et al., CVPR 2025; github.com/ilias-vrg/ilias): instance-level
retrieval of 1,000 objects. Image queries (``ii``: 1,232 photos on clean backgrounds, whole by
default) and text queries (``ti``: one description per object) search one shared database of
4,715 positives, plus YFCC100M distractors when asked. The score is ILIAS' mAP@k
(:mod:`bindkit.metrics.ilias`, k = 1,000), each query's list found by the blocked exact search of
:mod:`bindkit.mining.index` (numpy, or ``faiss.knn`` with ``--task-option index=faiss``), which
holds at most a query block × a database block of scores at a time.

``ilias_fine`` is seed 000's fine-grained evaluation: for each of the 38 named fine-level
classes of ILIAS' taxonomy (491 objects in 7 top-level categories; leaves named ``other`` are
left out, so Media has none), the class's queries search the positives of the class's objects
only. Subsets are ``fine/<category>/<class>`` (spaces and ``/`` in names become ``-``); the
headline is the mean over classes, and the report adds the mean per top-level category (the
seed's Table 16).

Files as published (``download/download_ilias.sh``): ``<data>/image_ids/image_query_ids.txt``
(first comma-separated column: the query's path), ``text_query_ids.txt``, ``positive_ids.txt``
(path, scale, clutter), ``distractor_ids.txt.gz`` (``<shard>/<key>``, the webdataset ids), the
images under ``<data>/ilias_core/`` (``<object>/query/Qxxx_yy.jpg`` with ``Qxxx_yy_bbox.txt``,
``<object>/query/Txxx.txt``, ``<object>/pos/Pxxx_zz.jpg``), and ``<data>/taxonomy.json`` (the
repository's ``misc/taxonomy.json``; the official evaluation reads it from there). Distractors
(``--task-option distractors=N``: the first N ids of ``distractor_ids.txt.gz``) are read as
``<data>/yfcc100m/<shard>/<key>.jpg``: unpack each shard tar into a folder of its name.

Query crops: the official feature extraction (``feature_extraction/extract.py``) crops a query
only when run with ``--crop_resize`` (default False; neither
``feature_extraction/scripts/run_slurm.sh`` nor the READMEs' examples pass it), so by default
the whole query photo is embedded (EXIF orientation applied by the image loader, as the official
dataset does). ``--task-option crop=true`` reproduces ``_crop_resize``: the photo, EXIF
orientation applied, cut to the union of its boxes (``x y width height`` per line of
``Qxxx_yy_bbox.txt``). The choice is part of each result's options. (Seed 000 says it embeds a
benchmark's ground-truth query crop where one is provided, without naming ILIAS' boxes; to
follow that reading, pass ``crop=true``.) With it, every query's box is read and checked before
any model loads: a union that holds no pixel or lies wholly outside the photo is refused naming
its ``_bbox.txt``; one reaching past the edge stops there (:mod:`bindkit.tasks.instance._boxes`).

Checks on the id files (strict UTF-8, named with the line): an id repeated in a query file is
refused (the published files list each query once; a repeat would count twice in the mean);
a line repeated in ``positive_ids.txt`` is read once, as the official ground truth is a set
per object (``self.gt``), so it is neither embedded nor counted twice.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_file
from bindkit.embed.images import ImageRef, load_image
from bindkit.embed.protocol import Embedder
from bindkit.errors import BindkitError, DataFormatError
from bindkit.metrics.ilias import DEFAULT_K, mean_ap_at_k
from bindkit.mining.index import BACKENDS, IndexConfig, search
from bindkit.records.tables import PAIRING_NAMES, Table, label, pct
from bindkit.tasks import _images
from bindkit.tasks._files import read_text
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.instance._base import InstanceTask, nothing_scored, top
from bindkit.tasks.instance._boxes import check_inside, clip_box

PUBLISHED = (
    "https://vrg.fel.cvut.cz/ilias_data/ (ilias_core.tar and image_ids/, as "
    "github.com/ilias-vrg/ilias download/download_ilias.sh fetches them)"
)
TAXONOMY_SOURCE = "misc/taxonomy.json of github.com/ilias-vrg/ilias"
ID_FILES = ("image_query_ids.txt", "text_query_ids.txt", "positive_ids.txt")
DISTRACTORS = "distractor_ids.txt.gz"
BOX_FIX = "fix that file or unpack ilias_core again"
QUERY_BLOCK = 64  # query crops decoded at a time: full-size photos, so never all at once


@dataclass
class IliasData:
    image_queries: list[str]  # paths relative to ilias_core, sorted as the official code does
    text_queries: list[str]
    positives: list[str]
    core: Path  # the ilias_core folder (or --image-root)
    ids_dir: Path
    distractor_root: Path
    taxonomy: dict[str, tuple[str, str, str]] | None  # object → (category, mid, fine)
    distractors: list[str] = field(default_factory=list)  # the first N of distractor_ids.txt.gz
    texts: dict[str, str] = field(default_factory=dict)  # text query id → its file's text


def instance(image_id: str) -> str:
    """The object an ILIAS id belongs to: its first path component."""
    return image_id.split("/")[0]


def read_ids(path: Path, unique: bool = True) -> list[str]:
    """The ids of one ``image_ids`` file, sorted (the first comma-separated column).

    ``unique`` (the query files): an id listed twice is refused naming both lines, since the
    published files list each query once and a repeated query would count twice in the mean.
    Otherwise (``positive_ids.txt``) a repeated id is kept once, as the official ground truth
    is a set per object."""
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; ILIAS' image_ids are published at {PUBLISHED}")
    seen: dict[str, int] = {}
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        image_id = line.split(",")[0].strip()
        if image_id and image_id in seen and unique:
            raise DataFormatError(
                f"{path}:{lineno}: id {image_id} repeats line {seen[image_id]}; each query is "
                f"listed once in the published file: download it again from {PUBLISHED}"
            )
        if image_id:
            seen.setdefault(image_id, lineno)
    if not seen:
        raise DataFormatError(f"{path}: no ids; download it again from {PUBLISHED}")
    return sorted(seen)


def read_taxonomy(path: Path) -> dict[str, tuple[str, str, str]]:
    """``taxonomy.json`` (category → mid-level → fine-level → object ids) as object → levels."""
    try:
        tree = json.loads(read_text(path))
    except (OSError, ValueError) as exc:
        raise DataFormatError(
            f"{path}: not readable JSON ({exc}); copy {TAXONOMY_SOURCE}"
        ) from None
    out: dict[str, tuple[str, str, str]] = {}
    shape = DataFormatError(
        f"{path}: expected category → mid-level → fine-level → object lists ({TAXONOMY_SOURCE})"
    )
    try:
        for category, mids in tree.items():
            for mid, fines in mids.items():
                for fine, objects in fines.items():
                    if not isinstance(objects, list) or not all(
                        isinstance(o, str) for o in objects
                    ):
                        raise shape
                    for obj in objects:
                        out[obj] = (str(category), str(mid), str(fine))
    except AttributeError:
        raise shape from None
    return out


def subset_name(category: str, fine: str) -> str:
    def clean(text: str) -> str:
        return text.replace("/", "-").replace(" ", "-")

    return f"fine/{clean(category)}/{clean(fine)}"


def fine_classes(taxonomy: dict[str, tuple[str, str, str]]) -> dict[str, list[str]]:
    """Subset name → its objects, for every fine-level class not named ``other``."""
    out: dict[str, list[str]] = {}
    for obj, (category, _, fine) in sorted(taxonomy.items()):
        if fine != "other":
            out.setdefault(subset_name(category, fine), []).append(obj)
    return dict(sorted(out.items()))


def query_box(path: Path) -> tuple[int, int, int, int]:
    """The union of the boxes in a ``_bbox.txt`` (``x y width height`` per line) as
    ``(left, top, right, bottom)``, clipped below at 0 as the official crop does; a union that
    holds no pixel (a negative width or height) is refused naming the file."""
    if not path.is_file():
        raise DataFormatError(f"{path}: query box not found; it ships in ilias_core ({PUBLISHED})")
    try:
        boxes = np.array(
            [
                [int(v) for v in line.split()]
                for line in read_text(path).splitlines()
                if line.strip()
            ]
        )
    except ValueError:
        boxes = np.empty((0, 0))
    if boxes.ndim != 2 or boxes.shape[1] != 4 or len(boxes) == 0:
        raise DataFormatError(f"{path}: expected lines of four integers 'x y width height'")
    left, top = boxes[:, 0].min(), boxes[:, 1].min()
    right, bottom = (boxes[:, 0] + boxes[:, 2]).max(), (boxes[:, 1] + boxes[:, 3]).max()
    union = int(max(left, 0)), int(max(top, 0)), int(max(right, 0)), int(max(bottom, 0))
    if union[2] <= union[0] or union[3] <= union[1]:
        raise DataFormatError(
            f"{path}: the union of its boxes, {' '.join(map(str, union))} as x1 y1 x2 y2 (clipped "
            f"at 0), holds no pixel; {BOX_FIX}"
        )
    return union


def _bbox_file(path: Path) -> Path:
    return path.with_name(f"{path.stem}_bbox.txt")


def check_query_boxes(core: Path, queries: list[str]) -> None:
    """Read every image query's box and refuse, before any model loads, one that lies wholly
    outside its photo (EXIF orientation applied, as the crop is cut)."""
    for query in queries:
        bbox = _bbox_file(core / query)
        check_inside(query_box(bbox), core / query, True, str(bbox), BOX_FIX)


def crop_query(path: Path) -> Any:
    """The query photo (EXIF orientation applied) cut to its boxes; a box reaching past the
    image stops at its edge, as numpy slicing does in the official code."""
    picture = load_image(path)
    bbox = _bbox_file(path)
    return picture.crop(clip_box(query_box(bbox), picture.size, str(bbox), BOX_FIX))


def load_ilias(data: Path, image_root: Path | None, need_taxonomy: bool) -> Dataset:
    ids_dir = data / "image_ids"
    if not ids_dir.is_dir():
        raise DataFormatError(
            f"{ids_dir}: not found; pass the ILIAS folder holding image_ids/ and ilias_core/ "
            f"(published at {PUBLISHED})"
        )
    image_queries, text_queries = (read_ids(ids_dir / f) for f in ID_FILES[:2])
    positives = read_ids(ids_dir / ID_FILES[2], unique=False)
    digest = hashlib.sha256()
    for name in ID_FILES:
        digest.update(sha256_file(ids_dir / name).encode())
    taxonomy = None
    tax_file = data / "taxonomy.json"
    if tax_file.is_file():
        taxonomy = read_taxonomy(tax_file)
        digest.update(sha256_file(tax_file).encode())
    elif need_taxonomy:
        raise DataFormatError(
            f"{tax_file}: not found; the fine-grained classes need {TAXONOMY_SOURCE} there"
        )
    payload = IliasData(
        image_queries,
        text_queries,
        positives,
        image_root if image_root is not None else data / "ilias_core",
        ids_dir,
        data / "yfcc100m",
        taxonomy,
    )
    subsets: tuple[str, ...] = ("default",)
    if need_taxonomy:
        assert taxonomy is not None
        subsets = tuple(fine_classes(taxonomy))
        if not subsets:
            raise DataFormatError(
                f"{tax_file}: names no fine-level class but 'other', so ilias_fine has nothing "
                f"to score; copy {TAXONOMY_SOURCE}"
            )
    return Dataset("ilias", digest.hexdigest(), str(data), payload, subsets, has_images=True)


def read_distractors(path: Path, n: int) -> list[str]:
    """The first ``n`` ids of ``distractor_ids.txt.gz`` (its order: shard by shard)."""
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; it is published at {PUBLISHED}")
    out: list[str] = []
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    out.append(line.strip())
                if len(out) == n:
                    break
    except (OSError, EOFError, UnicodeDecodeError) as exc:  # BadGzipFile is an OSError
        raise DataFormatError(
            f"{path}: not a readable gzip text file ({exc}); download it again from {PUBLISHED}"
        ) from None
    if len(out) < n:
        raise BindkitError(
            f"--task-option distractors={n}: {path} lists only {len(out)}; ask for at most that"
        )
    return out


class _IliasBase(InstanceTask):
    metadata = TaskMetadata(name="_ilias", description="", main_score="map")
    fine = False

    def __init__(
        self, k: int = DEFAULT_K, index: str = "numpy", crop: bool = False, distractors: int = 0
    ) -> None:
        name = self.metadata.name
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise BindkitError(f"{name} --task-option k={k!r}: give a positive list length")
        if index not in BACKENDS:
            raise BindkitError(
                f"{name} --task-option index={index!r}: use one of {', '.join(BACKENDS)}"
            )
        if isinstance(distractors, bool) or not isinstance(distractors, int) or distractors < 0:
            raise BindkitError(f"{name} --task-option distractors={distractors!r}: give a count")
        if self.fine and distractors:
            raise BindkitError(
                f"{name} --task-option distractors: the per-class evaluation searches each "
                "class's positives only; use --task ilias for distractors"
            )
        self.k, self.index, self.crop, self.distractors = k, index, crop, distractors
        # the database embedded once per model and instruction, shared by pairings and subsets
        self._database: dict[tuple[str, str | None, int, str], np.ndarray] = {}

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        """The id files, the text queries and what the options name, read before any model
        loads: the distractor ids asked for, and with ``crop`` every image query's box."""
        assert data is not None
        dataset = load_ilias(data, image_root, self.fine)
        payload: IliasData = dataset.payload
        if self.distractors:
            payload.distractors = read_distractors(payload.ids_dir / DISTRACTORS, self.distractors)
        if self.crop:
            check_query_boxes(payload.core, payload.image_queries)
        payload.texts = {q: _read_text(payload.core / q) for q in payload.text_queries}
        return dataset

    def options(self, subset: str) -> dict[str, Any]:
        out: dict[str, Any] = {"k": self.k, "index": self.index, "crop": self.crop}
        if not self.fine:
            out["distractors"] = self.distractors
        return out

    def _objects(self, data: IliasData, subset: str) -> set[str] | None:
        if not self.fine:
            return None
        assert data.taxonomy is not None
        return set(fine_classes(data.taxonomy)[subset])

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        data: IliasData = dataset.payload
        where = f"{self.metadata.name} {subset}"
        objects = self._objects(data, subset)
        queries = data.image_queries if pairing == "ii" else data.text_queries
        if objects is not None:
            queries = [q for q in queries if instance(q) in objects]
        positives = data.positives
        distractors = data.distractors
        needed = sorted(set(queries + positives)) if pairing == "ii" else queries + positives
        mask = _images.present(needed, data.core, where, PUBLISHED, ctx)
        distractor_files = [f"{d}.jpg" for d in distractors]
        if distractors:
            fix = f"unpack each YFCC100M shard into {data.distractor_root}/<shard>/ ({PUBLISHED})"
            mask = np.r_[
                mask,
                _images.present(distractor_files, data.distractor_root, where, PUBLISHED, ctx, fix),
            ]
        if not mask.all():
            nothing_scored(where, ctx)
            return None
        database = self._embed_database(embedder, data, distractor_files)
        if objects is not None:
            rows = [i for i, p in enumerate(positives) if instance(p) in objects]
            database, db_ids = database[rows], [positives[i] for i in rows]
        else:
            db_ids = positives + distractors
        q = self._embed_queries(embedder, data, queries, pairing, subset, ctx)
        k = min(self.k, len(db_ids))
        top_scores, top_ids = search(q, database, k, IndexConfig(backend=self.index))
        by_object: dict[str, set[int]] = {}
        for i, image in enumerate(db_ids[: len(positives)] if objects is None else db_ids):
            by_object.setdefault(instance(image), set()).add(i)
        relevant = [by_object.get(instance(x), set()) for x in queries]
        map_k, aps = mean_ap_at_k(top_scores, top_ids, relevant, self.k)
        return {
            "scores": {"map": map_k},
            "counts": {
                "queries": len(queries),
                "database": len(db_ids),
                "distractors": len(distractors),
            },
            "per_query": {
                "metric": "ap",
                "ids": list(queries),
                "values": [float(a) for a in aps],
                "top": top(top_ids.tolist(), db_ids),
            },
        }

    def _embed_database(
        self, embedder: Embedder, data: IliasData, distractor_files: list[str]
    ) -> np.ndarray:
        instruction = self.metadata.document_instruction
        key = (embedder.fingerprint, instruction, len(distractor_files), str(data.core))
        if key not in self._database:
            vectors = [
                embedder.embed_images(
                    _images.refs(data.positives, data.core),
                    role="document",
                    instruction=instruction,
                )
            ]
            if distractor_files:
                vectors.append(
                    embedder.embed_images(
                        _images.refs(distractor_files, data.distractor_root),
                        role="document",
                        instruction=instruction,
                    )
                )
            self._database[key] = np.concatenate(vectors).astype(np.float32, copy=False)
        return self._database[key]

    def _embed_queries(
        self,
        embedder: Embedder,
        data: IliasData,
        queries: list[str],
        pairing: str,
        subset: str,
        ctx: EvalContext,
    ) -> np.ndarray:
        instruction = self.query_instruction(subset, ctx)
        if pairing == "ti":
            texts = [data.texts[q] for q in queries]
            return embedder.embed_texts(texts, role="query", instruction=instruction)
        blocks = []
        for q0 in range(0, len(queries), QUERY_BLOCK):
            names = queries[q0 : q0 + QUERY_BLOCK]
            inputs: list[Any] = (
                [crop_query(data.core / n) for n in names]
                if self.crop
                else [ImageRef(data.core / n) for n in names]
            )
            blocks.append(embedder.embed_images(inputs, role="query", instruction=instruction))
        return np.concatenate(blocks).astype(np.float32, copy=False)


def _read_text(path: Path) -> str:
    """A text query as the official extraction reads it (the whole file, unstripped); a file
    that is not UTF-8 is refused naming its line."""
    if not path.is_file():
        raise DataFormatError(f"{path}: text query not found; it ships in ilias_core ({PUBLISHED})")
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataFormatError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x}); re-save the file as UTF-8"
        ) from None


_COMMON: dict[str, Any] = {
    "reference": "Kordopatis-Zilos et al., CVPR 2025; github.com/ilias-vrg/ilias "
    "(evaluation/src/dataset.py)",
    "modalities": ("text", "image"),
    "pairings": ("ii", "ti"),
    "license": "CC BY 4.0 for captured images; others under their URL's licence",
    "published": PUBLISHED,
    "data_dir": "ilias",
    "fetchable": True,
}


class Ilias(_IliasBase):
    metadata = TaskMetadata(
        name="ilias",
        description="ILIAS: instance retrieval mAP@1k, image and text queries",
        main_score="map",
        data_help="the ILIAS folder of image_ids/ and ilias_core/",
        **_COMMON,
    )


class IliasFine(_IliasBase):
    metadata = TaskMetadata(
        name="ilias_fine",
        description="ILIAS per fine-grained class (38 named classes): mAP within each class",
        main_score="map",
        averaged=True,
        data_help="the ILIAS folder of image_ids/, ilias_core/ and taxonomy.json",
        **_COMMON,
    )
    fine = True

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        """Mean mAP over the classes of each top-level category, and over all (Table 16)."""
        cells: dict[tuple[str, str], dict[str, list[float]]] = {}
        categories: dict[str, None] = {}
        for r in records:
            value, subset = r["scores"].get("map"), str(r.get("subset", ""))
            if not isinstance(value, int | float) or subset.count("/") != 2:
                continue
            category = subset.split("/")[1]
            categories[category] = None
            pairing = PAIRING_NAMES.get(r["pairing"], r["pairing"])
            row = cells.setdefault((label(r), pairing), {})
            row.setdefault(category, []).append(float(value))
        if not cells:
            return []
        order = sorted(categories)
        rows = []
        for (model, pairing), by_category in cells.items():
            every = [v for values in by_category.values() for v in values]
            rows.append(
                [model, pairing]
                + [
                    pct(np.mean(by_category[c])) + f" ({len(by_category[c])})"
                    if c in by_category
                    else "–"
                    for c in order
                ]
                + [pct(np.mean(every)) + f" ({len(every)})"]
            )
        title = "ILIAS fine-grained mAP per top-level category (%; classes scored)"
        return [Table(title, ["model", "pairing", *order, "all"], rows)]
