"""The report's table type and number formatting, shared by the report and task-owned tables."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]


def pct(value: Any) -> str:
    """A stored fraction as a percentage with one decimal; "–" for missing or NaN."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return "–"
    return f"{100 * float(value):.1f}"


def label(record: dict[str, Any]) -> str:
    """The model's name in tables: its spec, else its fingerprint."""
    model = record.get("model", {})
    return str(model.get("spec", model.get("fingerprint", "?")))


PAIRING_ORDER = ("tt", "ti", "it", "ii")
PAIRING_NAMES = {"tt": "T→T", "ti": "T→I", "it": "I→T", "ii": "I→I"}


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one: a malformed score never breaks a table."""
    return value if isinstance(value, dict) else {}
