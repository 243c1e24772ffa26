"""Accessors of result records that every reader shares: tasks' tables, the report, compare.

Pure functions of one record (or a list of them) as ``results.store`` writes them, and the naming
rules of its files (``slug``, ``data_key``); nothing here knows a task, so tasks may import it.
"""

from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from pathlib import Path
from typing import Any


def slug(text: str, limit: int = 80) -> str:
    """A file-name-safe rendering of a spec or data name ("st:default" → "st_default")."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"
    return cleaned[-limit:]


def data_key(name: str, source: str) -> str:
    """``<name>-<8 hex>``: the name for readers, a hash of the resolved source for identity."""
    named = source.startswith(("builtin:", "hf:"))  # not a path: the same from any folder
    where = source if named else str(Path(source).resolve())
    return f"{slug(name, 60)}-{hashlib.sha256(where.encode()).hexdigest()[:8]}"


def subset_of(record: dict[str, Any]) -> str:
    return str(record.get("subset", "default"))


def data_id(record: dict[str, Any]) -> str:
    data = record["data"]
    if isinstance(data.get("key"), str):
        return str(data["key"])
    return data_key(str(data["name"]), str(data.get("source", data["name"])))


def instruction_of(record: dict[str, Any]) -> str | None:
    """The sweep instruction a result was computed with (None: not part of a sweep)."""
    options = record.get("options")
    name = options.get("instruction") if isinstance(options, dict) else None
    return name if isinstance(name, str) else None


def data_labels(records: list[dict[str, Any]]) -> dict[str, str]:
    """Data id → its name, or "name (source)" where two sources share a name."""
    sources: dict[str, set[str]] = defaultdict(set)
    for r in records:
        sources[str(r["data"]["name"])].add(data_id(r))
    out = {}
    for r in records:
        name = str(r["data"]["name"])
        clash = len(sources[name]) > 1
        out[data_id(r)] = f"{name} ({r['data'].get('source', '?')})" if clash else name
    return out


def group_by_data(records: list[dict[str, Any]]) -> list[tuple[str, list[dict[str, Any]]]]:
    """Records grouped by where their data came from, labelled for tables."""
    labels = data_labels(records)
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[labels[data_id(r)]].append(r)
    return sorted(groups.items())
