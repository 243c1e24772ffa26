"""INSTRE (Wang and Jiang, ACM TOMM 2015): instance retrieval of 200 objects. INSTRE-S1 and
INSTRE-S2 hold single-object images (100 objects each, one folder per object); INSTRE-M holds
images of two objects, the 100 objects of INSTRE-S1 grouped into 50 pairs (folder ``NN`` of
INSTRE-M shows the objects of the S1 folders ``NNa_*`` and ``NNb_*``).

Subsets, after the seed's instance-retrieval appendix (one sentence: S queries against S, M
queries against S or against S+M, an image with both query instances more relevant than one with
one):

- ``S``: INSTRE-S queries against the INSTRE-S images; relevant: the same object.
- ``M_to_S``: INSTRE-M queries against the INSTRE-S images; relevant: an image of either object.
- ``M_to_SM``: INSTRE-M queries against INSTRE-S and INSTRE-M together, with graded relevance:
  gain 2 for an image showing both query objects (the query's INSTRE-M pair), 1 for one showing
  one of them (their INSTRE-S1 images), 0 otherwise.

Every subset reports ``map`` (any gain above 0 is relevant; the trapezoid AP of
:func:`~bindkit.metrics.instance.trapezoid_ap`, no junk) and ``ndcg`` (linear gains over the
full ranking, :func:`~bindkit.metrics.instance.ndcg`); for ``M_to_SM`` nDCG is the graded score,
for the other two its gains are 0/1.

``M_to_S`` (either object relevant) and ``M_to_SM``'s gains 2/1 with linear-gain nDCG are
bindkit's reading of that sentence: no official script defines them (the common protocol, Iscen
et al.'s ``gnd_instre.mat``, scores every query against one database by mAP), and the seed names
neither the gains nor the nDCG variant.

Files read: ``<data>/gnd_instre.mat`` (Iscen et al., CVPR 2017: the common split of 1,250 query
images, 5 per class, and the 27,293 other images as the database) — its ``qimlist``, ``imlist``
and each ``gnd`` entry's query box (the second field, read as ``x1 y1 x2 y2`` in pixels like
revisitop's ``bbx``, unlike the release's per-image ``.txt`` boxes, which are ``x y w h``; an
INSTRE-M query's box spans both objects) — and the images of the release, ``INSTRE-S1/``,
``INSTRE-S2/``, ``INSTRE-M/`` under ``--image-root`` (default: beside the ``.mat``).

Queries are embedded whole by default: seed 000 names query crops for Oxford, Paris and
Sculptures only, and vissl's INSTRE evaluation reads no query box. ``--task-option crop=true``
cuts each query to its ``.mat`` box instead, as os2d's INSTRE loader does; that is bindkit's
assumption of what a cropped INSTRE protocol means, not an official script's. With it, every box
is checked before any model loads (:mod:`bindkit.tasks.instance._boxes`: a box that is not
finite, is inverted, holds no pixel or lies wholly outside its image is refused naming
``gnd[n]`` and the query; one reaching past the edge is clipped to the image).

The ``.mat`` is checked as it is read: empty ``qimlist`` or ``imlist``, a ``gnd`` entry that is
not a struct, and a listed positive that is not an index into ``imlist`` are refused in one line.

Relevance follows the release's folders as above (the release's own rule: the first box of an
INSTRE-M image is its S1 ``a`` object, the second its ``b``); the ``.mat``'s per-query positives
(the first field, 1-based into ``imlist``) are only checked against it: a listed positive
showing none of the query's objects is reported in one line.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_file
from bindkit.embed.images import ImageRef
from bindkit.embed.protocol import Embedder
from bindkit.errors import BindkitError, DataFormatError
from bindkit.metrics.instance import graded_scores, rankings
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.instance._base import InstanceTask, crop, top
from bindkit.tasks.instance._boxes import Box, check_box, check_inside

PUBLISHED = (
    "ftp://ftp.irisa.fr/local/texmex/corpus/instre/ (gnd_instre.mat and the images, "
    "instre.tar.gz; the images also at http://123.57.42.89/instre/home.html)"
)
SUBSETS = ("S", "M_to_S", "M_to_SM")
_S1 = re.compile(r"^(\d\d)([ab])_")


def instances(path: str) -> frozenset[str]:
    """The objects an INSTRE image shows, from its path in the release.

    >>> sorted(instances("INSTRE-M/07/012.jpg"))
    ['S1/07a', 'S1/07b']
    """
    parts = path.replace("\\", "/").split("/")
    if len(parts) == 3 and parts[0] == "INSTRE-S1" and _S1.match(parts[1]):
        return frozenset({f"S1/{parts[1][:3]}"})
    if len(parts) == 3 and parts[0] == "INSTRE-S2":
        return frozenset({f"S2/{parts[1]}"})
    if len(parts) == 3 and parts[0] == "INSTRE-M" and re.fullmatch(r"\d\d", parts[1]):
        return frozenset({f"S1/{parts[1]}a", f"S1/{parts[1]}b"})
    raise DataFormatError(
        f"gnd_instre.mat: {path!r} is not an INSTRE-S1/NNa_*/, INSTRE-S2/*/ or INSTRE-M/NN/ image"
    )


def gains(queries: list[str], gallery: list[str]) -> np.ndarray:
    """(queries, gallery) gains: how many of the query's objects each image shows."""
    q = [instances(p) for p in queries]
    g = [instances(p) for p in gallery]
    ids = {o: i for i, o in enumerate(sorted(set().union(*q, *g)))}

    def members(items: list[frozenset[str]]) -> np.ndarray:
        out = np.zeros((len(items), len(ids)), np.float64)
        for row, objects in enumerate(items):
            out[row, [ids[o] for o in objects]] = 1.0
        return out

    shared: np.ndarray = members(q) @ members(g).T  # objects in common, per pair
    return shared


def read_gnd(path: Path) -> tuple[list[str], list[str], list[Box], list[list[int]]]:
    """(query paths, database paths, query boxes as x1, y1, x2, y2, 0-based positives per query)
    from ``gnd_instre.mat``."""
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; download gnd_instre.mat from {PUBLISHED}")
    try:
        from scipy.io import loadmat
        from scipy.io.matlab import MatReadError
    except ImportError:
        raise BindkitError(
            "instre: reading gnd_instre.mat needs scipy; pip install 'bindkit[benchmarks]'"
        ) from None
    try:
        mat = loadmat(str(path))
    except (MatReadError, ValueError, TypeError, OSError, NotImplementedError) as exc:
        raise DataFormatError(
            f"{path}: not a readable MATLAB file ({exc}); download it again"
        ) from None
    if not all(k in mat for k in ("qimlist", "imlist", "gnd")):
        raise DataFormatError(f"{path}: needs qimlist, imlist and gnd; download it again")
    qimlist, imlist = (_names(path, mat, key) for key in ("qimlist", "imlist"))
    gnd = np.ravel(mat["gnd"])
    if len(gnd) != len(qimlist):
        raise DataFormatError(f"{path}: gnd and qimlist differ in length")
    boxes: list[Box] = []
    positives = []
    for number, entry in enumerate(gnd):
        if not isinstance(entry, np.void) or not entry.dtype.names:
            raise DataFormatError(
                f"{path}: gnd[{number}] is not a struct of positives and a box; download it again"
            )
        fields = len(entry.dtype.names)  # a struct has at least one: checked above
        positives.append(_positives(path, number, entry[0], len(imlist)))
        box = _numbers(entry[1]) if fields > 1 else np.empty(0)
        if box.size != 4:
            raise DataFormatError(f"{path}: gnd[{number}] has no [x1, y1, x2, y2] box")
        x1, y1, x2, y2 = box.tolist()
        boxes.append((x1, y1, x2, y2))
    return qimlist, imlist, boxes, positives


def _names(path: Path, mat: dict[str, Any], key: str) -> list[str]:
    """A cell array of image paths; an empty one is refused (nothing to rank or no query)."""
    try:
        names = [str(np.ravel(v)[0]) for v in np.ravel(mat[key])]
    except IndexError:  # an empty cell
        names = []
    if not names or not all(names):
        raise DataFormatError(f"{path}: {key} is empty or holds an empty name; download it again")
    return names


def _numbers(value: Any) -> np.ndarray:
    """A .mat field as a flat float array (empty when it holds no numbers)."""
    try:
        return np.ravel(value).astype(np.float64)
    except (TypeError, ValueError):
        return np.empty(0)


def _positives(path: Path, number: int, value: Any, n_images: int) -> list[int]:
    """gnd[number]'s positives (1-based into imlist) as 0-based indices; each must name an
    image, or the .mat is not the one of these lists."""
    listed = _numbers(value)
    with np.errstate(invalid="ignore"):  # NaN compares False; ~isfinite catches it
        bad = listed[
            ~np.isfinite(listed) | (listed != np.round(listed)) | (listed < 1) | (listed > n_images)
        ]
    if bad.size:
        raise DataFormatError(
            f"{path}: gnd[{number}] lists positive {bad[0]:g}, not an index 1..{n_images} of "
            "imlist; download it again"
        )
    return [int(i) - 1 for i in listed]


def _where(file: Path, number: int, query: str) -> str:
    return f"{file}: gnd[{number}] (query {query})"


def _is_m(path: str) -> bool:
    return path.replace("\\", "/").startswith("INSTRE-M/")


def _check_listed(
    qimlist: list[str],
    imlist: list[str],
    listed: list[list[int]],
    chosen: list[int],
    ctx: EvalContext,
) -> None:
    """One note when the ``.mat``'s positives disagree with the folder rule for these queries."""
    bad = [
        (qimlist[q], imlist[i])
        for q in chosen
        for i in listed[q]
        if not instances(qimlist[q]) & instances(imlist[i])  # read_gnd checked the range
    ]
    if bad:
        ctx.note(
            f"warning: instre: {len(bad)} positives listed in gnd_instre.mat show none of their "
            f"query's objects by the folder rule (first: {bad[0][1]} for {bad[0][0]}); "
            "check that the images and the .mat come from the same release"
        )


class Instre(InstanceTask):
    metadata = TaskMetadata(
        name="instre",
        description="INSTRE: instance retrieval mAP and nDCG (S, M→S, M→S+M graded)",
        main_score="map",
        scores=("ndcg",),
        reference="Wang and Jiang, ACM TOMM 2015; query split of Iscen et al., CVPR 2017",
        subsets=SUBSETS,
        modalities=("image",),
        pairings=("ii",),
        license="see the publisher (research use)",
        published=PUBLISHED,
        data_dir="instre",
        fetchable=True,
        data_help="the folder of gnd_instre.mat and INSTRE-S1/, INSTRE-S2/, INSTRE-M/",
    )

    def __init__(self, crop: bool = False) -> None:
        if not isinstance(crop, bool):
            raise BindkitError(f"instre --task-option crop={crop!r}: use true or false")
        self.crop = crop

    def options(self, subset: str) -> dict[str, Any]:
        return {"crop": self.crop}

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        file = data / "gnd_instre.mat" if data.is_dir() else data
        qimlist, imlist, boxes, positives = read_gnd(file)
        for p in (*qimlist, *imlist):
            instances(p)  # every path names its objects, or the file is not INSTRE's
        root = image_root if image_root is not None else file.parent
        if self.crop:  # the boxes are read only for crops; checked before any model loads
            for number, query in enumerate(qimlist):
                where = _where(file, number, query)
                check_inside(check_box(boxes[number], where), root / query, False, where)
        payload = (qimlist, imlist, boxes, positives, root)
        return Dataset("instre", sha256_file(file), str(file), payload, SUBSETS, has_images=True)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        qimlist, imlist, boxes, listed, root = dataset.payload
        chosen = [i for i, p in enumerate(qimlist) if _is_m(p) == (subset != "S")]
        queries = [qimlist[i] for i in chosen]
        gallery = [p for p in imlist if subset == "M_to_SM" or not _is_m(p)]
        if not queries or not gallery:
            ctx.note(f"warning: instre {subset}: no queries or no images in gnd_instre.mat")
            return None
        if not self.all_present(queries + gallery, root, "instre", ctx):
            return None
        inputs: list[Any] = [
            crop(root / qimlist[i], boxes[i], _where(Path(dataset.source), i, qimlist[i]))
            if self.crop
            else ImageRef(root / qimlist[i])
            for i in chosen
        ]
        qv = embedder.embed_images(
            inputs, role="query", instruction=self.query_instruction(subset, ctx)
        )
        xv = embedder.embed_images(
            [ImageRef(root / p) for p in gallery],
            role="document",
            instruction=self.metadata.document_instruction,
        )
        similarity = qv @ xv.T
        per = graded_scores(similarity, gains(queries, gallery))
        _check_listed(qimlist, imlist, listed, chosen, ctx)
        valid = ~np.isnan(per["ap"])
        return {
            "scores": {
                "map": float(per["ap"][valid].mean()) if valid.any() else float("nan"),
                "ndcg": float(np.nanmean(per["ndcg"])) if valid.any() else float("nan"),
            },
            "counts": {"queries": len(queries), "database": len(gallery)},
            "per_query": {
                "metric": "ap",
                "ids": queries,
                "values": [float(v) for v in per["ap"]],
                "top": top(rankings(similarity), gallery),
            },
        }
