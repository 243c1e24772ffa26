"""Instruction-sensitivity sweeps: the ``--instructions`` file, and the report's spread tables.

A file is either plain text, one query-side instruction per line (blank lines and lines starting
with ``#`` skipped; each is named by a hash of its text), or a ``.json`` / ``.toml`` list of
``{name, query, document}`` entries (``document``, the document-side instruction, optional):
a JSON list (or ``{"instructions": [...]}``), a TOML ``[[instructions]]`` array. Each result of a
sweep records its instruction's name and both sides in ``options``.

A sweep runs the whole evaluation once per instruction, so a file holds at most
:data:`MAX_INSTRUCTIONS`; a plain-text line that is a JSON object or array is refused (a JSONL
data file given by mistake would otherwise become one "instruction" per row).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import statistics
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_figure
from bindkit.errors import DataFormatError
from bindkit.records.fields import instruction_of
from bindkit.records.tables import Table, label, pct

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,59}$")
KEYS = ("name", "query", "document")
MAX_INSTRUCTIONS = 200  # each is a full evaluation run; prompt-sensitivity studies use 5-50


@dataclass(frozen=True)
class Instruction:
    """One instruction of a sweep: its name (in result paths and tables) and each side's text
    (``document`` None: the task's document-side default)."""

    name: str
    query: str
    document: str | None = None


def text_name(text: str) -> str:
    """The name of a plain-text line: ``i`` + 8 hex of its SHA-256."""
    return "i" + hashlib.sha256(text.encode()).hexdigest()[:8]


def read_instructions(path: str | Path) -> list[Instruction]:
    """The instructions of ``path`` (see the module docstring), checked strictly.

    Raises:
        DataFormatError: one line naming ``file:line`` or ``file: instructions[k].key``.
    """
    path = Path(path)
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not found"
        raise DataFormatError(
            f"--instructions {path}: {what}; pass a text file (one instruction per line) or "
            "a .json/.toml list of {name, query, document}"
        )
    try:
        text = path.read_text("utf-8")
    except UnicodeDecodeError:
        raise DataFormatError(f"{path}: not UTF-8 text; save it as UTF-8") from None
    if path.suffix in (".json", ".toml"):
        items = _structured(path, text)
    else:
        items = []
        for number, line in enumerate(text.splitlines(), start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if _is_json_row(line):
                raise DataFormatError(
                    f"{path}:{number}: a JSON {'object' if line[0] == '{' else 'array'}, not an "
                    "instruction; a text file holds one instruction per line (entries with "
                    "name/query/document go in a .json or .toml file)"
                )
            items.append((f"{path}:{number}", Instruction(text_name(line), line)))
    if not items:
        raise DataFormatError(f"{path}: holds no instruction; write one per line")
    if len(items) > MAX_INSTRUCTIONS:
        raise DataFormatError(
            f"{path}: {len(items)} instructions; a sweep takes at most {MAX_INSTRUCTIONS} (each "
            "is a full evaluation run); split the file"
        )
    seen: dict[str, str] = {}
    for where, item in items:
        if item.name in seen:
            raise DataFormatError(
                f"{where}: instruction name {item.name!r} repeats {seen[item.name]}; give each "
                "instruction once, under its own name"
            )
        seen[item.name] = where
    return [item for _where, item in items]


def _is_json_row(line: str) -> bool:
    """Whether a text line is a JSON object or array (a row of a JSONL file, not prose)."""
    if line[0] not in "{[":
        return False
    try:
        return isinstance(json.loads(line), dict | list)
    except ValueError:
        return False


def _structured(path: Path, text: str) -> list[tuple[str, Instruction]]:
    if path.suffix == ".json":
        try:
            raw: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from None
    else:
        import tomllib

        try:
            raw = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise DataFormatError(f"{path}: not valid TOML ({exc})") from None
    if isinstance(raw, dict):
        unknown = [k for k in raw if k != "instructions"]
        if unknown or "instructions" not in raw:
            raise DataFormatError(
                f"{path}: key {(unknown or ['(none)'])[0]!r}: put the entries under "
                "'instructions' (a list of {name, query, document})"
            )
        raw = raw["instructions"]
    if not isinstance(raw, list):
        raise DataFormatError(f"{path}: instructions must be a list of {{name, query, document}}")
    out = []
    for k, entry in enumerate(raw):
        where = f"{path}: instructions[{k}]"
        if not isinstance(entry, dict):
            raise DataFormatError(f"{where}: must be a table/object with name and query")
        unknown = [key for key in entry if key not in KEYS]
        if unknown:
            raise DataFormatError(f"{where}.{unknown[0]}: unknown key; use name, query, document")
        name = entry.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            raise DataFormatError(
                f"{where}.name: {name!r} is not a name; use letters, digits, '.', '_', '-' "
                "(at most 60)"
            )
        for side in ("query", "document"):
            value = entry.get(side)
            if side == "query" and value is None:
                raise DataFormatError(f"{where}.query: missing; give the query-side text")
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise DataFormatError(f"{where}.{side}: must be a non-empty string")
        out.append((f"{where}.name", Instruction(name, entry["query"], entry.get("document"))))
    return out


# -- report --------------------------------------------------------------------------------
#: a record's headline (score name, value), or None: the report's rule, passed in by the report
Headline = Callable[[dict[str, Any]], "tuple[str, float] | None"]


def _main(record: dict[str, Any], headline: Headline) -> float | None:
    found = headline(record)
    return None if found is None or math.isnan(found[1]) else found[1]


def spread(values: list[float]) -> dict[str, float]:
    """Mean, sample standard deviation (0 for one value), min and max."""
    return {
        "mean": statistics.fmean(values),
        "std": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def sweep_groups(
    records: list[dict[str, Any]], headline: Headline
) -> dict[tuple[str, str, str, str, str], dict[str, float]]:
    """(model, task, data, subset, pairing) → instruction name → main score, for sweep
    results."""
    groups: dict[tuple[str, str, str, str, str], dict[str, float]] = defaultdict(dict)
    for r in records:
        name, value = instruction_of(r), _main(r, headline)
        if name is None or value is None:
            continue
        key = (label(r), r["task"], str(r["data"]["name"]), str(r.get("subset")), r["pairing"])
        groups[key][name] = value
    return dict(groups)


def sweep_tables(records: list[dict[str, Any]], headline: Headline) -> list[Table]:
    """Per model: each instruction's main score per (task, data, subset, pairing), then the
    mean, standard deviation, min and max across instructions (%)."""
    groups = sweep_groups(records, headline)
    by_model: dict[str, list[tuple[tuple[str, ...], dict[str, float]]]] = defaultdict(list)
    for key, scores in sorted(groups.items()):
        by_model[key[0]].append((key[1:], scores))
    tables = []
    for model, runs in by_model.items():
        names = sorted({n for _key, scores in runs for n in scores})
        columns = ["task", "data", "subset", "pairing", *names, "mean", "std", "min", "max"]
        rows = []
        for (task, data, subset, pairing), scores in runs:
            stats = spread(list(scores.values()))
            rows.append(
                [task, data, subset, pairing, *(pct(scores.get(n)) for n in names)]
                + [pct(stats[s]) for s in ("mean", "std", "min", "max")]
            )
        tables.append(Table(f"Instruction sweep: {model} (main score, %)", columns, rows))
    return tables


def plot_sweep(records: list[dict[str, Any]], path: Path, headline: Headline) -> Path | None:
    """A strip plot: one row per (model, task, subset, pairing), one dot per instruction."""
    groups = sweep_groups(records, headline)
    if not groups:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    keys = sorted(groups)
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(keys) + 1.4))
    for row, key in enumerate(keys):
        values = [100 * v for v in groups[key].values()]
        jitter = [row + 0.12 * ((i % 5) - 2) / 2 for i in range(len(values))]
        ax.scatter(values, jitter, s=18, alpha=0.8)
        ax.plot([statistics.fmean(values)] * 2, [row - 0.3, row + 0.3], color="black", lw=1)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels([f"{m} · {t} {s} {p}" for m, t, _d, s, p in keys], fontsize=7)
    ax.set_xlabel("main score (%) per instruction; bar: mean")
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    return atomic_write_figure(fig, path)
