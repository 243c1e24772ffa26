"""The strict validator of synthetic binding data: one engine for a file of examples or triplets.

Usable alone (``bindkit synth validate FILE``) on generated data or data users bring. Each row
goes to its kind's rule, beside the code that makes that kind: an example to
:func:`bindkit.synth.example_rules.validate_example` (the seven constructions), a triplet row to
:func:`bindkit.synth.rowkinds.validate_triplet` (the row kinds of a training mix). The file-level
rules (:data:`DATASET_RULES`) run here over what the rows leave; the split-set and leak checks
across a run's files are :mod:`bindkit.synth.splitset`. Every rejection names its rule.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from bindkit.errors import DataFormatError
from bindkit.synth.controls import controls
from bindkit.synth.example import Example
from bindkit.synth.example_rules import anaphoric_order, unverifiable_slots, validate_example
from bindkit.synth.rejection import Failure, Rejection
from bindkit.synth.rowkinds import validate_triplet

DATASET_RULES: dict[str, str] = {
    "duplicate_id": "every example id is unique in the file",
    "duplicate_set": "no two examples of one type share the full attribute+object set",
    "frequency_cap": "replayed in file order, no example uses a word already at its running cap "
    "max(min_cap, fraction x examples before it)",
    "mix": "each type's share of the file is its configured share (within 1 % of the file, "
    "at least one example)",
    "anaphoric_balance": "half the deferred_bind_anaphoric examples assign the second noun "
    "first (within 2 % of them, at least one example)",
}


@dataclass(frozen=True)
class Seen:
    """What the file-level rules need of one parsed example."""

    where: str
    id: str
    type: str
    vocabulary: tuple[str, ...]
    attributes: int
    order: str | None
    unverifiable: int = 0  # attr_bundle attributes the lexicon does not know


def _check_lines(
    name: str, first_line: int, lines: list[str], kind: str, split: str | None
) -> tuple[list[Failure], list[Seen]]:
    """Validate raw JSONL lines (a chunk of a file); runs in worker processes too."""
    import json

    failures: list[Failure] = []
    seen: list[Seen] = []
    for offset, line in enumerate(lines):
        where = f"{name}:{first_line + offset}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            failures.append((where, "?", Rejection("schema", f"corrupt JSON ({exc.msg})")))
            continue
        if kind == "triplets":
            failures += [(where, "?", r) for r in validate_triplet(obj, split)]
            continue
        try:
            ex = Example.from_json(obj, where)
        except DataFormatError as exc:
            failures.append((where, "?", Rejection("schema", str(exc).split(": ", 1)[-1])))
            continue
        failures += [(where, ex.id, r) for r in validate_example(ex)]
        order = anaphoric_order(ex) if ex.type == "deferred_bind_anaphoric" else None
        vocabulary = tuple(sorted(ex.vocabulary()))
        seen.append(
            Seen(
                where,
                ex.id,
                ex.type,
                vocabulary,
                len(ex.attributes),
                order,
                unverifiable_slots(ex),
            )
        )
    return failures, seen


def dataset_failures(name: str, seen: list[Seen], *, dataset: bool) -> list[Failure]:
    """The file-level rules over every parsed example in file order: duplicate ids and
    attribute-object sets always; with ``dataset`` also caps, the construction mix and the
    anaphoric order balance (these describe a whole run, not a sample of one)."""
    out: list[Failure] = []
    ids: dict[str, str] = {}
    sets: dict[tuple[str, tuple[str, ...]], str] = {}
    for s in seen:
        if s.id in ids:
            out.append((s.where, s.id, Rejection("duplicate_id", f"id also at {ids[s.id]}")))
        ids.setdefault(s.id, s.where)
        key = (s.type, s.vocabulary)
        if key in sets:
            message = f"same {s.type} attribute-object set as {sets[key]}"
            out.append((s.where, s.id, Rejection("duplicate_set", message)))
        sets.setdefault(key, s.where)
    if not dataset:
        return out
    v = controls()["vocabulary"]
    counts: Counter[str] = Counter()
    for before, s in enumerate(seen):
        fraction = float(v["cap_fraction"][str(min(4, max(2, s.attributes)))])
        cap = max(float(v["min_cap"]), fraction * before)
        over = [w for w in s.vocabulary if counts[w] >= cap]
        if over:
            message = f"{over[0]!r} already used {counts[over[0]]} times (cap {cap:g})"
            out.append((s.where, s.id, Rejection("frequency_cap", message)))
        counts.update(s.vocabulary)
    total = len(seen)
    by_type = Counter(s.type for s in seen)
    for kind, share in controls()["mix"].items():
        expected = float(share) * total
        if abs(by_type[kind] - expected) > max(1.0, 0.01 * total):
            message = f"{by_type[kind]} {kind} examples of {total}, expected {expected:.0f}"
            out.append((name, "*", Rejection("mix", message)))
    orders = Counter(s.order for s in seen if s.order is not None)
    n = sum(orders.values())
    if n and abs(orders["second_first"] - n / 2) > max(1.0, 0.02 * n):
        message = f"{orders['second_first']} of {n} anaphoric examples assign the second noun first"
        out.append((name, "*", Rejection("anaphoric_balance", message)))
    return out


def detect_kind(first_row: object) -> str:
    """ "examples" or "triplets", from the keys of a file's first row."""
    if isinstance(first_row, dict) and "negative" in first_row and "negatives" not in first_row:
        return "triplets"
    return "examples"


def split_name(path: Path) -> str | None:
    """The split a triplet file belongs to, from its name (train.jsonl, val_x.jsonl, ...)."""
    head = path.stem.split("_")[0].split("-")[0].lower()
    return head if head in ("train", "val", "test", "heldout") else None


def numbered_lines(path: Path) -> list[tuple[int, str]]:
    """The non-blank lines of a JSONL file with their 1-based numbers; refuses a folder, a
    missing or empty file and bytes that are not UTF-8, naming the file (and line)."""
    if path.is_dir():
        raise DataFormatError(f"{path}: is a directory; pass a JSONL file of examples")
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; pass a JSONL file of examples")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(
            f"{path}:{line}: not UTF-8 text (byte {exc.start}); pass a JSONL file of examples"
        ) from None
    numbered = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered:
        raise DataFormatError(f"{path}: empty; pass a JSONL file with one example per line")
    return numbered


def validate_file(
    path: str | Path,
    *,
    workers: int | None = None,
    chunk: int = 5000,
    dataset: bool = False,
    kind: str | None = None,
    split: str | None = None,
    notes: Counter[str] | None = None,
) -> tuple[int, list[Failure]]:
    """(rows checked, failures) for a JSONL file of examples or triplets.

    Args:
        path: the file.
        workers: processes for files longer than one chunk (default: one per CPU); the result
            is identical to a single-process run, in file order.
        chunk: lines per worker task.
        dataset: also check the rules of a whole run (caps, mix, anaphoric balance).
        kind: "examples" or "triplets" (default: detected from the first row).
        split: the split of a triplet file (default: from the file name).
        notes: a counter that receives what could not be checked: ``unverifiable_slots``,
            the attr_bundle attributes the attribute lexicon does not know.
    """
    import json

    path = Path(path)
    numbered = numbered_lines(path)
    if kind is None:
        try:
            kind = detect_kind(json.loads(numbered[0][1]))
        except json.JSONDecodeError:
            kind = "examples"
    if kind not in ("examples", "triplets"):
        raise DataFormatError(f"unknown file kind {kind!r}; use examples or triplets")
    if kind == "triplets" and split is None:
        split = split_name(path)
    chunks: list[tuple[int, list[str]]] = []
    for start in range(0, len(numbered), chunk):
        part = numbered[start : start + chunk]
        # keep line numbers exact: a chunk is contiguous in the numbered list, blank lines aside
        chunks += (
            [(i, [line]) for i, line in part]
            if _has_gaps(part)
            else [(part[0][0], [line for _, line in part])]
        )
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(numbered) <= chunk:
        results = [_check_lines(path.name, first, lines, kind, split) for first, lines in chunks]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(
                pool.map(
                    _check_lines,
                    [path.name] * len(chunks),
                    [c[0] for c in chunks],
                    [c[1] for c in chunks],
                    [kind] * len(chunks),
                    [split] * len(chunks),
                )
            )
    failures = [f for part, _ in results for f in part]
    seen = [s for _, part in results for s in part]
    failures += dataset_failures(path.name, seen, dataset=dataset)
    if notes is not None:
        notes["unverifiable_slots"] += sum(s.unverifiable for s in seen)
    return len(numbered), failures


def _has_gaps(part: list[tuple[int, str]]) -> bool:
    return part[-1][0] - part[0][0] != len(part) - 1
