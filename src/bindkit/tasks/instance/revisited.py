"""Revisited Oxford and Paris (Radenović et al., CVPR 2018; filipradenovic/revisitop): 70 query
images, cropped to their bounding boxes, retrieve landmark photos from 4,993 / 6,322. mAP and
mP@1/5/10 under the Easy, Medium and Hard protocols with junk images removed from the ranking
(:mod:`bindkit.metrics.instance`), as revisitop's example_evaluate.py reports them.

Files as published: ``<data>/gnd_roxford5k.pkl`` (revisitop's Python ground truth; its MATLAB
``.mat`` copy is not read) with ``imlist``, ``qimlist`` and ``gnd`` (per query ``bbx``,
``easy``, ``hard``, ``junk``), and ``<data>/jpg/<name>.jpg``. The ``.pkl`` is a Python pickle:
load only files you downloaded from the publisher.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_file
from bindkit.embed.images import ImageRef
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.instance import KAPPAS, rankings, revisited_aps, revisited_maps
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.instance._base import InstanceTask, crop, top
from bindkit.tasks.instance._boxes import check_box, check_inside

PUBLISHED = "http://cmp.felk.cvut.cz/revisitop/ (gnd_*.pkl and the jpg/ folder)"


def read_gnd(path: Path) -> dict[str, Any]:
    """The ground-truth file as a dict with ``imlist``, ``qimlist`` and ``gnd``."""
    mat = path.with_suffix(".mat")
    if path.suffix == ".mat" or (not path.is_file() and mat.is_file()):
        raise DataFormatError(
            f"{mat}: MATLAB ground truth is not read; pass {path.with_suffix('.pkl').name}, "
            f"revisitop's Python copy (published at {PUBLISHED})"
        )
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; it is published at {PUBLISHED}")
    try:
        with path.open("rb") as handle:
            cfg = pickle.load(handle)
    except (pickle.UnpicklingError, EOFError, ValueError) as exc:
        raise DataFormatError(f"{path}: not a readable pickle ({exc}); download it again") from None
    if not isinstance(cfg, dict) or not all(k in cfg for k in ("imlist", "qimlist", "gnd")):
        raise DataFormatError(f"{path}: needs the keys imlist, qimlist and gnd")
    if len(cfg["gnd"]) != len(cfg["qimlist"]):
        raise DataFormatError(f"{path}: gnd and qimlist differ in length")
    for number, g in enumerate(cfg["gnd"]):
        if not isinstance(g, dict) or "bbx" not in g:
            raise DataFormatError(f"{path}: gnd[{number}] has no bbx")
    return cfg


class _Revisited(InstanceTask):
    metadata = TaskMetadata(name="_revisited", description="", main_score="map_medium")
    dataset_name = ""

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        file = data / f"gnd_{self.dataset_name}.pkl" if data.is_dir() else data
        cfg = read_gnd(file)
        root = image_root if image_root is not None else file.parent / "jpg"
        for number, (name, g) in enumerate(zip(cfg["qimlist"], cfg["gnd"], strict=True)):
            where = f"{file}: query {name} (gnd[{number}])"  # checked before any model loads
            check_inside(check_box(np.ravel(g["bbx"]), where), root / f"{name}.jpg", False, where)
        return Dataset(
            self.dataset_name, sha256_file(file), str(file), (cfg, root), has_images=True
        )

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        cfg, root = dataset.payload
        names = [f"{n}.jpg" for n in cfg["imlist"]]
        qnames = [f"{n}.jpg" for n in cfg["qimlist"]]
        where = self.metadata.name
        if not self.all_present(names + qnames, root, where, ctx):
            return None
        queries = [
            crop(root / n, g["bbx"], f"{dataset.source}: query {n}")
            for n, g in zip(qnames, cfg["gnd"], strict=True)
        ]
        q = embedder.embed_images(
            queries, role="query", instruction=self.query_instruction(subset, ctx)
        )
        x = embedder.embed_images(
            [ImageRef(root / n) for n in names],
            role="document",
            instruction=self.document_instruction(subset, ctx),
        )
        gnd = [
            {k: [int(i) for i in np.ravel(g.get(k, []))] for k in ("easy", "hard", "junk")}
            for g in cfg["gnd"]
        ]
        similarity = q @ x.T
        scores = revisited_maps(similarity, gnd)
        ranked = top(rankings(similarity), names)
        per_query = [  # medium first: the main score's
            {"metric": f"ap_{s}", "ids": qnames, "values": aps.tolist(), "top": ranked}
            for s, aps in sorted(revisited_aps(similarity, gnd).items(), key=_medium_first)
        ]
        counts = {"queries": len(q), "database": len(x)}
        return {"scores": scores, "counts": counts, "per_query": per_query}

    def describe_ids(
        self, dataset: Dataset, subset: str, pairing: str
    ) -> dict[str, tuple[str, str]]:
        cfg, root = dataset.payload
        names = [f"{n}.jpg" for n in [*cfg["qimlist"], *cfg["imlist"]]]
        return {n: ("image", str(root / n)) for n in names}


def _medium_first(item: tuple[str, Any]) -> int:
    return ("medium", "easy", "hard").index(item[0])


def _meta(name: str, city: str) -> TaskMetadata:
    return TaskMetadata(
        name=name,
        description=f"Revisited {city}: instance retrieval mAP, Easy/Medium/Hard, query crops",
        main_score="map_medium",
        scores=(
            "map_easy",
            "map_hard",
            *(f"mp_at_{k}_{s}" for s in ("easy", "medium", "hard") for k in KAPPAS),
        ),
        reference="Radenović et al., CVPR 2018; github.com/filipradenovic/revisitop",
        modalities=("image",),
        pairings=("ii",),
        license="see the publisher (Flickr images)",
        published=PUBLISHED,
        data_dir=name,
        data_help=f"the folder of gnd_{name}.pkl and jpg/",
        fetchable=True,
    )


class ROxford5k(_Revisited):
    metadata = _meta("roxford5k", "Oxford")
    dataset_name = "roxford5k"


class RParis6k(_Revisited):
    metadata = _meta("rparis6k", "Paris")
    dataset_name = "rparis6k"
