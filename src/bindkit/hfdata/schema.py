"""Typed features of each export and the row conversions both ways (pure functions).

SABER: one row per MCQ; ``bindings`` as ``[{attribute, object}]``, ``realizations`` as
``[{attribute, text, slots: [{slot, value}]}]`` (a list keeps the file's order), ``kind`` a
``ClassLabel``, each item's image as an ``Image`` (bytes embedded) beside ``image_file``, the
path relative to the SABER directory. Triplets: the split files' rows, ``type``,
``negative_kind`` and ``format`` as ``ClassLabel``. Clusters: ``anchor``, ``task``, ``phase``
and ``pairs``, whose struct is the union of the input rows' keys with one type each.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bindkit.errors import DataFormatError
from bindkit.saber.io import KINDS, MCQ, ROLES, Item

if TYPE_CHECKING:
    import datasets

NEGATIVE_KINDS = ("attribute", "object")


def _item_features(decode: bool) -> dict[str, Any]:
    from datasets import ClassLabel, Image, List, Value

    return {
        "id": Value("string"),
        "role": ClassLabel(names=list(ROLES)),
        "bindings": List({"attribute": Value("string"), "object": Value("string")}),
        "text": Value("string"),
        "generation_text": Value("string"),
        "image_prompt": Value("string"),
        "flip": Value("bool"),
        "image_file": Value("string"),
        "image": Image(decode=decode),
    }


def saber_features(decode: bool = True) -> datasets.Features:
    """Features of a SABER export; ``decode=False`` yields image bytes instead of PIL images."""
    from datasets import ClassLabel, Features, List, Value

    item = _item_features(decode)
    return Features(
        {
            "id": Value("string"),
            "n": Value("int32"),
            "kind": ClassLabel(names=list(KINDS)),
            "chain": Value("string"),
            "step": Value("int32"),
            "query": item,
            "candidates": List(item),
            "realizations": List(
                {
                    "attribute": Value("string"),
                    "text": Value("string"),
                    "slots": List({"slot": Value("string"), "value": Value("string")}),
                }
            ),
        }
    )


def item_row(item: Item, image: bytes | None) -> dict[str, Any]:
    return {
        "id": item.id,
        "role": ROLES.index(item.role),
        "bindings": [{"attribute": a, "object": o} for a, o in item.bindings],
        "text": item.text,
        "generation_text": item.generation_text,
        "image_prompt": item.image_prompt,
        "flip": item.flip,
        "image_file": item.image,
        "image": None if image is None else {"bytes": image, "path": item.image},
    }


def mcq_row(mcq: MCQ, image: Callable[[Item], bytes | None]) -> dict[str, Any]:
    """One export row of ``mcq``; ``image(item)`` gives an item's image file bytes (or None)."""
    return {
        "id": mcq.id,
        "n": mcq.n,
        "kind": KINDS.index(mcq.kind),
        "chain": mcq.chain,
        "step": mcq.step,
        "query": item_row(mcq.query, image(mcq.query)),
        "candidates": [item_row(c, image(c)) for c in mcq.candidates],
        "realizations": [
            {
                "attribute": attribute,
                "text": r.text,
                "slots": [{"slot": k, "value": v} for k, v in r.slots.items()],
            }
            for attribute, r in mcq.realizations.items()
        ],
    }


def _item_json(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "id": row["id"],
        "role": ROLES[row["role"]],
        "bindings": [[b["attribute"], b["object"]] for b in row["bindings"]],
        "text": row["text"],
        "generation_text": row["generation_text"],
        "image_prompt": row["image_prompt"],
        "flip": row["flip"],
        "image": row["image_file"],
    }


def mcq_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """The ``saber.jsonl`` object of an export row (the inverse of :func:`mcq_row`)."""
    return {
        "id": row["id"],
        "n": row["n"],
        "kind": KINDS[row["kind"]],
        "chain": row["chain"],
        "step": row["step"],
        "query": _item_json(row["query"]),
        "candidates": [_item_json(c) for c in row["candidates"]],
        "realizations": {
            r["attribute"]: {
                "text": r["text"],
                "slots": {s["slot"]: s["value"] for s in r["slots"]},
            }
            for r in row["realizations"]
        },
    }


def row_images(row: Mapping[str, Any]) -> dict[str, bytes]:
    """The image bytes an export row carries, by ``image_file`` (rows read with decode off)."""
    out = {}
    for item in (row["query"], *row["candidates"]):
        if item["image_file"] is not None and item["image"] is not None:
            out[item["image_file"]] = item["image"]["bytes"]
    return out


# -- triplets ---------------------------------------------------------------------------------
def triplet_features(rows: Sequence[Mapping[str, Any]]) -> datasets.Features:
    """Features of a split file's rows: texts as strings, the categorical fields as labels."""
    from datasets import ClassLabel, Features, Value

    from bindkit.synth.constructions import CONSTRUCTIONS
    from bindkit.synth.splits import FORMATS

    labels = {"type": list(CONSTRUCTIONS), "negative_kind": list(NEGATIVE_KINDS)}
    labels["format"] = list(FORMATS)
    keys = list(rows[0]) if rows else ["query", "positive", "negative"]
    features = {}
    for key in keys:
        features[key] = ClassLabel(names=labels[key]) if key in labels else Value("string")
    return Features(features)


TRAINER_COLUMNS = ("query", "positive", "negative")


def trainer_features() -> datasets.Features:
    """The columns a trainer takes as (anchor, positive, negative), all text."""
    from datasets import Features, Value

    return Features({key: Value("string") for key in TRAINER_COLUMNS})


def trainer_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Rows cut to :data:`TRAINER_COLUMNS`, in that order."""
    return [{key: row[key] for key in TRAINER_COLUMNS} for row in rows]


def encode_triplets(
    rows: Sequence[Mapping[str, Any]], features: datasets.Features, where: str
) -> list[dict[str, Any]]:
    """Rows with label fields as class indices; every row must have the first row's keys."""
    from datasets import ClassLabel

    out = []
    for number, row in enumerate(rows, start=1):
        if list(row) != list(features):
            raise DataFormatError(
                f"{where}:{number}: keys {list(row)} differ from the first row's "
                f"{list(features)}; rewrite the split set (`bindkit synth split`)"
            )
        encoded = dict(row)
        for key, feature in features.items():
            if isinstance(feature, ClassLabel):
                if row[key] not in feature.names:
                    raise DataFormatError(
                        f"{where}:{number}: {key} {row[key]!r} is none of {feature.names}"
                    )
                encoded[key] = feature.str2int(row[key])
        out.append(encoded)
    return out


def decode_rows(
    rows: Sequence[Mapping[str, Any]], features: datasets.Features
) -> list[dict[str, Any]]:
    """Rows with class indices turned back into their names (the inverse of the encoders)."""
    from datasets import ClassLabel

    names = {k: f.names for k, f in features.items() if isinstance(f, ClassLabel)}
    return [{k: names[k][v] if k in names else v for k, v in row.items()} for row in rows]


# -- clusters ---------------------------------------------------------------------------------
_VALUE_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "bool"),
    (int, "int64"),
    (float, "float64"),
    (str, "string"),
)


def _value_type(value: Any) -> str | None:
    for kind, name in _VALUE_TYPES:  # bool before int: bool is an int subclass
        if isinstance(value, kind):
            return name
    return None


def cluster_features(records: Sequence[Mapping[str, Any]], where: str) -> datasets.Features:
    """Features of a clusters file: the pairs' struct holds every key any row has, each with
    the one scalar type its values share (None allowed)."""
    from datasets import Features, List, Value

    types: dict[str, str] = {}
    for number, record in enumerate(records, start=1):
        for pair in record["pairs"]:
            for key, value in pair.items():
                if value is None:
                    types.setdefault(key, "null")
                    continue
                kind = _value_type(value)
                if kind is None:
                    raise DataFormatError(
                        f"{where}:{number}: pair field {key!r} holds a {type(value).__name__}; "
                        "only strings, numbers and booleans export"
                    )
                if types.get(key, "null") not in ("null", kind):
                    raise DataFormatError(
                        f"{where}:{number}: pair field {key!r} is {kind} here and "
                        f"{types[key]} elsewhere; give it one type in the mining input"
                    )
                types[key] = kind
    pair = {k: Value("string" if t == "null" else t) for k, t in types.items()}
    return Features(
        {
            "anchor": Value("string"),
            "task": Value("string"),
            "phase": Value("int32"),
            "pairs": List(pair),
        }
    )


def cluster_json(row: Mapping[str, Any]) -> dict[str, Any]:
    """A clusters line from an export row: a pair's keys that were absent (None) are dropped."""
    return {
        "anchor": row["anchor"],
        "task": row["task"],
        "phase": row["phase"],
        "pairs": [{k: v for k, v in p.items() if v is not None} for p in row["pairs"]],
    }
