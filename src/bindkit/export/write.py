"""``bindkit export saber|synth|clusters``: a bindkit directory as a Hugging Face dataset folder.

Layout of ``HFDIR``::

    README.md                       dataset card: YAML (configs, licence, ...) and how it was made
    bindkit.json                    what was exported: kind, source, command, hashes, configs
    bindkit/...                     the bindkit-side files kept verbatim (manifest, splits.json,
                                    examples.jsonl, diagnostics), so a read-back is exact
    data/<config>/<split>-00000-of-00001.parquet

SABER: config ``default`` (every MCQ, split ``test``) and one config per N (``n2`` ...), whose
shards the default config lists in N order. Synth: config ``default`` with the splits ``train``,
``val``, ``test`` and ``heldout_<type>``, one config per training variant (``no_overlap`` ...)
whose evaluation splits are the default config's files; these hold ``query``, ``positive``,
``negative`` only, so ``SentenceTransformerTrainer`` trains on them as they are (it takes every
column as an input), and each has a ``*_full`` twin (``full``, ``no_overlap_full`` ...) with the
rows' class labels too, from which bindkit rebuilds the files. Clusters: config ``default``, split
``train``. The folder is written beside ``HFDIR`` and renamed into place.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError, DataFormatError
from bindkit.hfdata.format import EXPORT_FILE, FORMAT, FORMAT_VERSION, KINDS, SIDECARS, require_hf

CARD = "README.md"
__all__ = ["EXPORT_FILE", "FORMAT", "FORMAT_VERSION", "KINDS", "SIDECARS"]
STAGING_TAG = "export"  # staged as .OUT.export-PID-XXXXXXXX beside OUT


@dataclass
class Shard:
    """One parquet file: its config, split, rows (a list, or a callable yielding them, so
    image bytes are read batch by batch while the file is written) and features."""

    config: str
    split: str
    rows: list[dict[str, Any]] | Callable[[], Iterator[dict[str, Any]]]
    features: Any
    count: int = -1  # the number of rows (-1: len(rows))

    def __post_init__(self) -> None:
        if self.count < 0:
            assert isinstance(self.rows, list), "give count with a row callable"
            self.count = len(self.rows)

    def iter_rows(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows) if isinstance(self.rows, list) else self.rows()

    @property
    def path(self) -> str:
        return f"data/{self.config}/{self.split}-00000-of-00001.parquet"


@dataclass
class Export:
    """Everything one export writes besides the card's fixed parts."""

    kind: str
    source: Path
    shards: list[Shard]
    configs: dict[str, dict[str, list[str]]]  # config -> split -> shard paths
    sidecars: dict[str, bytes]  # name under bindkit/ -> verbatim bytes
    pretty_name: str
    task_categories: list[str]
    tags: list[str]
    made: list[str]  # lines of the card's "How it was made" section
    extra: dict[str, Any] = field(default_factory=dict)


def _sha256(data: bytes) -> str:
    from bindkit._io import sha256_bytes

    return sha256_bytes(data)


# -- SABER ------------------------------------------------------------------------------------
def saber_export(directory: str | Path) -> Export:
    """The shards of a SABER directory, images embedded."""
    from bindkit._io import jsonl_bytes, sha256_file
    from bindkit.hfdata.schema import mcq_row, saber_features
    from bindkit.saber.io import MANIFEST_FILE, Item, read_saber, saber_file

    root = Path(directory)
    saber = read_saber(root)
    path = saber_file(root)
    if not saber.mcqs:
        raise DataFormatError(f"{path}: holds no MCQs; regenerate it")
    if jsonl_bytes(m.to_json() for m in saber.mcqs) != path.read_bytes():
        raise DataFormatError(
            f"{path}: not written as bindkit writes it (edited by hand?), so a read-back would "
            "differ; regenerate the set, or rewrite it with bindkit.saber.io.write_saber"
        )

    def image(item: Item) -> bytes | None:
        file = saber.image_path(item)
        return None if file is None else file.read_bytes()

    features = saber_features()
    ns = sorted({m.n for m in saber.mcqs})
    digests = _checked_images(saber)

    def rows(n: int) -> Callable[[], Iterator[dict[str, Any]]]:
        return lambda: (mcq_row(m, image) for m in saber.mcqs if m.n == n)

    shards = [
        Shard(f"n{n}", "test", rows(n), features, sum(m.n == n for m in saber.mcqs)) for n in ns
    ]
    configs = {"default": {"test": [s.path for s in shards]}}
    configs |= {s.config: {"test": [s.path]} for s in shards}
    order = [m.id for m in saber.mcqs]
    grouped = [m.id for n in ns for m in saber.mcqs if m.n == n]
    sidecars = {}
    if (root / MANIFEST_FILE).is_file():
        sidecars[MANIFEST_FILE] = (root / MANIFEST_FILE).read_bytes()
    manifest = saber.manifest or {}
    images = sum(item.image is not None for m in saber.mcqs for item in m.items)
    made = [
        f"seed: {manifest.get('seed', 'not recorded')}",
        f"saber.jsonl sha256: {sha256_file(path)}",
        f"vocabulary sha256: {(manifest.get('vocabulary') or {}).get('sha256', 'not recorded')}",
        f"images: {images} embedded"
        + (
            f" (set sha256 {manifest['images'].get('sha256')})"
            if isinstance(manifest.get("images"), Mapping)
            else ""
        ),
    ]
    return Export(
        kind="saber",
        source=root,
        shards=shards,
        configs=configs,
        sidecars=sidecars,
        pretty_name="SABER",
        task_categories=["multiple-choice", "text-retrieval"]
        + (["image-to-text", "text-to-image"] if images else []),
        tags=["binding", "compositionality", "bindkit", "saber"],
        made=made,
        extra={
            "order": None if order == grouped else order,
            "bindkit_files": {
                "saber.jsonl": sha256_file(path),
                **{n: digests.get(n) or sha256_file(root / n) for n in _image_files(saber.mcqs)},
            },
        },
    )


def _checked_images(saber: Any) -> dict[str, str]:
    """Every image exists and is the one rendered, before anything is written: its sha256 is
    the manifest's record of it, or (no record) the file opens as an image. Returns each
    image path's sha256.

    Raises:
        DataFormatError: an image is missing, changed since rendering, or not an image.
    """
    from PIL import Image, UnidentifiedImageError

    from bindkit._io import sha256_file

    section = (saber.manifest or {}).get("images")
    records = section.get("items") if isinstance(section, Mapping) else None
    records = records if isinstance(records, Mapping) else {}
    digests: dict[str, str] = {}
    for mcq in saber.mcqs:
        for item in mcq.items:
            file = saber.image_path(item)
            if file is None:
                continue
            if not file.is_file():
                raise DataFormatError(f"{file}: image of {item.id} not found; render it again")
            digest = digests.setdefault(item.image, sha256_file(file))
            record = records.get(item.id)
            recorded = record.get("sha256") if isinstance(record, Mapping) else None
            if isinstance(recorded, str):
                if recorded != digest:
                    raise DataFormatError(
                        f"{file}: not the image rendered for {item.id} (sha256 differs from "
                        "the manifest's); render it again"
                    )
                continue
            try:
                with Image.open(file) as image:
                    image.verify()
            except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
                raise DataFormatError(
                    f"{file}: image of {item.id} is not a readable image ({exc}); render it again"
                ) from None
    return digests


def _image_files(mcqs: Sequence[Any]) -> list[str]:
    return list(dict.fromkeys(i.image for m in mcqs for i in m.items if i.image is not None))


# -- synth ------------------------------------------------------------------------------------
def synth_export(directory: str | Path) -> Export:
    """The split set of a synth run (``bindkit synth split``), checked whole and current."""
    from bindkit.hfdata.schema import (
        encode_triplets,
        trainer_features,
        trainer_rows,
        triplet_features,
    )
    from bindkit.saber.io import iter_lines
    from bindkit.synth.splits import SPLITS_JSON, VARIANTS, verify_splits
    from bindkit.synth.splitset import require_split_set

    root = Path(directory)
    summary = verify_splits(root)
    files: dict[str, Any] = summary["files"]
    if not files:
        raise DataFormatError(
            f"{root / SPLITS_JSON}: lists no split files; rerun `bindkit synth split {root}`"
        )
    require_split_set(root / next(iter(files)))
    shards: list[Shard] = []
    configs: dict[str, dict[str, list[str]]] = {}
    full: dict[str, str] = {}  # trainer config -> the config with every field
    by_name: dict[str, tuple[Shard, Shard]] = {}
    for name in files:  # default-config files first, as split_files lists them
        config, _, split = name.rpartition("/")
        config, split = config or "default", split.removesuffix(".jsonl")
        whole = full.setdefault(config, full_config(config))
        shared = by_name.get(split)
        if config != "default" and shared is not None and files[f"{split}.jsonl"] == files[name]:
            for target, shard in zip((config, whole), shared, strict=True):
                configs.setdefault(target, {})[split] = [shard.path]  # the same bytes: one shard
            continue
        if config not in ("default", *VARIANTS):
            raise DataFormatError(f"{root / SPLITS_JSON}: unknown split file {name}")
        rows = [row for _, row in iter_lines(root / name)]
        features = triplet_features(rows)
        labelled = Shard(whole, split, encode_triplets(rows, features, str(root / name)), features)
        plain = trainer_rows(rows)
        trainer = Shard(config, split, plain, trainer_features())
        shards += [trainer, labelled]
        if config == "default":
            by_name[split] = (trainer, labelled)
        configs.setdefault(config, {})[split] = [trainer.path]
        configs.setdefault(whole, {})[split] = [labelled.path]
    sidecars = {SPLITS_JSON: (root / SPLITS_JSON).read_bytes()}
    sidecars["examples.jsonl"] = (root / "examples.jsonl").read_bytes()
    made = [
        f"seed: {summary.get('options', {}).get('seed', 'not recorded')}",
        f"examples.jsonl sha256: {summary['examples']['sha256']} "
        f"({summary['examples']['count']} examples)",
        f"splits.json generation: {summary.get('generation', 'not recorded')}",
        "variants: " + (", ".join(c for c in full if c != "default") or "none"),
        "configs `default` and the variants hold `query`, `positive`, `negative` only, the "
        "(anchor, positive, negative) columns sentence-transformers' trainer takes as they "
        "are; each `*_full` config holds the same rows with their `type` and `negative_kind` "
        "(and `format`) as class labels",
    ]
    return Export(
        kind="synth",
        source=root,
        shards=shards,
        configs=configs,
        sidecars=sidecars,
        pretty_name="bindkit synthetic binding triplets",
        task_categories=["sentence-similarity", "feature-extraction"],
        tags=["binding", "compositionality", "bindkit", "triplets", "synthetic"],
        made=made,
        extra={
            "bindkit_files": {name: entry["sha256"] for name, entry in files.items()},
            "bindkit_configs": full,
        },
    )


def full_config(config: str) -> str:
    """The synth export's config with every field of trainer config ``config``'s rows."""
    return "full" if config == "default" else f"{config}_full"


# -- clusters ---------------------------------------------------------------------------------
def clusters_export(path: str | Path) -> Export:
    """A ``bindkit mine`` output file (and its ``.diagnostics.json`` when present)."""
    from bindkit.hfdata.schema import cluster_features
    from bindkit.mining.data import sidecar
    from bindkit.saber.io import iter_lines

    path = Path(path)
    if path.is_dir():
        raise BindkitError(
            f"{path}: a directory; give the clusters JSONL that `bindkit mine` wrote"
        )
    if not path.is_file():
        raise BindkitError(f"{path}: not found; give the clusters JSONL that `bindkit mine` wrote")
    records = []
    for lineno, record in iter_lines(path):
        if not (
            isinstance(record, dict)
            and isinstance(record.get("anchor"), str)
            and isinstance(record.get("task"), str)
            and isinstance(record.get("phase"), int)
            and isinstance(record.get("pairs"), list)
            and all(isinstance(p, dict) for p in record["pairs"])
        ):
            raise DataFormatError(
                f"{path}:{lineno}: expected {{'anchor', 'task', 'phase', 'pairs': [...]}} "
                "(the output of `bindkit mine`)"
            )
        problem = _pairs_problem(record["pairs"])
        if problem is not None:
            raise DataFormatError(f"{path}:{lineno}: {problem}; `bindkit mine` never writes that")
        records.append(record)
    if not records:
        raise DataFormatError(f"{path}: no clusters")
    shard = Shard("default", "train", records, cluster_features(records, str(path)))
    diagnostics = sidecar(path, ".diagnostics.json")
    sidecars = {}
    provenance: dict[str, Any] = {}
    if diagnostics.is_file():
        sidecars[f"{path.stem}.diagnostics.json"] = diagnostics.read_bytes()
        provenance = _diagnostics_provenance(diagnostics)
    options = provenance.get("options", {})
    made = [
        f"method: {options.get('method', 'not recorded')}, k {options.get('k', '?')}, "
        f"seed {options.get('seed', 'not recorded')}",
        f"model: {provenance.get('model', 'not recorded')}",
        f"mining input sha256: {provenance.get('data_sha256', 'not recorded')}",
        f"{path.name} sha256: {_sha256(path.read_bytes())}",
    ]
    return Export(
        kind="clusters",
        source=path,
        shards=[shard],
        configs={"default": {"train": [shard.path]}},
        sidecars=sidecars,
        pretty_name="bindkit mined clusters",
        task_categories=["sentence-similarity"],
        tags=["bindkit", "hard-negatives", "clusters"],
        made=made,
        extra={"file": path.name, "bindkit_files": {path.name: _sha256(path.read_bytes())}},
    )


def _pairs_problem(pairs: list[dict[str, Any]]) -> str | None:
    """What makes a cluster's pairs unlike `bindkit mine`'s (the anchor's row first, each row a
    (query, positive) row of the mining input), or None."""
    if not pairs:
        return "a cluster with no pairs"
    for number, pair in enumerate(pairs, start=1):
        for key in ("query", "positive"):
            if not isinstance(pair.get(key), str) or not pair[key]:
                return f"pair {number} has no text {key!r} (found {pair.get(key)!r})"
    return None


def _diagnostics_provenance(diagnostics: Path) -> dict[str, Any]:
    """The ``provenance`` of a mine diagnostics sidecar, checked: it is exported verbatim and
    its fields go on the card, so a corrupt one is refused rather than shipped.

    Raises:
        DataFormatError: not JSON, or ``provenance`` / ``provenance.options`` not an object.
    """
    fix = "rerun `bindkit mine`, or move the file away to export without it"
    try:
        data = json.loads(diagnostics.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise DataFormatError(f"{diagnostics}: corrupt JSON ({exc}); {fix}") from None
    provenance = data.get("provenance", {}) if isinstance(data, dict) else None
    if not isinstance(provenance, dict):
        raise DataFormatError(f"{diagnostics}: 'provenance' is not an object; {fix}")
    if not isinstance(provenance.get("options", {}), dict):
        raise DataFormatError(f"{diagnostics}: 'provenance.options' is not an object; {fix}")
    return provenance


BUILDERS = {"saber": saber_export, "synth": synth_export, "clusters": clusters_export}


# -- writing ----------------------------------------------------------------------------------
def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket of a row count."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")]
    bounds += [(1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")]
    for bound, name in bounds:
        if rows < bound:
            return name
    return "10M<n<100M"


def card_text(export: Export, license: str, command: str) -> str:
    """The dataset card: YAML metadata the Hub and ``load_dataset`` read, then how it was made."""
    from huggingface_hub import DatasetCardData

    from bindkit import __version__

    default = "default"
    configs = [
        {
            "config_name": name,
            "data_files": [
                {"split": s, "path": p if len(p) > 1 else p[0]} for s, p in splits.items()
            ],
            **({"default": True} if name == default else {}),
        }
        for name, splits in export.configs.items()
    ]
    rows = sum(s.count for s in export.shards if s.path in _files(export, default))
    data = DatasetCardData(
        license=license,
        language=["en"],  # bindkit's templates and vocabularies are English
        pretty_name=export.pretty_name,
        task_categories=export.task_categories,
        tags=export.tags,
        size_categories=[size_category(rows)],
        configs=configs,
    )
    splits = "\n".join(
        f"| `{name}` | {', '.join(f'`{s}`' for s in splits)} |"
        for name, splits in export.configs.items()
    )
    made = "\n".join(f"- {line}" for line in export.made)
    return (
        f"---\n{data.to_yaml()}\n---\n\n# {export.pretty_name}\n\n"
        f"Exported by bindkit {__version__} from `{export.source.name}` ({export.kind}).\n\n"
        "```python\nimport datasets\n"
        f'ds = datasets.load_dataset("PATH_OR_REPO_ID", "{default}")\n```\n\n'
        f"| config | splits |\n|---|---|\n{splits}\n\n"
        f"## How it was made\n\n- command: `{command}`\n{made}\n\n"
        "bindkit reads this folder back wherever it reads its own files "
        "(`bindkit eval --data HFDIR`, `--train HFDIR:train`); `bindkit.json` holds the "
        "hashes and `bindkit/` the bindkit-side files, verbatim.\n"
    )


def _files(export: Export, config: str) -> set[str]:
    return {p for paths in export.configs[config].values() for p in paths}


def write_export(
    export: Export, out: str | Path, *, license: str, command: str, overwrite: bool = False
) -> dict[str, Any]:
    """Write ``export`` to ``out`` (staged beside it, renamed into place) and return the record
    stored as ``out/bindkit.json``."""
    from bindkit import __version__
    from bindkit._io import check_can_create, check_not_input, sha256_file
    from bindkit._staging import new_staging, swap_into_place

    out = Path(out)
    check_not_input(out, [export.source])
    _check_out(out, overwrite)
    check_can_create(out.parent)
    staging = new_staging(out, STAGING_TAG)
    try:
        for shard in export.shards:
            target = staging / shard.path
            target.parent.mkdir(parents=True, exist_ok=True)
            write_parquet(shard.iter_rows(), shard.features, target)
        for name, data in export.sidecars.items():
            (staging / SIDECARS).mkdir(parents=True, exist_ok=True)
            (staging / SIDECARS / name).write_bytes(data)
        files = {
            str(p.relative_to(staging)): sha256_file(p)
            for p in sorted(staging.rglob("*"))
            if p.is_file()
        }
        record = {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "kind": export.kind,
            "bindkit_version": __version__,
            "source": export.source.resolve().name,  # its name: no machine path is published
            "command": command,
            "license": license,
            "configs": export.configs,
            "rows": {s.path: s.count for s in export.shards},
            "files": files,
            **export.extra,
        }
        (staging / EXPORT_FILE).write_text(json.dumps(record, indent=2) + "\n", "utf-8")
        (staging / CARD).write_text(card_text(export, license, command), "utf-8")
        swap_into_place(staging, out, replace=overwrite)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already once renamed into place
    return record


def write_parquet(
    rows: Iterator[dict[str, Any]], features: Any, path: Path, batch: int = 64
) -> int:
    """Write rows as one parquet file in row groups of ``batch`` (encoded by ``datasets``, so
    the schema carries the features ``load_dataset`` restores); returns the row count."""
    import itertools

    import datasets
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    writer = None
    count = 0
    try:
        while chunk := list(itertools.islice(rows, batch)):
            table = datasets.Dataset.from_list(chunk, features=features).data.table
            if writer is None:
                writer = pq.ParquetWriter(str(path), table.schema)
            writer.write_table(table)
            count += len(chunk)
        if writer is None:  # no rows: the schema alone
            table = datasets.Dataset.from_list([], features=features).data.table
            pq.write_table(table, str(path))
    finally:
        if writer is not None:
            writer.close()
    return count


def _check_out(out: Path, overwrite: bool) -> None:
    if out.is_file():
        raise BindkitError(f"--out {out}: a file; give a directory for the dataset folder")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise BindkitError(f"--out {out}: not empty; pass --overwrite or another --out")
        if not (out / EXPORT_FILE).is_file():
            raise BindkitError(
                f"--out {out}: holds files that are not a bindkit export; choose another --out"
            )


def export(
    kind: str,
    source: str | Path,
    out: str | Path,
    *,
    license: str | None = None,
    command: str = "",
    overwrite: bool = False,
) -> dict[str, Any]:
    """Export a SABER directory, a synth run or a clusters file as a Hugging Face dataset.

    Example:
        >>> export("saber", "saber/", "saber-hf/")  # doctest: +SKIP
        >>> datasets.load_dataset("saber-hf/", "n3")  # doctest: +SKIP

    Raises:
        BindkitError: an unknown kind, an empty or spaced licence, missing extras, an input
            that is incomplete or not as bindkit writes it, an ``out`` that is not empty
            (without ``overwrite``).
    """
    if kind not in BUILDERS:
        raise BindkitError(f"export {kind!r}: use one of {', '.join(KINDS)}")
    if license is not None and (not license.strip() or any(c.isspace() for c in license)):
        raise BindkitError(
            f"--license {license!r}: give a licence identifier of the Hub's list, "
            "e.g. mit, cc-by-4.0 or other"
        )
    require_hf()
    built = BUILDERS[kind](source)
    default_license = "other" if kind == "clusters" else "mit"  # clusters inherit their input's
    return write_export(
        built,
        out,
        license=license or default_license,
        command=command or f"bindkit export {kind} {source} --out {out}",
        overwrite=overwrite,
    )


def push(folder: str | Path, repo_id: str, *, private: bool = False) -> str:
    """Upload an export folder to the Hub as a dataset repository; returns the commit URL.

    Raises:
        BindkitError: no Hugging Face token is configured, or the upload fails.
    """
    import huggingface_hub

    if huggingface_hub.get_token() is None:
        raise BindkitError(
            f"--push {repo_id}: no Hugging Face token; run `hf auth login` or set HF_TOKEN"
        )
    api = huggingface_hub.HfApi()
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        info = api.upload_folder(
            folder_path=str(folder),
            repo_id=repo_id,
            repo_type="dataset",
            commit_message="bindkit export",
        )
    except huggingface_hub.errors.HfHubHTTPError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BindkitError(f"--push {repo_id}: {first}") from None
    return str(getattr(info, "commit_url", info))
