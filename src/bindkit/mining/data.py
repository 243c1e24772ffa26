"""The (query, positive) input of ``bindkit mine``: JSONL rows, strictly validated.

Each row: ``{"query": ..., "positive": ..., "label"?: ..., "instruction"?: ..., "task"?: ...}``.
A query or positive that ends in an image suffix (``.jpg``, ``.png``, ...) is an image path,
relative to the data file's folder unless absolute; anything else is text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit.embed.images import IMAGE_SUFFIXES
from bindkit.errors import DataFormatError

FIELDS = ("query", "positive", "label", "instruction", "task")


def sidecar(out: Path, suffix: str) -> Path:
    """``clusters.jsonl`` → ``clusters<suffix>`` (e.g. ``.diagnostics.json``): the files that
    travel with a clusters file."""
    return out.with_name(out.stem + suffix)


@dataclass(frozen=True)
class Side:
    """One query or positive: its modality and the value an embedder takes (text or path)."""

    modality: str
    value: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.modality, self.value)


@dataclass(frozen=True)
class PairRow:
    """One validated input row; ``raw`` is written back unchanged into the clusters."""

    query: Side
    positive: Side
    label: str | None
    instruction: str | None
    task: str
    raw: dict[str, Any]


def _side(value: str, base: Path, where: str) -> Side:
    if Path(value).suffix.lower() not in IMAGE_SUFFIXES:
        return Side("text", value)
    path = Path(value) if Path(value).is_absolute() else base / value
    if not path.is_file():
        raise DataFormatError(f"{where}: image {value!r} not found (looked for {path})")
    return Side("image", str(path))


def read_pairs(path: str | Path) -> list[PairRow]:
    """Read and validate a (query, positive) JSONL file.

    Raises:
        DataFormatError: a missing file, a line that is not a JSON object, a row without a
            non-empty ``query`` or ``positive``, a field of the wrong type, an image not found.
    """
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataFormatError(f"--data {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"--data {path}: cannot read it as UTF-8 text ({exc})") from None
    rows: list[PairRow] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(raw, dict):
            raise DataFormatError(f"{where}: each line must be a JSON object")
        for name in ("query", "positive"):
            value = raw.get(name)
            if not isinstance(value, str) or not value.strip():
                raise DataFormatError(
                    f"{where}: row has no {name!r}; every row needs a non-empty query and positive"
                )
        label = raw.get("label")
        if label is not None and not isinstance(label, str | int):
            raise DataFormatError(f"{where}: 'label' must be a string or an integer")
        for name in ("instruction", "task"):
            if raw.get(name) is not None and not isinstance(raw[name], str):
                raise DataFormatError(f"{where}: {name!r} must be a string")
        rows.append(
            PairRow(
                query=_side(raw["query"], path.parent, where),
                positive=_side(raw["positive"], path.parent, where),
                label=None if label is None else str(label),
                instruction=raw.get("instruction") or None,
                task=raw.get("task") or "",
                raw=raw,
            )
        )
    if not rows:
        raise DataFormatError(f"--data {path}: no rows; expected JSONL with query and positive")
    return rows
