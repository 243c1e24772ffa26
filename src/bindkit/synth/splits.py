"""Hold out the deferred_bind types, split the rest 80/10/10, and write triplets.

Each example yields two triplets, one per hard negative:
``{"query", "positive", "negative", "type", "negative_kind"}``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_bytes, atomic_write_text, jsonl_bytes
from bindkit.errors import DataFormatError
from bindkit.saber.io import iter_lines
from bindkit.synth.controls import controls
from bindkit.synth.example import Example


def read_examples(path: str | Path) -> list[Example]:
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; run `bindkit synth generate` first")
    return [Example.from_json(obj, f"{path}:{n}") for n, obj in iter_lines(path)]


def saber_words(vocab_dir: str | Path | None) -> set[str]:
    """Every attribute name and object word of a SABER vocabulary (None: the packaged one)."""
    from bindkit.saber.vocab import load_vocabulary

    vocab = load_vocabulary(vocab_dir)
    return {a.name for a in vocab.attributes} | {w for o in vocab.objects for w in o.split()}


def no_overlap(examples: Iterable[Example], words: set[str]) -> list[Example]:
    """The NoOverlap filter: drop examples sharing any attribute or object with ``words``."""
    return [ex for ex in examples if not ex.vocabulary() & words]


def triplets(examples: Iterable[Example]) -> list[dict[str, Any]]:
    return [
        {
            "query": ex.query,
            "positive": ex.positive,
            "negative": ex.negatives[kind],
            "type": ex.type,
            "negative_kind": kind,
        }
        for ex in examples
        for kind in ("attribute", "object")
    ]


def split(examples: list[Example], seed: int = 0) -> dict[str, list[Example]]:
    """train/val/test (80/10/10 of the non-held-out types) plus one held-out set per held-out
    type, deterministic for a seed."""
    cfg = controls()["splits"]
    heldout = {t: [ex for ex in examples if ex.type == t] for t in cfg["heldout"]}
    rest = sorted((ex for ex in examples if ex.type not in heldout), key=lambda ex: ex.id)
    random.Random(f"{seed}/split").shuffle(rest)
    n_train = round(cfg["train"] * len(rest))
    n_val = round(cfg["val"] * len(rest))
    out = {
        "train": rest[:n_train],
        "val": rest[n_train : n_train + n_val],
        "test": rest[n_train + n_val :],
    }
    out.update({f"heldout_{t}": v for t, v in heldout.items()})
    return out


def write_splits(
    directory: str | Path, *, seed: int = 0, exclude_vocab: set[str] | None = None
) -> dict[str, int]:
    """Read ``DIR/examples.jsonl`` and write ``DIR/<split>.jsonl`` triplet files atomically.

    Returns the number of triplets per file.
    """
    directory = Path(directory)
    examples = read_examples(directory / "examples.jsonl")
    if exclude_vocab:
        examples = no_overlap(examples, exclude_vocab)
    counts = {}
    for name, group in split(examples, seed).items():
        rows = triplets(group)
        atomic_write_bytes(directory / f"{name}.jsonl", jsonl_bytes(rows))
        counts[name] = len(rows)
    summary = {
        "examples": len(examples),
        "triplets": counts,
        "seed": seed,
        "no_overlap": bool(exclude_vocab),
    }
    atomic_write_text(directory / "splits.json", json.dumps(summary, indent=2) + "\n")
    return counts
