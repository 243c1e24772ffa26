"""Triplet accuracy: rows {"query", "positive", "negative", ...} in a JSONL file.

Accuracy is the fraction with cos(query, positive) > cos(query, negative), strictly (a tie counts
wrong). Every other string field ("type", "negative_kind", ...) gives a per-value breakdown.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_file
from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.correlation import triplet_accuracy
from bindkit.saber.io import iter_lines
from bindkit.tasks.base import Dataset

FIELDS = ("query", "positive", "negative")


def read_triplets(path: str | Path) -> list[dict[str, Any]]:
    """Read and check a triplet JSONL file; errors name the file and line."""
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(
            f"{path}: not found; pass a JSONL file of query/positive/negative rows"
        )
    rows = []
    for lineno, row in iter_lines(path):
        where = f"{path}:{lineno}"
        if not isinstance(row, dict):
            raise DataFormatError(f"{where}: a row must be a JSON object")
        for key in FIELDS:
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise DataFormatError(f"{where}: field {key!r} must be a non-empty string")
        rows.append(row)
    if not rows:
        raise DataFormatError(f"{path}: no triplets found")
    return rows


class TripletTask:
    name = "triplets"
    description = "triplet accuracy: cos(q, positive) > cos(q, negative)"

    def load(self, data: str | None) -> Dataset:
        if data is None:
            raise DataFormatError("--task triplets needs --data FILE.jsonl")
        return Dataset(Path(data).stem, sha256_file(Path(data)), str(data), read_triplets(data))

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
        rows: list[dict[str, Any]] = dataset.payload
        q = embedder.embed_texts(
            [r["query"] for r in rows], role="query", instruction=query_instruction
        )
        docs = embedder.embed_texts(
            [r["positive"] for r in rows] + [r["negative"] for r in rows], role="document"
        )
        p, n = docs[: len(rows)], docs[len(rows) :]
        return score_triplets(rows, np.einsum("nd,nd->n", q, p), np.einsum("nd,nd->n", q, n))


def score_triplets(
    rows: list[dict[str, Any]], positive: np.ndarray, negative: np.ndarray
) -> dict[str, Any]:
    correct = positive > negative
    groups: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for i, row in enumerate(rows):
        for key, value in row.items():
            if key not in FIELDS and isinstance(value, str):
                groups[key][value].append(i)
    breakdown = {
        key: {value: float(correct[idx].mean()) for value, idx in sorted(values.items())}
        for key, values in sorted(groups.items())
        if len(values) <= 100  # a free-text field is no category
    }
    scores: dict[str, Any] = {"triplet_accuracy": triplet_accuracy(positive, negative)}
    if breakdown:
        scores["triplet_accuracy_by"] = breakdown
    return {"scores": scores, "counts": {"triplets": len(rows)}}
