"""ARO (Yuksekgonul et al., ICLR 2023; mertyg/vision-language-models-are-bows): VG-Relation,
VG-Attribution, COCO-Order and Flickr30k-Order.

VG-Relation and VG-Attribution: each item is an image cropped to its bounding box and two
captions, ``[false_caption, true_caption]``; correct when ``argmax == 1``, so a tie (argmax picks
index 0) is wrong. Macro averages as the original code reports them: VG-Relation averages
per-relation accuracy over the relations not in the repository's list of symmetric relations (its
README snippet); VG-Attribution averages per-attribute-pair accuracy over pairs with at least 25
items. Files as published: ``visual_genome_relation.json`` and ``visual_genome_attribution.json``
(lists of ``image_path``, ``bbox_x/y/w/h``, ``true_caption``, ``false_caption`` and
``relation_name`` or ``attributes``) and ``images/`` (``vgr_vga_images.zip``).

COCO-Order and Flickr30k-Order: each caption of the Karpathy test split against four shuffles of
itself; correct when ``argmax == 0``, so a tie is correct (the task declares each subset's
rule, ``ties``). The original's protocol and where bindkit differs are in
:mod:`bindkit.tasks.pairs._aro_order`. Files as published: ``coco_karpathy_test.json`` beside
``val2014/``, ``flickr30k_test.json`` beside ``flickr30k-images/`` (the JSON's image paths are
relative to its folder, or to ``--image-root``). The shuffles are seeded (``ARO(order_seed=...)``
or ``--task-option order_seed=N``; default 1 as the original's ``--seed``); the seed and the
spaCy/NLTK versions are recorded in the result's options.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_bytes
from bindkit._progress import progress
from bindkit.embed.protocol import Embedder
from bindkit.errors import BindkitError, DataFormatError
from bindkit.metrics.pairwise import TIE_RULES
from bindkit.records.tables import Table, as_dict, label, pct
from bindkit.tasks import _images
from bindkit.tasks._files import read_json
from bindkit.tasks.base import Dataset, EvalContext, Task, TaskMetadata
from bindkit.tasks.pairs import _aro_order as order

# ARO's caption shuffles, public through the task that uses them (the family's helper module is
# private): benchmarks/bench_aro_order.py times them against the original's
from bindkit.tasks.pairs._aro_order import caption_options as caption_options
from bindkit.tasks.pairs._aro_order import nltk_tokenize as nltk_tokenize
from bindkit.tasks.pairs._aro_order import spacy_model as spacy_model
from bindkit.tasks.pairs._aro_order import spacy_tag as spacy_tag
from bindkit.tasks.pairs._base import prefers_positive

VG_FILES = {
    "vg_relation": "visual_genome_relation.json",
    "vg_attribution": "visual_genome_attribution.json",
}
FILES = {**VG_FILES, **order.FILES}
MIN_ATTRIBUTE_ITEMS = 25
SYMMETRIC = frozenset(
    """adjusting|attached to|between|bigger than|biting|boarding|brushing|chewing|cleaning|
    climbing|close to|coming from|coming out of|contain|crossing|dragging|draped over|drinking|
    drinking from|driving|driving down|driving on|eating from|eating in|enclosing|exiting|facing|
    filled with|floating in|floating on|flying|flying above|flying in|flying over|flying through|
    full of|going down|going into|going through|grazing in|growing in|growing on|guiding|
    hanging from|hanging in|hanging off|hanging over|higher than|holding onto|hugging|in between|
    jumping off|jumping on|jumping over|kept in|larger than|leading|leaning over|leaving|licking|
    longer than|looking in|looking into|looking out|looking over|looking through|lying next to|
    lying on top of|making|mixed with|mounted on|moving|on the back of|on the edge of|
    on the front of|on the other side of|opening|painted on|parked at|parked beside|parked by|
    parked in|parked in front of|parked near|parked next to|perched on|petting|piled on|playing|
    playing in|playing on|playing with|pouring|reaching for|reading|reflected on|riding on|
    running in|running on|running through|seen through|sitting behind|sitting beside|sitting by|
    sitting in front of|sitting near|sitting next to|sitting under|skiing down|skiing on|
    sleeping in|sleeping on|smiling at|sniffing|splashing|sprinkled on|stacked on|
    standing against|standing around|standing behind|standing beside|standing in front of|
    standing near|standing next to|staring at|stuck in|surrounding|swimming in|swinging|
    talking to|topped with|touching|traveling down|traveling on|tying|typing on|underneath|
    wading in|waiting for|walking across|walking by|walking down|walking next to|
    walking through|working in|working on|worn on|wrapped around|wrapped in|by|of|near|next to|
    with|beside|on the side of|around""".replace("\n", "")
    .replace("    ", "")
    .split("|")
)
FIELDS = ("image_path", "true_caption", "false_caption")


def read_vg(path: Path, subset: str) -> list[dict[str, Any]]:
    rows = read_json(path, f"ARO's published {path.name}")
    if not isinstance(rows, list) or not rows:
        raise DataFormatError(f"{path}: expected a non-empty list of items")
    for number, row in enumerate(rows):
        where = f"{path}: item {number}"
        if not isinstance(row, dict):
            raise DataFormatError(f"{where}: must be an object")
        for key in FIELDS:
            if not isinstance(row.get(key), str):
                raise DataFormatError(f"{where}: field {key!r} must be a string")
        for key in ("bbox_x", "bbox_y", "bbox_w", "bbox_h"):
            if not isinstance(row.get(key), int | float):
                raise DataFormatError(f"{where}: field {key!r} must be a number")
        group = row.get("relation_name") if subset == "vg_relation" else row.get("attributes")
        if subset == "vg_relation" and not isinstance(group, str):
            raise DataFormatError(f"{where}: field 'relation_name' must be a string")
        if subset == "vg_attribution" and not (isinstance(group, list) and len(group) >= 2):
            raise DataFormatError(f"{where}: field 'attributes' must be a list of two")
    return rows


def group_of(row: dict[str, Any], subset: str) -> str:
    if subset == "vg_relation":
        return str(row["relation_name"])
    return f"{row['attributes'][0]}_{row['attributes'][1]}"


def macro_accuracy(
    correct: np.ndarray, groups: list[str], subset: str
) -> tuple[float, dict[str, float]]:
    """The original's macro average and the per-group accuracies it averages."""
    labels = np.array(groups)
    per_group = {}
    for g in sorted(set(groups)):
        mask = labels == g
        if subset == "vg_relation" and g in SYMMETRIC:
            continue
        if subset == "vg_attribution" and mask.sum() < MIN_ATTRIBUTE_ITEMS:
            continue
        per_group[g] = float(correct[mask].mean())
    mean = float(np.mean(list(per_group.values()))) if per_group else float("nan")
    return mean, per_group


@dataclass
class AROData:
    vg: dict[str, list[dict[str, Any]]]
    order: dict[str, list[tuple[str, list[str]]]]  # subset -> (image, captions) per item
    folder: Path
    image_root: Path | None  # --image-root, if given
    # caption options by (subset, seed, sentence split), built once and shared by every model
    options: dict[tuple[str, int, bool], list[tuple[str, ...]]] = field(default_factory=dict)


class ARO(Task):
    metadata = TaskMetadata(
        name="aro",
        description="ARO: VG-Relation / VG-Attribution (true vs swapped caption for a cropped "
        "image) and COCO / Flickr30k-Order (caption vs four word-order shuffles)",
        main_score="accuracy",
        scores=("accuracy_micro",),
        reference="Yuksekgonul et al., ICLR 2023; github.com/mertyg/vision-language-models-are-bows"
        " (dataset_zoo/aro_datasets.py, dataset_zoo/perturbations.py)",
        subsets=tuple(FILES),
        modalities=("text", "image"),
        pairings=("it",),
        ties={**dict.fromkeys(VG_FILES, "wrong"), **dict.fromkeys(order.FILES, "correct")},
        license="see the repository (Visual Genome images: CC BY 4.0; COCO: CC BY 4.0; "
        "Flickr30k: its own terms)",
        published="https://github.com/mertyg/vision-language-models-are-bows (annotation JSONs, "
        "vgr_vga_images.zip; the order subsets use BLIP's Karpathy test splits)",
        data_dir="aro",
        data_help="the folder of visual_genome_relation.json, visual_genome_attribution.json, "
        "images/, and for the order subsets coco_karpathy_test.json with val2014/ and "
        "flickr30k_test.json with flickr30k-images/ (any of them)",
        fetchable=True,
    )
    tie_rules = TIE_RULES

    def __init__(self, order_seed: int = order.DEFAULT_SEED) -> None:
        if isinstance(order_seed, bool) or not isinstance(order_seed, int) or order_seed < 0:
            raise BindkitError(f"aro order_seed {order_seed!r}: give a non-negative integer")
        self.order_seed = order_seed

    def options(self, subset: str) -> dict[str, Any]:
        if subset not in order.FILES:
            return {}
        return {"order_seed": self.order_seed, **order.tools()}

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        if not data.is_dir():
            raise DataFormatError(f"{data}: not a folder; pass {self.metadata.data_help}")
        present = [s for s in FILES if (data / FILES[s]).is_file()]
        if not present:
            names = ", ".join(FILES.values())
            raise DataFormatError(
                f"{data}: none of {names} found (e.g. {data / FILES['vg_relation']}); ARO is "
                f"published at {self.metadata.published}; coco_karpathy_test.json at "
                f"{order.PUBLISHED['coco_order']}, flickr30k_test.json at "
                f"{order.PUBLISHED['flickr30k_order']}"
            )
        vg = {s: read_vg(data / FILES[s], s) for s in present if s in VG_FILES}
        karpathy = {s: order.read_karpathy(data / FILES[s], s) for s in present if s in order.FILES}
        digest = sha256_bytes(b"".join((data / FILES[s]).read_bytes() for s in present))
        payload = AROData(vg, karpathy, data, image_root)
        return Dataset("aro", digest, str(data), payload, tuple(present), has_images=True)

    def missing_subset(self, subset: str, dataset: Dataset) -> str | None:
        data: AROData = dataset.payload
        where = order.PUBLISHED.get(subset, self.metadata.published)
        return f"{data.folder / FILES[subset]} not found; {subset} is published at {where}"

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        data: AROData = dataset.payload
        if subset in order.FILES:
            return self._evaluate_order(embedder, data, subset, ctx)
        rows = data.vg[subset]
        root = _images.image_root(data.folder, data.image_root)
        mask = _images.present(
            [r["image_path"] for r in rows], root, f"aro {subset}", self.metadata.published, ctx
        )
        numbers = [str(k) for k, ok in enumerate(mask) if ok]  # the item's place in the file
        rows = [r for r, ok in zip(rows, mask, strict=True) if ok]
        if not rows:
            return None
        from bindkit.embed.images import ImagePolicy, load_image

        assert root is not None
        raw = ImagePolicy(exif=False)  # the original crops the stored pixels (no EXIF rotation)
        crops = [
            load_image(root / r["image_path"], raw).crop(
                (r["bbox_x"], r["bbox_y"], r["bbox_x"] + r["bbox_w"], r["bbox_y"] + r["bbox_h"])
            )
            for r in rows
        ]
        images = embedder.embed_images(
            crops, role="query", instruction=self.query_instruction(subset, ctx)
        )
        texts = embedder.embed_texts(
            [r["true_caption"] for r in rows] + [r["false_caption"] for r in rows],
            role="document",
            instruction=self.document_instruction(subset, ctx),
        )
        n = len(rows)
        correct = prefers_positive(images, texts[:n], texts[n:], self.metadata.tie_rule(subset))
        macro, per_group = macro_accuracy(correct, [group_of(r, subset) for r in rows], subset)
        scores = {
            "accuracy": macro,
            "accuracy_micro": float(correct.mean()),
            "accuracy_by": per_group,
        }
        counts = {
            "items": len(mask),
            "scored": n,
            "missing_images": int((~mask).sum()),
            "groups_averaged": len(per_group),
        }
        # the main score is the macro average over groups; per-query credit is the micro one's
        per_query = {"metric": "correct", "ids": numbers, "values": correct.tolist()}
        return {"scores": scores, "counts": counts, "per_query": per_query}

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        """VG-Relation's per-relation and VG-Attribution's per-attribute-pair accuracy: the
        groups the macro score averages (rows), one column per model."""
        from bindkit.records.fields import group_by_data

        tables = []
        for data_name, group in group_by_data(records):
            for subset in VG_FILES:
                found = [r for r in group if r.get("subset") == subset]
                per = {label(r): as_dict(r["scores"].get("accuracy_by")) for r in found}
                names = sorted({g for values in per.values() for g in values})
                if not names:
                    continue
                rows = [[g, *(pct(per[m].get(g)) for m in per)] for g in names]
                what = "relation" if subset == "vg_relation" else "attribute pair"
                title = f"aro ({data_name}) {subset} accuracy per {what} (%)"
                tables.append(Table(title, [what, *per], rows))
        return tables

    def caption_options(self, data: AROData, subset: str) -> list[tuple[str, ...]]:
        """Every caption's five options for this task's seed, built once per dataset."""
        split = order.sentence_split_available()
        key = (subset, self.order_seed, split)
        if key not in data.options:
            captions = [c for _, caps in data.order[subset] for c in caps]
            bar = progress(len(captions), f"aro {subset} shuffles", unit="caption")
            data.options[key] = order.caption_options(
                captions,
                self.order_seed,
                order.spacy_tag,
                lambda caption: order.nltk_tokenize(caption, split),
                on_caption=lambda: bar.update(1),
            )
            bar.close()
        return data.options[key]

    def _evaluate_order(
        self, embedder: Embedder, data: AROData, subset: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        items = data.order[subset]
        options = self.caption_options(data, subset)  # all captions: the draws follow file order
        item_image = [image for image, captions in items for _ in captions]
        names = list(dict.fromkeys(image for image, _ in items))
        root = data.image_root if data.image_root is not None else data.folder
        mask = _images.present(names, root, f"aro {subset}", order.IMAGES[subset], ctx)
        found = [n for n, ok in zip(names, mask, strict=True) if ok]
        counts = {
            "items": len(item_image),
            "images": len(names),
            "missing_images": int((~mask).sum()),
        }
        where = {n: i for i, n in enumerate(found)}
        keep = [i for i, image in enumerate(item_image) if image in where]
        if not keep:
            return None
        # one text per token sequence: options that tokenise alike tie exactly, as in the original
        first: dict[tuple[str, ...], str] = {}
        for i in keep:
            for text in options[i]:
                first.setdefault(order.token_key(text), text)
        texts = list(first.values())
        at_key = {key: i for i, key in enumerate(first)}
        text_at = {t: at_key[order.token_key(t)] for i in keep for t in options[i]}
        image_vectors = embedder.embed_images(
            _images.refs(found, root), role="query", instruction=self.query_instruction(subset, ctx)
        )
        text_vectors = embedder.embed_texts(
            texts, role="document", instruction=self.document_instruction(subset, ctx)
        )
        image_index = np.array([where[item_image[i]] for i in keep])
        option_index = np.array([[text_at[t] for t in options[i]] for i in keep])
        scores = order.order_scores(image_vectors, text_vectors, image_index, option_index)
        correct = order.score_order(scores, self.metadata.tie_rule(subset))
        counts["scored"] = len(keep)
        counts["same_as_caption"] = int((option_index[:, 1:] == option_index[:, :1]).any(1).sum())
        # ids: the caption's place among all captions of the split, in file order
        per_query = {"metric": "correct", "ids": [str(i) for i in keep], "values": correct.tolist()}
        return {
            "scores": {"accuracy": float(correct.mean())},
            "counts": counts,
            "per_query": per_query,
        }
