"""Read an export back: bindkit's own files, rebuilt exactly, wherever bindkit reads files.

A value names an export as ``HFDIR`` (a folder holding ``bindkit.json``), ``hf:OWNER/NAME`` (a
Hub dataset already in the local Hugging Face cache; nothing is downloaded) and, for a synth
export, ``…:SPLIT`` or ``…:VARIANT/SPLIT`` (``HFDIR:train``, ``hf:me/triplets:no_overlap/val``).
:func:`local_path` turns such a value into the path of the same files in bindkit's layout
(``saber.jsonl`` with its manifest and images, a split set, a clusters file), rebuilt from the
parquet shards once into ``$BINDKIT_CACHE_DIR/hf/`` and checked against the hashes the export
recorded, so every reader, validator and data hash works on it unchanged. Any other value is
returned as it was.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError, DataFormatError
from bindkit.hfdata.format import EXPORT_FILE, FORMAT, KINDS, READABLE, SIDECARS, require_hf

HUB_PREFIX = "hf:"
COMPLETE = ".complete"


def is_export(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by ``bindkit export``."""
    return (Path(path) / EXPORT_FILE).is_file()


def read_record(root: Path) -> dict[str, Any]:
    """The export's ``bindkit.json``, checked."""
    path = root / EXPORT_FILE
    try:
        record = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise DataFormatError(f"{path}: unreadable ({exc}); export the data again") from None
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise DataFormatError(f"{path}: not a bindkit export record; export the data again")
    if record.get("format_version") not in READABLE or record.get("kind") not in KINDS:
        raise DataFormatError(
            f"{path}: export format {record.get('format_version')} of kind "
            f"{record.get('kind')!r} is not one this bindkit reads; upgrade bindkit"
        )
    return record


def hub_folder(repo_id: str) -> Path:
    """The local snapshot of Hub dataset ``repo_id`` (offline: only what is cached)."""
    import huggingface_hub

    try:
        return Path(
            huggingface_hub.snapshot_download(repo_id, repo_type="dataset", local_files_only=True)
        )
    except (huggingface_hub.errors.LocalEntryNotFoundError, ValueError, OSError):
        raise BindkitError(
            f"{HUB_PREFIX}{repo_id}: not in the local Hugging Face cache; download it first "
            f"(`hf download {repo_id} --repo-type dataset`) or give the folder"
        ) from None


def resolve(value: str | Path) -> tuple[Path, str | None] | None:
    """``(export folder, selector)`` when ``value`` names an export, else None."""
    text = str(value)
    if text.startswith(HUB_PREFIX):
        repo, _, selector = text[len(HUB_PREFIX) :].partition(":")
        return hub_folder(repo), selector or None
    if is_export(text):
        return Path(text), None
    head, sep, selector = text.rpartition(":")
    if sep and head and selector and is_export(head):
        return Path(head), selector
    return None


def local_path(value: str | Path, *, option: str = "--data") -> Path:
    """The bindkit-layout path of ``value`` (see the module docstring); other values unchanged.

    Raises:
        BindkitError: an unknown split, a selector on an export that has none, a Hub id not in
            the local cache, or shards that do not rebuild the files the export recorded.
    """
    found = resolve(value)
    if found is None:
        return Path(value)
    root, selector = found
    record = read_record(root)
    built = materialize(root, record)
    kind = record["kind"]
    if kind == "synth":
        names = [n.removesuffix(".jsonl") for n in record["bindkit_files"]]
        if selector is None:
            raise BindkitError(
                f"{option} {value}: a synth export holds several splits; name one, e.g. "
                f"{value}:train (one of {', '.join(names)})"
            )
        name = selector.removeprefix("default/")
        if name not in names:
            raise BindkitError(
                f"{option} {value}: no split {selector!r}; use one of {', '.join(names)}"
            )
        return built / f"{name}.jsonl"
    if selector is not None:
        raise BindkitError(f"{option} {value}: a {kind} export has no splits; drop ':{selector}'")
    return built / record["file"] if kind == "clusters" else built


def cache_root() -> Path:
    from bindkit.embed.cache import default_cache_path

    return default_cache_path().parent / "hf"


def materialize(root: Path, record: dict[str, Any]) -> Path:
    """Rebuild the export's bindkit files once (a content-addressed cache folder) and return
    the folder; every rebuilt file must have the hash the export recorded."""
    from bindkit._io import sha256_bytes

    key = sha256_bytes((root / EXPORT_FILE).read_bytes())[:20]
    # under the source's own name, so results name the data as they did for the original
    name = "clusters" if record["kind"] == "clusters" else Path(record["source"]).name
    target = cache_root() / key / (name or record["kind"])
    if (target / COMPLETE).is_file():
        return target
    require_hf()
    staging = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        files = _rebuild(root, record)
        expected: dict[str, str] = record["bindkit_files"]
        for name, digest in expected.items():
            data = files.get(name)
            if data is None or sha256_bytes(data) != digest:
                raise DataFormatError(
                    f"{root}: its shards do not rebuild {name} as exported (changed or "
                    "truncated?); download or export it again"
                )
        for sidecar in (root / SIDECARS).glob("*"):
            files.setdefault(sidecar.name, sidecar.read_bytes())
        for name, data in files.items():
            _check_relative(name, root)
            (staging / name).parent.mkdir(parents=True, exist_ok=True)
            (staging / name).write_bytes(data)
        (staging / COMPLETE).write_text(str(root.resolve()) + "\n", "utf-8")
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.replace(staging, target)
        except OSError:  # another process rebuilt it first
            if not (target / COMPLETE).is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _check_relative(name: str, root: Path) -> None:
    path = Path(name)
    if path.is_absolute() or ".." in path.parts:
        raise DataFormatError(f"{root}: file name {name!r} leaves the folder; export it again")


def read_shard(root: Path, shard: str) -> tuple[list[dict[str, Any]], Any]:
    """A parquet shard's rows as stored (class indices, image ``{bytes, path}``) and its
    features, read from the schema metadata that ``datasets`` writes."""
    import datasets
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    path = root / shard
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as exc:  # pyarrow's errors subclass these
        raise DataFormatError(f"{path}: unreadable parquet ({exc}); export it again") from None
    return table.to_pylist(), datasets.Features.from_arrow_schema(table.schema)


def _rebuild(root: Path, record: dict[str, Any]) -> dict[str, bytes]:
    from bindkit._io import jsonl_bytes

    kind = record["kind"]
    if kind == "saber":
        from bindkit.hfdata.schema import mcq_json, row_images

        shards = record["configs"]["default"]["test"]
        rows = [row for shard in shards for row in read_shard(root, shard)[0]]
        order = record.get("order")
        if order:
            position = {mcq_id: i for i, mcq_id in enumerate(order)}
            rows.sort(key=lambda r: position[r["id"]])
        rebuilt = {"saber.jsonl": jsonl_bytes(mcq_json(r) for r in rows)}
        for row in rows:
            rebuilt.update(row_images(row))
        return rebuilt
    if kind == "synth":
        from bindkit.hfdata.schema import decode_rows

        files: dict[str, bytes] = {}
        by_shard: dict[str, bytes] = {}
        # format 2: each trainer config's rows with every field are in its *_full config
        full = record.get("bindkit_configs") or {c: c for c in record["configs"]}
        for config, whole in full.items():  # the default config first
            for split, (shard,) in record["configs"][whole].items():
                if shard not in by_shard:  # a variant's evaluation splits are default's files
                    rows, features = read_shard(root, shard)
                    by_shard[shard] = jsonl_bytes(decode_rows(rows, features))
                name = f"{split}.jsonl" if config == "default" else f"{config}/{split}.jsonl"
                files[name] = by_shard[shard]
        return files
    from bindkit.hfdata.schema import cluster_json

    (shard,) = record["configs"]["default"]["train"]
    return {record["file"]: jsonl_bytes(cluster_json(r) for r in read_shard(root, shard)[0])}
