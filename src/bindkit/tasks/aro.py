"""ARO (Yuksekgonul et al., ICLR 2023; mertyg/vision-language-models-are-bows): VG-Relation and
VG-Attribution. Each item is an image cropped to its bounding box and two captions,
``[false_caption, true_caption]``; correct when ``argmax == 1``, so a tie (argmax picks index 0)
is wrong.

Macro averages as the original code reports them: VG-Relation averages per-relation accuracy
over the relations not in the repository's list of symmetric relations (its README snippet);
VG-Attribution averages per-attribute-pair accuracy over pairs with at least 25 items.

Files as published: ``visual_genome_relation.json`` and ``visual_genome_attribution.json`` (lists
of ``image_path``, ``bbox_x/y/w/h``, ``true_caption``, ``false_caption`` and ``relation_name``
or ``attributes``) and ``images/`` (``vgr_vga_images.zip``). COCO-Order and Flickr30k-Order are
not here yet: their caption shuffles need spaCy's English tagger, as the original builds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_bytes
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.pairwise import beats, rowdot
from bindkit.tasks import _images
from bindkit.tasks._files import read_json
from bindkit.tasks.base import Dataset, EvalContext, Task, TaskMetadata

FILES = {
    "vg_relation": "visual_genome_relation.json",
    "vg_attribution": "visual_genome_attribution.json",
}
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


class ARO(Task):
    metadata = TaskMetadata(
        name="aro",
        description="ARO VG-Relation / VG-Attribution: true vs swapped caption for a cropped image",
        main_score="accuracy",
        reference="Yuksekgonul et al., ICLR 2023; github.com/mertyg/vision-language-models-are-bows"
        " (dataset_zoo/aro_datasets.py)",
        subsets=tuple(FILES),
        modalities=("text", "image"),
        pairings=("it",),
        ties="wrong",
        license="see the repository (Visual Genome images: CC BY 4.0)",
        published="https://github.com/mertyg/vision-language-models-are-bows (annotation JSONs, "
        "vgr_vga_images.zip)",
        data_dir="aro",
        data_help="the folder of visual_genome_relation.json, visual_genome_attribution.json, "
        "images/",
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        if not data.is_dir():
            raise DataFormatError(f"{data}: not a folder; pass {self.metadata.data_help}")
        present = [s for s in FILES if (data / FILES[s]).is_file()]
        if not present:
            raise DataFormatError(
                f"{data / FILES['vg_relation']}: not found; ARO is published at "
                f"{self.metadata.published}"
            )
        rows = {s: read_vg(data / FILES[s], s) for s in present}
        digest = sha256_bytes(b"".join((data / FILES[s]).read_bytes() for s in present))
        root = _images.image_root(data, image_root)
        return Dataset("aro", digest, str(data), (rows, root), tuple(present), has_images=True)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        all_rows, root = dataset.payload
        rows = all_rows[subset]
        mask = _images.present(
            [r["image_path"] for r in rows], root, f"aro {subset}", self.metadata.published, ctx
        )
        rows = [r for r, ok in zip(rows, mask, strict=True) if ok]
        if not rows:
            return None
        from bindkit.embed.images import load_image

        crops = [
            load_image(root / r["image_path"]).crop(
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
            instruction=self.metadata.document_instruction,
        )
        n = len(rows)
        correct = beats(rowdot(images, texts[:n]), rowdot(images, texts[n:]), "wrong")
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
        return {"scores": scores, "counts": counts}
