"""SugarCrepe (Hsieh et al., NeurIPS 2023; RAIVNLab/sugar-crepe ``main_eval.py``): given a COCO
image, the positive caption must score strictly above the hard negative (a tie is wrong).

``tt`` is bindkit's text-only variant, not the benchmark's protocol: the query is another COCO
caption of the same image (the first, in subset and file order, of the captions of that image
in the data that differ from the item's), the candidates the item's caption and its negative;
an item whose image has no other caption is not scored (counted as ``without_query``). It is
how a text encoder, or a recipe's dev panel, reads SugarCrepe's hard negatives.

Files as published: ``data/<subset>.json``, each ``{"<idx>": {"filename", "caption",
"negative_caption"}}``. Keys are not contiguous (swap_obj has no key "108"), so items are the
file's values in order, never ``range(n)``. The first release named the object subsets
``*_ent.json`` (add_ent, replace_ent, swap_ent); those names are read as ``*_obj``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import sha256_bytes
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.pairwise import TIE_RULES
from bindkit.tasks import _images
from bindkit.tasks._files import read_json
from bindkit.tasks._halves import halve_by_image
from bindkit.tasks.base import Dataset, EvalContext, Task, TaskMetadata
from bindkit.tasks.pairs._base import COCO, prefers_positive

SUBSETS = (
    "add_obj",
    "add_att",
    "replace_obj",
    "replace_att",
    "replace_rel",
    "swap_obj",
    "swap_att",
)
FIELDS = ("filename", "caption", "negative_caption")
KEY = "_key"  # the item's key in the published file: its id in per-query scores


@dataclass(frozen=True)
class SugarCrepeData:
    items: dict[str, list[dict[str, str]]]
    files: dict[str, Path]
    image_root: Path | None


def subset_file(directory: Path, subset: str) -> Path:
    """``<subset>.json``, or the first release's ``*_ent.json`` name for object subsets."""
    path = directory / f"{subset}.json"
    old = directory / f"{subset.replace('_obj', '_ent')}.json"
    return old if not path.exists() and old.is_file() else path


def read_sugarcrepe(directory: Path) -> tuple[dict[str, list[dict[str, str]]], dict[str, Path]]:
    items: dict[str, list[dict[str, str]]] = {}
    files: dict[str, Path] = {}
    for subset in SUBSETS:
        path = subset_file(directory, subset)
        raw = read_json(path, f"the published SugarCrepe file {subset}.json")
        if not isinstance(raw, dict) or not raw:
            raise DataFormatError(f"{path}: expected an object of items keyed by index")
        for key, row in raw.items():
            for field in FIELDS:
                if not isinstance(row, dict) or not isinstance(row.get(field), str):
                    raise DataFormatError(f"{path}: item {key!r}: field {field!r} must be a string")
        # iterate values, never range(n): the keys have gaps; each row keeps its key as its id
        rows = [{**row, KEY: str(key)} for key, row in raw.items()]
        items[subset], files[subset] = rows, path
    return items, files


class SugarCrepe(Task):
    metadata = TaskMetadata(
        name="sugarcrepe",
        description="SugarCrepe: image→text, positive caption above the hard negative",
        main_score="accuracy",
        reference="Hsieh et al., NeurIPS 2023; github.com/RAIVNLab/sugar-crepe main_eval.py",
        subsets=SUBSETS,
        modalities=("text", "image"),
        pairings=("it", "tt"),
        ties="wrong",
        license="MIT (annotations); COCO images: CC BY 4.0 / Flickr terms",
        published="https://github.com/RAIVNLab/sugar-crepe (data/*.json)",
        data_dir="sugarcrepe",
        data_help="the folder of add_att.json ... swap_obj.json",
        fetchable=True,
    )
    tie_rules = TIE_RULES

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        if not data.is_dir():
            raise DataFormatError(f"{data}: not a folder; pass {self.metadata.data_help}")
        items, files = read_sugarcrepe(data)
        digest = sha256_bytes(b"".join(files[s].read_bytes() for s in SUBSETS))
        payload = SugarCrepeData(items, files, _images.image_root(data, image_root))
        return Dataset(data.name, digest, str(data), payload, SUBSETS, has_images=True)

    def default_pairings(self, available: list[str]) -> list[str]:
        """The benchmark's image→text protocol; ``tt`` (bindkit's variant) when asked for, or
        for a model without images."""
        return ["it"] if "it" in available else available

    def halve(self, dataset: Dataset, half: str) -> Dataset:
        """Keyed by the COCO image: an image and all its captions lie in one half, in
        SugarCrepe and SugarCrepe++ alike (most SugarCrepe++ items rewrite a SugarCrepe one)."""
        return halve_by_image(dataset, half)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        data: SugarCrepeData = dataset.payload
        if pairing == "tt":
            return self._text_only(embedder, data, subset, ctx)
        rows = data.items[subset]
        names = [r["filename"] for r in rows]
        mask = _images.present(names, data.image_root, f"sugarcrepe {subset}", COCO, ctx)
        counts = {"items": len(rows), "missing_images": int((~mask).sum())}
        rows = [r for r, ok in zip(rows, mask, strict=True) if ok]
        if not rows:
            return None
        assert data.image_root is not None
        images = embedder.embed_images(
            _images.refs([r["filename"] for r in rows], data.image_root),
            role="query",
            instruction=self.query_instruction(subset, ctx),
        )
        texts = embedder.embed_texts(
            [r["caption"] for r in rows] + [r["negative_caption"] for r in rows],
            role="document",
            instruction=self.document_instruction(subset, ctx),
        )
        ties = self.metadata.tie_rule(subset)
        correct = prefers_positive(images, texts[: len(rows)], texts[len(rows) :], ties)
        counts["scored"] = len(rows)
        per_query = {"metric": "correct", "ids": [r[KEY] for r in rows], "values": correct.tolist()}
        return {
            "scores": {"accuracy": float(correct.mean())},
            "counts": counts,
            "per_query": per_query,
        }

    def _text_only(
        self, embedder: Embedder, data: SugarCrepeData, subset: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        queries = other_captions(data.items)
        rows = data.items[subset]
        pairs = [(r, queries[(r["filename"], r["caption"])]) for r in rows]
        kept = [(r, q) for r, q in pairs if q is not None]
        counts = {"items": len(rows), "without_query": len(rows) - len(kept)}
        if not kept:
            return None
        vectors = embedder.embed_texts(
            [q for _, q in kept], role="query", instruction=self.query_instruction(subset, ctx)
        )
        texts = embedder.embed_texts(
            [r["caption"] for r, _ in kept] + [r["negative_caption"] for r, _ in kept],
            role="document",
            instruction=self.document_instruction(subset, ctx),
        )
        ties = self.metadata.tie_rule(subset)
        correct = prefers_positive(vectors, texts[: len(kept)], texts[len(kept) :], ties)
        counts["scored"] = len(kept)
        ids = [r[KEY] for r, _ in kept]
        return {
            "scores": {"accuracy": float(correct.mean())},
            "counts": counts,
            "per_query": {"metric": "correct", "ids": ids, "values": correct.tolist()},
        }


def other_captions(
    items: dict[str, list[dict[str, str]]],
) -> dict[tuple[str, str], str | None]:
    """(image, caption) → the first other caption of that image in ``items`` (subsets in
    :data:`SUBSETS` order, rows in file order), None when it has no other."""
    captions: dict[str, list[str]] = {}
    for subset in SUBSETS:
        for row in items.get(subset, ()):
            known = captions.setdefault(row["filename"], [])
            if row["caption"] not in known:
                known.append(row["caption"])
    return {
        (name, caption): next((c for c in known if c != caption), None)
        for name, known in captions.items()
        for caption in known
    }
