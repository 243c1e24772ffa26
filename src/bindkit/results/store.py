"""Where results live and when they are (re)computed.

One JSON per (model, task, data, pairing) at ``OUT/<model>/<task>/<data>/<pairing>.json``, written
atomically as soon as it is computed. Its ``provenance`` (model fingerprint, data hash, task,
pairing, options, metrics version) decides whether an existing file still answers the question.

Overwrite policies, shared by every command that writes results:

- ``only-missing`` (default): compute what is missing or stale (different provenance); keep
  results whose provenance matches.
- ``never``: like only-missing, but a stale file is an error instead of being replaced.
- ``always``: recompute and replace everything.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any, Literal

from bindkit._io import atomic_write_text
from bindkit.errors import BindkitError

Policy = Literal["never", "always", "only-missing"]
POLICIES: tuple[Policy, ...] = ("only-missing", "never", "always")
SCHEMA = "bindkit.result/1"


def slug(text: str, limit: int = 80) -> str:
    """A file-name-safe rendering of a spec or data name ("st:default" → "st_default")."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "x"
    return cleaned[-limit:]


def result_path(out: Path, model: str, task: str, data: str, pairing: str) -> Path:
    return out / slug(model) / task / slug(data) / f"{pairing}.json"


def read_result(path: Path) -> dict[str, Any] | None:
    try:
        record = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None  # a corrupt file is treated as missing and recomputed
    return record if isinstance(record, dict) and record.get("schema") == SCHEMA else None


def reusable(path: Path, provenance: dict[str, Any], policy: Policy) -> dict[str, Any] | None:
    """The existing record at ``path`` if ``policy`` keeps it, else None (compute it)."""
    if policy not in POLICIES:
        raise BindkitError(f"--overwrite {policy!r}: use one of {', '.join(POLICIES)}")
    if policy == "always":
        return None
    existing = read_result(path)
    if existing is None:
        return None
    if existing.get("provenance") == provenance:
        return existing
    if policy == "never":
        raise BindkitError(
            f"{path}: exists but was produced by another model, data or options; "
            "pass --overwrite only-missing or always to replace it"
        )
    return None


def write_result(
    path: Path,
    *,
    provenance: dict[str, Any],
    model: dict[str, Any],
    data: dict[str, Any],
    result: dict[str, Any],
    seconds: float,
) -> dict[str, Any]:
    from bindkit import __version__

    record = {
        "schema": SCHEMA,
        "bindkit_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "provenance": provenance,
        "model": model,
        "task": provenance["task"],
        "data": data,
        "pairing": provenance["pairing"],
        "options": provenance["options"],
        "scores": result["scores"],
        "counts": result.get("counts", {}),
        "seconds": round(seconds, 3),
    }
    atomic_write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return record


def collect(root: str | Path) -> list[dict[str, Any]]:
    """Every result record under ``root`` (any layout), in path order."""
    root = Path(root)
    if not root.exists():
        raise BindkitError(f"{root}: not found; pass the --out directory of `bindkit eval`")
    records = []
    for path in sorted(root.rglob("*.json")):
        record = read_result(path)
        if record is not None:
            records.append(record)
    return records
