"""MMEB-V2's image datasets (MMEB_Test_Instruct rows; every ranking is over the row's own
candidates): their readers, after VLM2Vec's image loaders, and :data:`IMAGE_SOURCES`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from bindkit.errors import DataFormatError
from bindkit.tasks.mmeb._base import META_TASKS
from bindkit.tasks.mmeb._mmeb_v2_files import Input, Query, Source, Split

IMAGE_TOKEN = "<|image_1|>"
IMAGE_COLUMNS = ("qry_inst", "qry_text", "qry_img_path", "tgt_inst", "tgt_text", "tgt_img_path")


def after_token(instruction: str, text: str | None = None) -> str:
    """What follows the token in ``process_input_text(instruction, text=text,
    add_image_token=True)`` (or ``add_video_token``): ``" " + instruction [+ " " + text]``."""
    return " " + (f"{instruction} {text}" if text else instruction)


def _vlm2vec_v1(instruction: str, text: str | None = None) -> str:
    """The image loaders' ``process_input_text(...).replace(" \\n", "\\n")`` after the token
    (the replace also joins the token's space to a leading newline)."""
    return (BARE_IMAGE + after_token(instruction, text)).replace(" \n", "\n")[len(BARE_IMAGE) :]


BARE_IMAGE = "<|image_pad|>"  # VLM2Vec's Qwen2-VL image token, only to compose the replace


def _image_query(row: dict[str, Any], newline_first: bool) -> Input:
    """``process_input_text(inst, text=qry_text, add_image_token=True)`` (then the replace and
    ``+ "\\n"``) without the token; ``text`` is the same, stripped."""
    inst = str(row["qry_inst"] or "").replace(IMAGE_TOKEN, "")
    if newline_first:  # image_qa and image_i2i_vg: "\n" + inst.strip()
        inst = "\n" + inst.strip()
    text = f"{inst} {row['qry_text']}" if row["qry_text"] else inst
    path = f"image-tasks/{row['qry_img_path']}"
    exact = _vlm2vec_v1(inst, row["qry_text"] or None) + "\n"
    return Input("image", text.replace(" \n", "\n").strip(), path, exact=exact)


def _target_texts(row: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    """(plain, exact) per candidate image: the instruction with the caption (WebQA, EDIS,
    RefCOCO-Matching) and a final newline, or the instruction alone, with the newline for
    image_t2i and without it for image_i2i_vg (``image_i2i_vg_dataset.py``)."""
    inst = str(row["tgt_inst"] or "").replace(IMAGE_TOKEN, "")
    captions = [str(c or "") for c in row["tgt_text"]]
    if captions and captions[0].strip():  # WebQA, EDIS, RefCOCO-Matching: instruction + caption
        return [
            (f"{inst} {c}".replace(" \n", "\n").strip(), _vlm2vec_v1(f"{inst} {c}", "") + "\n")
            for c in captions
        ]
    exact = _vlm2vec_v1(inst, "") + ("\n" if kind == "t2i" else "")
    return [(inst.replace(" \n", "\n").strip(), exact)] * len(row["tgt_img_path"])


def check_image_row(row: dict[str, Any], kind: str, where: str) -> None:
    """The types MMEB_Test_Instruct publishes: instructions and texts strings (or null), the
    candidate lists lists, and a query image path where the query is an image; anything else
    (a string where a list belongs is read letter by letter) is refused naming the row."""
    fix = "pass the file as published (huggingface.co/datasets/ziyjiang/MMEB_Test_Instruct)"
    for column in ("qry_inst", "qry_text", "tgt_inst"):
        if row[column] is not None and not isinstance(row[column], str):
            found = type(row[column]).__name__
            raise DataFormatError(
                f"{where}: field {column!r} must be a string (found {found}); {fix}"
            )
    for column in ("tgt_text", "tgt_img_path"):
        values = row[column]
        if not isinstance(values, list) or not all(v is None or isinstance(v, str) for v in values):
            found = type(values).__name__
            raise DataFormatError(
                f"{where}: field {column!r} must be a list of strings (found {found}); {fix}"
            )
    if kind != "t2i" and not (isinstance(row["qry_img_path"], str) and row["qry_img_path"]):
        raise DataFormatError(f"{where}: field 'qry_img_path' must name the query image; {fix}")


def _image_reader(kind: str) -> Callable[[Path, str, Source], Split]:
    def read(root: Path, name: str, source: Source) -> Split:
        split = Split([], {}, "local")
        for number, (where, row) in enumerate(source.located_rows(root, IMAGE_COLUMNS, name)):
            check_image_row(row, kind, where)
            targets = [str(t or "") for t in row["tgt_text"]]
            paths = [str(p or "") for p in row["tgt_img_path"]]
            if not targets:
                raise DataFormatError(f"{name} row {number}: tgt_text is empty")
            if kind in ("cls", "qa", "i2t"):
                query = _image_query(row, newline_first=kind == "qa")
                names = targets
                for t in targets:  # the candidate texts as published
                    split.add(t, Input("text", t))
            else:
                if kind == "t2i":  # image_t2i_eval: inst + " " + text + "\n" (VisDial "\n\n")
                    inst = str(row["qry_inst"] or "").replace(IMAGE_TOKEN, "")
                    text = f"{inst} {row['qry_text']}\n" + ("\n" if name == "VisDial" else "")
                    query = Input("text", text)
                    names = paths
                else:  # i2i_vg: the name is path + caption (several objects of one image)
                    query = _image_query(row, newline_first=True)
                    names = [f"{p}:{c.strip(chr(34))}" for p, c in zip(paths, targets, strict=True)]
                for n, p, (text, exact) in zip(names, paths, _target_texts(row, kind), strict=True):
                    split.add(n, Input("image", text, f"image-tasks/{p}", exact=exact))
            # the row number first: one image can be the query of several rows (VQA, VisDial)
            path = row["qry_img_path"]
            qid = f"{number}:{path}" if path else str(number)
            split.queries.append(Query(qid, query, tuple(names), (names[0],)))
        return split

    return read


def _image(kind: str) -> Source:
    return Source("ziyjiang/MMEB_Test_Instruct", None, "test", _image_reader(kind), "image-tasks")


IMAGE_KINDS = {
    **dict.fromkeys(META_TASKS["classification"], "cls"),  # MMEB v1's lists
    **dict.fromkeys(META_TASKS["vqa"], "qa"),
    **dict.fromkeys(("MSCOCO_i2t", "VisualNews_i2t"), "i2t"),
    **dict.fromkeys(
        ("VisDial", "MSCOCO_t2i", "VisualNews_t2i", "WebQA", "EDIS", "Wiki-SS-NQ"), "t2i"
    ),
    **dict.fromkeys(
        (
            "CIRR",
            "NIGHTS",
            "OVEN",
            "FashionIQ",
            "MSCOCO",
            "RefCOCO",
            "RefCOCO-Matching",
            "Visual7W-Pointing",
        ),
        "i2i_vg",
    ),
}

IMAGE_SOURCES: dict[str, Source] = {name: _image(kind) for name, kind in IMAGE_KINDS.items()}
