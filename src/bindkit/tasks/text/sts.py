"""STS: Spearman correlation between cosine similarity and gold scores (a general-quality guard).

Reads the SICK format (tab-separated with ``sentence_A``, ``sentence_B``, ``relatedness_score``)
and plain CSV/TSV/JSONL files with two text columns and a score column under common names.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.correlation import spearman
from bindkit.tasks._files import jsonl_rows, need_file, read_text
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.text._base import TextFileTask

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
    """(first texts, second texts, gold scores) from SICK, CSV, TSV or JSONL.

    Raises:
        DataFormatError: one line naming the file (and row) for a missing file, a non-UTF-8 or
            binary file, a row that is not an object or lacks a column, a gold score that is not
            a finite number, fewer than two rows, or constant gold scores (Spearman undefined).
    """
    path = need_file(Path(path), "a SICK/CSV/TSV/JSONL file of scored pairs")
    records: list[Any] = []
    if path.suffix == ".jsonl":
        numbered = list(jsonl_rows(path))
        records = [row for _lineno, row in numbered]
        numbers = [lineno for lineno, _row in numbered]
    else:
        lines = read_text(path).splitlines()
        if not lines:
            raise DataFormatError(f"{path}: empty file; pass a file of scored pairs with a header")
        delimiter = "\t" if "\t" in lines[0] else ","
        records = list(csv.DictReader(lines, delimiter=delimiter))
        numbers = list(range(2, len(records) + 2))
    if not records:
        raise DataFormatError(f"{path}: no rows found")
    for row, number in zip(records, numbers, strict=True):
        if not isinstance(row, dict):
            raise DataFormatError(f"{path}: row {number}: must be a JSON object with named fields")
    columns = list(records[0])
    a, b = _pick(columns, FIRST, path, "first-text"), _pick(columns, SECOND, path, "second-text")
    s = _pick(columns, SCORE, path, "score")
    first, second, gold = [], [], []
    for row, number in zip(records, numbers, strict=True):
        for key in (a, b, s):
            if row.get(key) is None:
                raise DataFormatError(f"{path}: row {number}: no {key!r} value; fill it in")
        try:
            value = float(row[s])
        except (TypeError, ValueError):
            raise DataFormatError(
                f"{path}: row {number}: score {row.get(s)!r} is not a number"
            ) from None
        if not math.isfinite(value):
            raise DataFormatError(f"{path}: row {number}: score {row[s]!r} is not finite")
        gold.append(value)
        first.append(str(row[a]))
        second.append(str(row[b]))
    if len(gold) < 2:
        raise DataFormatError(f"{path}: only one pair; Spearman needs at least two")
    if min(gold) == max(gold):
        raise DataFormatError(
            f"{path}: every gold score is {gold[0]}; Spearman is undefined for constant scores"
        )
    return first, second, np.asarray(gold)


class STSTask(TextFileTask):
    metadata = TaskMetadata(
        name="sts",
        description="Spearman of cosine similarity with gold relatedness (e.g. SICK)",
        main_score="spearman",
        version=2,  # 2: per-pair cosines and gold stored (paired intervals); scores unchanged
        reference="SICK (Marelli et al., 2014); seed 000 uses it as a general-quality guard",
        license="SICK: CC BY-NC-SA 3.0",
        published="https://github.com/brmson/dataset-sts (data/sts/sick2014)",
        data_help="a SICK/CSV/TSV/JSONL file of scored pairs",
        fetchable=True,
    )

    needs = "FILE (SICK, CSV, TSV or JSONL)"

    def read(self, path: Path) -> tuple[list[str], list[str], np.ndarray]:
        return read_sts(path)

    def halve(self, dataset: Dataset, half: str) -> Dataset:
        """Keyed by the pair's two sentences."""
        from bindkit.tasks._halves import check_half, half_of, halved

        chosen = check_half(half)
        first, second, gold = dataset.payload
        pairs = zip(first, second, strict=True)
        rows = [i for i, pair in enumerate(pairs) if half_of("\n".join(pair)) == chosen]
        payload = ([first[i] for i in rows], [second[i] for i in rows], gold[rows])
        return halved(dataset, payload, chosen)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any]:
        first, second, gold = dataset.payload
        vectors = embedder.embed_texts(
            first + second, role="query", instruction=self.query_instruction(subset, ctx)
        )
        cosine = np.einsum("nd,nd->n", vectors[: len(first)], vectors[len(first) :])
        ids = [str(i) for i in range(len(gold))]  # the pair's row in the (halved) data
        return {
            "scores": {"spearman": spearman(cosine, gold)},
            "counts": {"pairs": len(gold)},
            # the pair's cosine and its gold score: what a paired interval of Spearman resamples
            "per_query": [
                {"metric": "cosine", "ids": ids, "values": cosine.tolist()},
                {"metric": "gold", "ids": ids, "values": np.asarray(gold, dtype=float).tolist()},
            ],
        }
