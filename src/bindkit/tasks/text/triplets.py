"""Triplet accuracy: rows {"query", "positive", "negative", ...} in a JSONL file.

Accuracy is the fraction with cos(query, positive) > cos(query, negative) under the task's tie
rule (declared ``wrong``: strictly, a tie counts wrong). Every other string field ("type",
"negative_kind", ...) gives a per-value breakdown.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.embed.protocol import Embedder
from bindkit.errors import DataFormatError
from bindkit.metrics.correlation import triplet_accuracy
from bindkit.metrics.pairwise import TIE_RULES, Ties, beats
from bindkit.records.tables import Table, as_dict, label, pct
from bindkit.tasks._files import jsonl_rows, need_file
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.text._base import TextFileTask

FIELDS = ("query", "positive", "negative")


def read_triplets(path: str | Path) -> list[dict[str, Any]]:
    """Read and check a triplet JSONL file; errors name the file and line. A file of a synth
    run's split set is refused unless the set passes
    :func:`bindkit.synth.splitset.require_split_set`."""
    path = need_file(Path(path), "a JSONL file of query/positive/negative rows")
    rows = []
    for lineno, row in jsonl_rows(path):
        where = f"{path}:{lineno}"
        if not isinstance(row, dict):
            raise DataFormatError(f"{where}: a row must be a JSON object")
        for key in FIELDS:
            if not isinstance(row.get(key), str) or not row[key].strip():
                raise DataFormatError(f"{where}: field {key!r} must be a non-empty string")
        rows.append(row)
    if not rows:
        raise DataFormatError(f"{path}: no triplets found")
    # a split file of a synth run (a variant's too), for `eval --task triplets` and `train
    # triplets` alike: only if its split set is whole, current, and no text or id crosses its
    # train/val/test/held-out files
    from bindkit.synth.splitset import require_split_set

    require_split_set(path)
    return rows


class TripletTask(TextFileTask):
    metadata = TaskMetadata(
        name="triplets",
        description="triplet accuracy: cos(q, positive) > cos(q, negative)",
        main_score="triplet_accuracy",
        reference="seed 000, Table 1 (binding triplets)",
        ties="wrong",
        data_help="a JSONL file of query/positive/negative rows",
        mteb_names={"triplet_accuracy": "accuracy"},
    )
    tie_rules = TIE_RULES

    needs = "FILE.jsonl"
    makes = "; `bindkit synth generate --n 1000 --out DIR` writes DIR/test.jsonl (and train, val)"

    def read(self, path: Path) -> list[dict[str, Any]]:
        return read_triplets(path)

    def halve(self, dataset: Dataset, half: str) -> Dataset:
        """Keyed by the positive: every triplet of one caption lies in one half."""
        from bindkit.tasks._halves import check_half, halved, keep

        chosen = check_half(half)
        return halved(dataset, keep(dataset.payload, lambda r: str(r["positive"]), chosen), chosen)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any]:
        rows: list[dict[str, Any]] = dataset.payload
        q = embedder.embed_texts(
            [r["query"] for r in rows],
            role="query",
            instruction=self.query_instruction(subset, ctx),
        )
        docs = embedder.embed_texts(
            [r["positive"] for r in rows] + [r["negative"] for r in rows], role="document"
        )
        p, n = docs[: len(rows)], docs[len(rows) :]
        positive, negative = np.einsum("nd,nd->n", q, p), np.einsum("nd,nd->n", q, n)
        return score_triplets(rows, positive, negative, self.metadata.tie_rule(subset))

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        rows = []
        for r in records:
            for field, values in as_dict(r["scores"].get("triplet_accuracy_by")).items():
                for value, acc in as_dict(values).items():
                    rows.append([label(r), r["data"]["name"], field, value, pct(acc)])
        if not rows:
            return []
        return [
            Table(
                "Triplet accuracy by field (%)", ["model", "data", "field", "value", "acc."], rows
            )
        ]


def score_triplets(
    rows: list[dict[str, Any]], positive: np.ndarray, negative: np.ndarray, ties: Ties
) -> dict[str, Any]:
    correct = beats(positive, negative, ties)
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
    scores: dict[str, Any] = {"triplet_accuracy": triplet_accuracy(positive, negative, ties)}
    if breakdown:
        scores["triplet_accuracy_by"] = breakdown
    # a row's "id" names it, unless some row lacks one or ids repeat: then its row number
    ids = [str(r.get("id")) for r in rows]
    if len(set(ids)) != len(ids) or not all(isinstance(r.get("id"), str | int) for r in rows):
        ids = [str(i + 1) for i in range(len(rows))]
    per_query = {"metric": "correct", "ids": ids, "values": correct.astype(float).tolist()}
    return {"scores": scores, "counts": {"triplets": len(rows)}, "per_query": per_query}
