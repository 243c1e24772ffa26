"""Strict readers shared by the task modules (text, JSON, JSONL, parquet): every problem is one
line naming file and line."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError, DataFormatError


def need_file(path: Path, what: str) -> Path:
    """``path`` if it is a readable file, else a one-line error saying what it should be."""
    if path.is_dir():
        raise DataFormatError(f"{path}: is a directory; pass {what}")
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; pass {what}")
    return path


def read_text(path: Path) -> str:
    """UTF-8 text (a leading BOM is dropped); other encodings and binary files are errors."""
    data = path.read_bytes()
    if b"\x00" in data:
        raise DataFormatError(f"{path}: binary data (NUL bytes); pass a UTF-8 text file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise DataFormatError(
            f"{path}:{line}: not UTF-8 (byte 0x{data[exc.start]:02x}); re-save the file as UTF-8"
        ) from None


def jsonl_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed JSON)`` per non-empty line of a strict UTF-8 JSONL file."""
    for lineno, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield lineno, json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(
                f"{path}:{lineno}: corrupt JSON ({exc.msg} at column {exc.colno}); fix that line"
            ) from None


def read_json(path: Path, what: str) -> Any:
    """One JSON document, strictly decoded."""
    need_file(path, what)
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise DataFormatError(
            f"{path}: corrupt JSON ({exc.msg}, line {exc.lineno}); "
            "replace it with the published file"
        ) from None


def read_parquet_rows(path: Any, columns: Sequence[str]) -> list[dict[str, Any]]:
    """Rows of a Hugging Face parquet export (needs ``pip install 'bindkit[benchmarks]'``)."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise BindkitError(
            f"{path}: reading parquet needs pyarrow; pip install 'bindkit[benchmarks]'"
        ) from None
    try:
        table = pq.read_table(path)
    except Exception as exc:  # pyarrow raises several types for a damaged file
        raise DataFormatError(f"{path}: not a readable parquet file ({exc})") from None
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise DataFormatError(
            f"{path}: no column {missing[0]!r} (found {', '.join(table.column_names)}); "
            "pass the file as published"
        )
    rows: list[dict[str, Any]] = table.select(list(columns)).to_pylist()
    return rows


def read_csv_rows(path: Path, columns: Sequence[str], what: str) -> list[dict[str, str]]:
    """Rows of a CSV file with a header line (pandas' ``read_csv`` layout), as strings; a
    missing column or a short row is one line naming the file (and the line)."""
    import csv

    need_file(path, what)
    reader = csv.DictReader(read_text(path).splitlines())
    found = reader.fieldnames or []
    missing = [c for c in columns if c not in found]
    if missing:
        raise DataFormatError(
            f"{path}: no column {missing[0]!r} (found {', '.join(found) or 'none'}); pass {what}"
        )
    rows = []
    for lineno, row in enumerate(reader, start=2):
        if any(row.get(c) is None for c in columns):
            raise DataFormatError(f"{path}:{lineno}: fewer fields than the header names")
        rows.append({c: row[c] for c in columns})
    return rows
