"""A synth run's split set as one whole: every split file's rows pass their rules, and no text
or id crosses its train, val, test and held-out files (the leak check).

:func:`check_split_set` reports; :func:`require_split_set` refuses, and is what training,
evaluation, export and recipes call on a synth run's triplet files before they read them.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bindkit.errors import DataFormatError
from bindkit.synth.rejection import Failure, Rejection
from bindkit.synth.rowkinds import SWAP, kind_of, validate_triplet
from bindkit.synth.validate import numbered_lines, split_name

SPLIT_SET_RULES: dict[str, str] = {
    "split_leak": "no positive or negative text, and no id, appears in two of a split set's "
    "train, val, test and held-out files",
}


def split_set_root(path: str | Path) -> Path | None:
    """The synth run directory a triplet file belongs to (``DIR/x.jsonl`` or
    ``DIR/<variant>/x.jsonl`` with ``DIR/splits.json`` or ``DIR/examples.jsonl``), else None."""
    from bindkit.synth.splits import SPLITS_JSON, VARIANTS

    path = Path(path)

    def is_run(d: Path) -> bool:
        return (d / SPLITS_JSON).is_file() or (d / "examples.jsonl").is_file()

    if is_run(path.parent):
        return path.parent
    if path.parent.name in VARIANTS and is_run(path.parent.parent):
        return path.parent.parent
    return None


def check_split_set(
    directory: str | Path, extra: dict[str, list[object]] | None = None
) -> tuple[int, list[Failure]]:
    """(triplet rows checked, failures) over a run's split set: every train/val/test/held-out
    file of ``DIR`` (a mix's ``train-<mix>.jsonl`` too) and of each variant folder (a variant's
    train file with the shared files) is checked row by row (:func:`validate_triplet`, which
    reads held-out membership from the text), and no positive or negative text, no query of a
    caption row (any kind but swap, whose query is the short list), and no ``id``, may appear
    under two splits.

    Args:
        directory: the synth run.
        extra: rows of files of ``DIR`` not written yet (file name → rows), checked as if they
            were (one of the same name on disk is left out): what a writer checks before it
            writes.

    Raises:
        DataFormatError: ``DIR`` holds no split files.
    """
    import json

    directory = Path(directory)
    extra = extra or {}
    sets = [directory, *sorted(d for d in directory.iterdir() if (d / "train.jsonl").is_file())]
    groups = [
        [p for p in sorted(d.glob("*.jsonl")) if split_name(p) is not None]
        for d in sets
        if d.is_dir()
    ]
    virtual = {directory / name for name in extra}
    groups[0] = sorted({*groups[0], *virtual})
    groups = [g for g in groups if g]
    if not groups:
        raise DataFormatError(
            f"{directory}: no split files (train.jsonl, val.jsonl, ...); run `bindkit synth "
            f"split {directory}` first"
        )

    def rows_of(path: Path) -> Iterable[tuple[int, object]]:
        if path in virtual:
            yield from enumerate(extra[path.name], 1)
            return
        for lineno, line in numbered_lines(path):
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                yield lineno, Rejection("schema", f"corrupt JSON ({exc.msg})")

    checked = 0
    failures: list[Failure] = []
    for files in groups:
        owner: dict[str, tuple[str, str]] = {}  # text or id -> (split, file:line)
        for path in files:
            split = split_name(path)
            assert split is not None
            # held-out files are one split each: two held-out types never share a caption
            group = path.stem if split == "heldout" else split
            name = path.relative_to(directory).as_posix()
            for lineno, row in rows_of(path):
                checked += 1
                where = f"{name}:{lineno}"
                problems = [row] if isinstance(row, Rejection) else validate_triplet(row, split)
                failures += [(where, "?", r) for r in problems]
                if problems:
                    continue
                assert isinstance(row, dict)
                keys = [("text", row["positive"]), ("text", row["negative"])]
                if kind_of(row) != SWAP:
                    keys.append(("text", row["query"]))
                if isinstance(row.get("id"), str):
                    keys.append(("id", row["id"]))
                for what, value in keys:
                    first = owner.setdefault(f"{what}\0{value}", (group, where))
                    if first[0] != group:
                        failures.append(
                            (
                                where,
                                str(row.get("id", "?")),
                                Rejection(
                                    "split_leak",
                                    f"the {what} {value[:60]!r} is also in {first[1]}",
                                ),
                            )
                        )
                        break
    return checked, failures


def require_split_set(path: str | Path) -> None:
    """For a triplet file of a synth run: refuse it unless its split set is whole and current
    (:func:`bindkit.synth.splits.verify_splits`) and passes :func:`check_split_set`, and, for a
    mix's training file that ``bindkit synth mix`` recorded, unless it is the file its record
    describes, made from the run's examples. Files outside a synth run are left alone.
    ``bindkit train triplets`` and ``bindkit eval --task triplets`` call this on their data.

    Raises:
        DataFormatError: the first problem, naming the file and line.
    """
    from bindkit.synth.splits import verify_splits

    root = split_set_root(path)
    if root is None:
        return
    summary = verify_splits(root)
    _require_mix_record(Path(path), summary)
    _, failures = check_split_set(root)
    if failures:
        where, _, rejection = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        name = where.rsplit(":", 1)[0]
        mix = name.removeprefix("train-").removesuffix(".jsonl")
        fix = (
            f"rewrite it with `bindkit synth mix {root} --mix {mix} --overwrite`"
            if name.startswith("train-")
            else f"run `bindkit synth validate --split-set {root}`, then rerun `bindkit synth "
            f"split {root}`"
        )
        raise DataFormatError(
            f"{root / where}: [{rejection.rule}] {rejection.message}{more}; {fix}"
        )


def _require_mix_record(path: Path, summary: dict[str, Any]) -> None:
    """Refuse a mix's training file (``train-<mix>.jsonl``) whose record beside it
    (``train-<mix>.json``, :func:`bindkit.synth.mixes.write_mix`) describes another file, or
    other examples or another split seed than the run's split set (``summary``: its
    ``splits.json``); a file without a record is left to the row checks."""
    import json

    from bindkit._io import sha256_file

    record_path = path.with_suffix(".json")
    if not path.name.startswith("train-") or not record_path.is_file():
        return
    mix = path.stem.removeprefix("train-")
    rewrite = f"rewrite it with `bindkit synth mix {path.parent} --mix {mix} --overwrite`"
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        made_from, digest = record["examples"]["sha256"], record["sha256"]
        split_seed = record["split_seed"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise DataFormatError(f"{record_path}: corrupt; {rewrite}") from None
    if made_from != summary["examples"]["sha256"]:
        raise DataFormatError(
            f"{path}: made from other examples than {path.parent / 'examples.jsonl'} "
            f"({record_path}); {rewrite}"
        )
    if split_seed != summary["options"]["seed"]:
        raise DataFormatError(
            f"{path}: made from the split of seed {split_seed}, the split set's is "
            f"{summary['options']['seed']} ({record_path}); {rewrite}"
        )
    if sha256_file(path) != digest:
        raise DataFormatError(f"{path}: not the file {record_path} records; {rewrite}")
