"""Where results live and when they are (re)computed.

One JSON per (model, task, data, subset, pairing) at
``OUT/<model>/<task>/<data>-<id>/<subset>/<pairing>.json``, written atomically as soon as it is
computed. ``<id>`` hashes where the data came from (its resolved path), so two files with the same
name in different folders never share a result. Its ``provenance`` (model fingerprint, data hash,
task, subset, pairing, options, metrics version) decides whether an existing file still answers
the question.

Overwrite policies, shared by every command that writes results:

- ``only-missing`` (default): compute what is missing or stale (different provenance); keep
  results whose provenance matches.
- ``never``: like only-missing, but a stale file is an error instead of being replaced.
- ``always``: recompute and replace everything.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from bindkit._io import atomic_write_text
from bindkit.errors import BindkitError
from bindkit.records.fields import slug

Policy = Literal["never", "always", "only-missing"]
POLICIES: tuple[Policy, ...] = ("only-missing", "never", "always")
SCHEMA = "bindkit.result/1"
NOT_A_RESULT = "not a bindkit result"


def result_path(
    out: Path,
    model: str,
    task: str,
    data: str,
    subset: str,
    pairing: str,
    instruction: str | None = None,
) -> Path:
    """``data`` is a :func:`data_key`; ``instruction`` names one run of an instruction sweep
    (``<pairing>@<instruction>.json``)."""
    name = pairing if instruction is None else f"{pairing}@{slug(instruction, 60)}"
    return out / slug(model) / task / data / slug(subset) / f"{name}.json"


_FIELDS: dict[str, type | tuple[type, ...]] = {
    "model": dict,
    "task": str,
    "data": dict,
    "pairing": str,
    "scores": dict,
    "counts": dict,
    "created": str,
    "provenance": dict,
}


def check_record(record: Any) -> str | None:
    """None for a well-formed result record, else what is wrong with it (one phrase)."""
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        return NOT_A_RESULT
    for key, kind in _FIELDS.items():
        if not isinstance(record.get(key), kind):
            return f"field {key!r} is missing or not a {getattr(kind, '__name__', kind)}"
    if not isinstance(record["data"].get("name"), str):
        return "field 'data.name' is missing"
    return score_problem(record["task"], record["scores"])


SIGNED_SCORES = ("spearman", "pearson")  # correlations: from -1; every other score from 0


def score_problem(task: str, scores: dict[str, Any]) -> str | None:
    """None when each score the task declares is a possible value, else what is wrong.

    Scores are stored as fractions: a declared score is a real number in [0, 1] (a correlation
    in [-1, 1]), or NaN where it is undefined (e.g. a correlation over constant scores), or
    absent or null. Anything else (a string, infinity, 1e12, -1 for an accuracy) did not come
    from bindkit, so the record is not used (skipped with a warning, or recomputed).
    """
    import math

    from bindkit.tasks.base import task_classes

    cls = task_classes().get(task)
    if cls is None:  # a task of a plugin that is not installed: nothing declared to check
        return None
    for name in dict.fromkeys((cls.metadata.main_score, *cls.metadata.scores)):
        value = scores.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"score {name!r} is {value!r}, not a number"
        if math.isnan(value):
            continue
        low = -1.0 if any(word in name for word in SIGNED_SCORES) else 0.0
        if not low <= value <= 1.0:
            return f"score {name!r} is {value!r}, outside [{low:g}, 1] (a fraction)"
    return None


def is_partial(record: dict[str, Any]) -> bool:
    """Scored on what was there (``--allow-missing-images``), not the benchmark's number: the
    report marks it and a later eval recomputes it."""
    counts = record.get("counts")
    missing = counts.get("missing_images") if isinstance(counts, dict) else None
    return record.get("partial") is True or (isinstance(missing, int) and missing > 0)


def read_result(path: Path) -> dict[str, Any] | None:
    """The record at ``path``; None when absent, unreadable or malformed (then recomputed)."""
    record, _problem = _read(path)
    return record


def inspect_result(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """``(record, None)`` for a usable result, ``(None, problem)`` for a file that claims to be
    one but cannot be used, ``(None, None)`` for other JSON (not ours) or no file."""
    return _read(path)


def _read(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    try:
        record = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        return None, None
    except IsADirectoryError:
        return None, "is a directory"
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return None, f"corrupt JSON ({exc.__class__.__name__})"
    except OSError as exc:
        return None, f"unreadable ({exc.strerror})"
    if isinstance(record, dict) and record.get("schema") != SCHEMA:
        return None, None  # some other JSON file: not ours, not a problem
    problem = check_record(record)
    return (None, problem) if problem else (record, None)


def reusable(path: Path, provenance: dict[str, Any], policy: Policy) -> dict[str, Any] | None:
    """The existing record at ``path`` if ``policy`` keeps it, else None (compute it)."""
    if policy not in POLICIES:
        raise BindkitError(f"--overwrite {policy!r}: use one of {', '.join(POLICIES)}")
    if policy == "always":
        return None
    existing = read_result(path)
    if existing is None:
        return None
    from bindkit.records.per_query import sidecar_problem

    if existing.get("provenance") == provenance:
        # its per-query scores went missing or were overwritten: recompute them
        return existing if sidecar_problem(path, existing) is None else None
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
    warn: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    from bindkit import __version__
    from bindkit._environment import library_versions

    if path.is_dir():
        raise BindkitError(f"{path}: is a directory where a result file belongs; remove it")
    record = {
        "schema": SCHEMA,
        "bindkit_version": __version__,
        "libraries": library_versions(),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "provenance": provenance,
        "model": model,
        "task": provenance["task"],
        "data": data,
        "subset": provenance["subset"],
        "pairing": provenance["pairing"],
        "options": provenance["options"],
        "scores": result["scores"],
        "counts": result.get("counts", {}),
        "partial": result.get("partial") is True,  # scored without some images
        "seconds": round(seconds, 3),
    }
    if result.get("per_query") is not None:  # the sidecar first: the JSON names its hash
        from bindkit.records.per_query import normalise, write_sidecar

        where = f"{provenance['task']} {provenance['subset']} {provenance['pairing']}"
        try:
            items = normalise(result["per_query"], where)
        except BindkitError as exc:  # a task's bug costs its per-query scores, not the result
            if warn is not None:
                warn(f"warning: {exc}; the result is stored without per-query scores")
        else:
            record["per_query"] = write_sidecar(path, items)
    atomic_write_text(path, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    return record


def collect(root: str | Path, warn: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Every result record under ``root`` (any layout), in path order.

    A file that claims to be a result but cannot be used (truncated, wrong field types) is
    skipped with one ``warn`` line naming it; other JSON files are ignored.
    """
    return [record for _path, record in collect_paths(root, warn)]


def noting(
    warn: Callable[[str], None] | None,
) -> tuple[list[str], Callable[[str], None]]:
    """A ``warn`` that also keeps each message, so a caller can say how many were skipped."""
    kept: list[str] = []

    def note(message: str) -> None:
        kept.append(message)
        if warn is not None:
            warn(message)

    return kept, note


def none_found(root: str | Path, skipped: int) -> BindkitError:
    """The error for a ``root`` without a usable result: none there, or all ``skipped``."""
    if skipped:
        return BindkitError(
            f"{root}: no bindkit result files found ({skipped} unusable, see the warnings); "
            "run `bindkit eval` again for them"
        )
    return BindkitError(f"{root}: no bindkit result files found; run `bindkit eval` first")


def collect_paths(
    root: str | Path, warn: Callable[[str], None] | None = None
) -> list[tuple[Path, dict[str, Any]]]:
    """:func:`collect` with each record's file (``root`` may also be one result file)."""
    root = Path(root)
    if not root.exists():
        raise BindkitError(f"{root}: not found; pass the --out directory of `bindkit eval`")
    found = []
    for path in [root] if root.is_file() else sorted(root.rglob("*.json")):
        record, problem = _read(path)
        if record is not None:
            found.append((path, record))
        elif problem is not None and warn is not None:
            warn(f"warning: {path}: skipped, {problem}")
    return found
