"""PODS, the Personal Object Discrimination Suite (Sundaram et al., ICLR 2025, "Personalized
Representation from Personalized Generation"; github.com/ssundaram21/personalized-rep): 100
household objects, 3 reference views each (``train/``) and 71-201 test photos each (``test/``)
under distribution shifts. Retrieval as ``downstream/retrieval.py`` runs it for one object: its
test photos are the queries, every object's reference views the database, scored by NDCG, MRR and
top-10 accuracy (:mod:`bindkit.metrics.pods`). bindkit runs every object of a class split and
reports the mean over objects of the per-object means (each official run is one object).

Subsets are the class splits of ``pods_info.json``'s ``class_to_split``: ``test`` (the paper's
test objects, 14 per semantic category; scored by default) and ``val``. The database always holds
the reference views of every object in ``class_to_idx``, as the official code builds it.

Files as published (``pods.zip``, unpacked by the repository's dataset/download_benchmarks.sh):
``<data>/pods_info.json`` and ``<data>/{train,test}/<object>/<image>`` (jpg, png, JPEG, jpeg or
JPG, in the object's folder or one folder below, as ``util/data_util.get_paths`` finds them).
Files whose names start with a dot are skipped as the official ``glob.glob`` skips them. Every
object of ``class_to_idx`` needs reference views and test photos: a missing folder is refused
naming it (the official code runs each object on its own and none is dropped).
``pods_image_annos.json`` (which test photo is in which distribution-shift split) is not read:
dataset/README.md documents its values (``class``, ``split``, ``test_split``: one of
``in_distribution``, ``pose``, ``distractors``, ``pose_and_distractors``) but not the format of
its keys, "image IDs", so which file each key names is unknown here and per-shift scores are not
offered.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_file
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.instance import rankings
from bindkit.metrics.pods import hit_at, ndcg, ranked_relevance, reciprocal_rank
from bindkit.tasks import _images
from bindkit.tasks._files import read_json
from bindkit.tasks.base import Dataset, EvalContext, Task, TaskMetadata
from bindkit.tasks.instance._base import top

PUBLISHED = (
    "https://data.csail.mit.edu/personal_rep/pods.zip (github.com/ssundaram21/personalized-rep "
    "dataset/README.md)"
)
EXTENSIONS = ("jpg", "png", "JPEG", "jpeg", "JPG")  # util/constants.py IMAGE_EXTENSIONS
SPLITS = ("test", "val")


@dataclass
class PodsData:
    root: Path
    classes: list[str]  # class_to_idx's order
    class_split: dict[str, str]
    references: list[tuple[str, str]]  # (object, path relative to root)
    tests: list[tuple[str, str]]


def images_of(folder: Path) -> list[Path]:
    """The images ``get_paths`` finds: in the folder and one folder below, sorted.

    Its ``glob.glob`` skips names starting with a dot at each wildcard (hidden files such as
    ``.x.jpg``, macOS ``._*`` resource forks, hidden folders), unlike ``pathlib``'s glob, so
    those are left out here too."""
    found: set[Path] = set()
    for ext in EXTENSIONS:
        for pattern in (f"*.{ext}", f"*/*.{ext}"):
            found.update(
                p
                for p in folder.glob(pattern)
                if p.is_file() and not any(n.startswith(".") for n in p.relative_to(folder).parts)
            )
    return sorted(found)


def read_info(path: Path) -> tuple[list[str], dict[str, str]]:
    """``pods_info.json``: the objects (``class_to_idx`` order) and their class splits."""
    info = read_json(path, f"PODS' pods_info.json ({PUBLISHED})")
    if not isinstance(info, dict):
        raise DataFormatError(f"{path}: expected an object with class_to_idx and class_to_split")
    to_idx, to_split = info.get("class_to_idx"), info.get("class_to_split")
    if not isinstance(to_idx, dict) or not to_idx:
        raise DataFormatError(f"{path}: field 'class_to_idx' must map each object to an id")
    if not isinstance(to_split, dict):
        raise DataFormatError(f"{path}: field 'class_to_split' must map each object to val/test")
    classes = [str(c) for c in to_idx]
    splits = {c: str(to_split.get(c)) for c in classes}
    unknown = sorted(c for c, s in splits.items() if s not in SPLITS)
    if unknown:
        raise DataFormatError(f"{path}: class_to_split gives {unknown[0]!r} no val/test split")
    return classes, splits


class PODS(Task):
    metadata = TaskMetadata(
        name="pods",
        description="PODS: each object's reference views retrieved from its test photos",
        main_score="ndcg",
        scores=("mrr", "top10_acc"),
        reference="Sundaram et al., ICLR 2025; github.com/ssundaram21/personalized-rep "
        "(downstream/retrieval.py)",
        subsets=SPLITS,
        modalities=("image",),
        pairings=("ii",),
        license="MIT (the dataset card)",
        published=PUBLISHED,
        data_dir="pods",
        fetchable=True,
        data_help="the unpacked pods.zip: pods_info.json, train/ and test/",
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        info = data / "pods_info.json"
        if not info.is_file():
            raise DataFormatError(f"{info}: not found; PODS is published at {PUBLISHED}")
        classes, splits = read_info(info)
        root = image_root if image_root is not None else data
        references, tests = [], []
        for name in classes:
            refs = images_of(root / "train" / name)
            if not refs:
                raise DataFormatError(
                    f"{root / 'train' / name}: no reference images; unpack {PUBLISHED} there "
                    "(or pass --image-root)"
                )
            photos = images_of(root / "test" / name)
            if not photos:  # each official run is one object: none is skipped
                raise DataFormatError(
                    f"{root / 'test' / name}: no test photos of {name!r}; unpack {PUBLISHED} "
                    "there (or pass --image-root)"
                )
            references += [(name, p.relative_to(root).as_posix()) for p in refs]
            tests += [(name, p.relative_to(root).as_posix()) for p in photos]
        digest = hashlib.sha256(sha256_file(info).encode())
        for _, path in references + tests:
            digest.update(f"\n{path}".encode())
        payload = PodsData(root, classes, splits, references, tests)
        present = tuple(s for s in SPLITS if s in set(splits.values()))
        return Dataset("pods", digest.hexdigest(), str(data), payload, present, has_images=True)

    def default_subsets(self, dataset: Dataset) -> tuple[str, ...]:
        """The paper reports the test objects."""
        return ("test",) if "test" in dataset.subsets else dataset.subsets

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        data: PodsData = dataset.payload
        queries = [(c, p) for c, p in data.tests if data.class_split[c] == subset]
        if not queries:
            return None
        where = f"pods {subset}"
        names = [p for _, p in data.references + queries]
        if not _images.present(names, data.root, where, PUBLISHED, ctx).all():
            ctx.note(f"warning: {where}: the reference set needs every image; nothing scored")
            return None
        x = embedder.embed_images(
            _images.refs([p for _, p in data.references], data.root),
            role="document",
            instruction=self.metadata.document_instruction,
        )
        q = embedder.embed_images(
            _images.refs([p for _, p in queries], data.root),
            role="query",
            instruction=self.query_instruction(subset, ctx),
        )
        similarity = q @ x.T
        owners = np.array([c for c, _ in data.references])
        relevant = owners[None, :] == np.array([c for c, _ in queries])[:, None]
        ranked = ranked_relevance(similarity, relevant)
        per = {"ndcg": ndcg(ranked), "mrr": reciprocal_rank(ranked), "top10_acc": hit_at(ranked)}
        objects = [c for c in data.classes if any(o == c for o, _ in queries)]
        labels = np.array([c for c, _ in queries])
        scores = {
            name: float(np.mean([values[labels == c].mean() for c in objects]))
            for name, values in per.items()
        }
        return {
            "scores": scores,
            "counts": {"objects": len(objects), "queries": len(queries), "references": len(x)},
            "per_query": {
                "metric": "ndcg",
                "ids": [p for _, p in queries],
                "values": [float(v) for v in per["ndcg"]],
                "top": top(rankings(similarity), [p for _, p in data.references]),
            },
        }
