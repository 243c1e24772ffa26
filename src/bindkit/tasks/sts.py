"""STS: Spearman correlation between cosine similarity and gold scores (a general-quality guard).

Reads the SICK format (tab-separated with ``sentence_A``, ``sentence_B``, ``relatedness_score``)
and plain CSV/TSV/JSONL files with two text columns and a score column under common names.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_file
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.correlation import spearman
from bindkit.tasks.base import Dataset

FIRST = ("sentence_A", "sentence1", "text_a", "text1", "s1")
SECOND = ("sentence_B", "sentence2", "text_b", "text2", "s2")
SCORE = ("relatedness_score", "score", "similarity", "label", "gold")


def _pick(columns: list[str], names: tuple[str, ...], path: Path, what: str) -> str:
    for name in names:
        if name in columns:
            return name
    raise DataFormatError(
        f"{path}: no {what} column; name it one of {', '.join(names)} (found {', '.join(columns)})"
    )


def read_sts(path: str | Path) -> tuple[list[str], list[str], np.ndarray]:
    """(first texts, second texts, gold scores) from SICK, CSV, TSV or JSONL."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; pass a SICK/CSV/TSV/JSONL file of scored pairs")
    if path.suffix == ".jsonl":
        records = []
        for lineno, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            if line.strip():
                try:
                    records.append(json.loads(line))
                except json.JSONDecodeError as exc:
                    raise DataFormatError(f"{path}:{lineno}: corrupt JSON ({exc.msg})") from exc
    else:
        text = path.read_text("utf-8")
        delimiter = "\t" if "\t" in text.splitlines()[0] else ","
        records = list(csv.DictReader(text.splitlines(), delimiter=delimiter))
    if not records:
        raise DataFormatError(f"{path}: no rows found")
    columns = list(records[0])
    a, b = _pick(columns, FIRST, path, "first-text"), _pick(columns, SECOND, path, "second-text")
    s = _pick(columns, SCORE, path, "score")
    first, second, gold = [], [], []
    for row_number, row in enumerate(records, start=2 if path.suffix != ".jsonl" else 1):
        try:
            gold.append(float(row[s]))
        except (TypeError, ValueError) as exc:
            raise DataFormatError(
                f"{path}: row {row_number}: score {row.get(s)!r} is not a number"
            ) from exc
        first.append(str(row[a]))
        second.append(str(row[b]))
    return first, second, np.asarray(gold)


class STSTask:
    name = "sts"
    description = "Spearman of cosine similarity with gold relatedness (e.g. SICK)"

    def load(self, data: str | None) -> Dataset:
        if data is None:
            raise DataFormatError("--task sts needs --data FILE (SICK, CSV, TSV or JSONL)")
        return Dataset(Path(data).stem, sha256_file(Path(data)), str(data), read_sts(data))

    def pairings(self, dataset: Dataset, embedder: Embedder) -> list[str]:
        return ["tt"]

    def evaluate(
        self,
        embedder: Embedder,
        dataset: Dataset,
        pairing: str,
        *,
        query_instruction: str | None = None,
    ) -> dict[str, Any]:
        first, second, gold = dataset.payload
        vectors = embedder.embed_texts(first + second, role="query", instruction=query_instruction)
        cosine = np.einsum("nd,nd->n", vectors[: len(first)], vectors[len(first) :])
        return {"scores": {"spearman": spearman(cosine, gold)}, "counts": {"pairs": len(gold)}}
