"""Per-query scores of a result, kept compactly beside its JSON.

A task's ``evaluate`` may return ``"per_query"``: one dict ``{"metric", "ids", "values", "top"}``
(``top``: up to 5 candidate ids per query, best first; optional) or a list of them, the first
being the one behind the task's main score (SABER: MCQ credit, then AP per independent and per
nested query). The engine writes them to ``<pairing>.queries.npz`` next to ``<pairing>.json``
(compressed numpy arrays, read without pickle), written before the JSON, and records the file's
name, SHA-256 and each metric's query count in the JSON's ``per_query`` field: a sidecar that
does not match its JSON is refused, never read as that result's.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import atomic_write_bytes, sha256_bytes, sha256_file
from bindkit.errors import BindkitError

TOP_K = 5
SUFFIX = ".queries.npz"


@dataclass(frozen=True)
class PerQuery:
    """One per-query score: ``values[i]`` is query ``ids[i]``'s (NaN: not scored, e.g. an AP
    query without positives); ``top[i]`` its best candidates' ids (empty when not recorded)."""

    metric: str
    ids: tuple[str, ...]
    values: np.ndarray
    top: tuple[tuple[str, ...], ...] = ()


def sidecar_path(result: Path) -> Path:
    """``.../tt.json`` → ``.../tt.queries.npz``."""
    return result.with_name(result.stem + SUFFIX)


def normalise(value: Any, where: str) -> list[PerQuery]:
    """A task's ``per_query`` (a dict or a list of dicts) checked and converted.

    Raises:
        BindkitError: a malformed entry (a task bug), named with ``where``.
    """
    items = value if isinstance(value, list) else [value]
    out: list[PerQuery] = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("metric"), str):
            raise BindkitError(f"{where}: per_query needs a dict with a 'metric' name")
        ids = tuple(str(i) for i in item.get("ids", ()))
        values = np.asarray(item.get("values", ()), dtype=np.float64)
        if values.shape != (len(ids),):
            raise BindkitError(
                f"{where}: per_query {item['metric']}: {len(ids)} ids but values of shape "
                f"{values.shape}"
            )
        if len(set(ids)) != len(ids):
            raise BindkitError(f"{where}: per_query {item['metric']}: ids repeat")
        top = tuple(tuple(str(c) for c in row[:TOP_K]) for row in item.get("top") or ())
        if top and len(top) != len(ids):
            raise BindkitError(f"{where}: per_query {item['metric']}: top needs one row per id")
        out.append(PerQuery(item["metric"], ids, values, top))
    if len({p.metric for p in out}) != len(out):
        raise BindkitError(f"{where}: per_query metric names repeat")
    return out


def encode(items: Sequence[PerQuery]) -> bytes:
    """The sidecar's bytes: per metric k, ``values_k`` (float64), ``ids_k`` (unicode) and
    ``top_k`` (unicode, queries x 5, padded with ""); ids and tops equal to an earlier metric's
    (revisited's three protocols share them) are stored once, ``ids_from``/``top_from`` naming
    the metric that holds them (-1: none)."""
    arrays: dict[str, np.ndarray] = {"metrics": np.array([p.metric for p in items], dtype=str)}
    ids_from, top_from = [], []
    for k, p in enumerate(items):
        arrays[f"values_{k}"] = p.values.astype(np.float64)
        same = next((j for j in range(k) if items[j].ids == p.ids), k)
        ids_from.append(same)
        if same == k:
            arrays[f"ids_{k}"] = np.array(p.ids, dtype=str)
        same = next((j for j in range(k) if items[j].top == p.top), k) if p.top else -1
        top_from.append(same)
        if same == k:
            width = max(1, max(len(row) for row in p.top))
            arrays[f"top_{k}"] = np.array(
                [list(row) + [""] * (width - len(row)) for row in p.top], dtype=str
            )
    arrays["ids_from"] = np.array(ids_from, dtype=np.int64)
    arrays["top_from"] = np.array(top_from, dtype=np.int64)
    buffer = io.BytesIO()
    np.savez_compressed(buffer, allow_pickle=False, **arrays)
    return buffer.getvalue()


def decode(data: bytes | Path) -> list[PerQuery]:
    source = io.BytesIO(data) if isinstance(data, bytes) else data
    with np.load(source, allow_pickle=False) as npz:
        ids_from, top_from = npz["ids_from"].tolist(), npz["top_from"].tolist()
        out = []
        for k, metric in enumerate(npz["metrics"].tolist()):
            top: tuple[tuple[str, ...], ...] = ()
            if top_from[k] >= 0:
                top = tuple(
                    tuple(c for c in row if c) for row in npz[f"top_{top_from[k]}"].tolist()
                )
            ids = tuple(npz[f"ids_{ids_from[k]}"].tolist())
            out.append(PerQuery(str(metric), ids, npz[f"values_{k}"], top))
    return out


def write_sidecar(result: Path, items: Sequence[PerQuery]) -> dict[str, Any]:
    """Write the sidecar of the result at ``result`` atomically; the JSON's ``per_query`` field."""
    data = encode(items)
    target = sidecar_path(result)
    atomic_write_bytes(target, data)
    return {
        "file": target.name,
        "sha256": sha256_bytes(data),
        "metrics": {p.metric: len(p.ids) for p in items},
    }


def sidecar_problem(result: Path, record: dict[str, Any]) -> str | None:
    """Why ``record``'s sidecar cannot be read as its own (None when it can, or it has none)."""
    entry = record.get("per_query")
    if entry is None:
        return None
    if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
        return "its per_query field is malformed"
    target = result.with_name(Path(entry["file"]).name)
    if not target.is_file():
        return f"{target.name} is missing"
    if sha256_file(target) != entry.get("sha256"):
        return f"{target.name} does not match the result (another run's file)"
    return None


def read_per_query(result: Path, record: dict[str, Any]) -> list[PerQuery] | None:
    """The per-query scores of the result at ``result`` (None: it was stored without them).

    Raises:
        BindkitError: the sidecar is missing, corrupt or from another run.
    """
    if record.get("per_query") is None:
        return None
    problem = sidecar_problem(result, record)
    if problem is not None:
        raise BindkitError(f"{result}: {problem}; rerun bindkit eval with --overwrite always")
    target = result.with_name(Path(record["per_query"]["file"]).name)
    try:
        return decode(target)
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:
        raise BindkitError(f"{target}: unreadable ({exc}); rerun bindkit eval") from None
