"""MMEB-V2's annotation files and what a reader makes of them: :class:`Input`, :class:`Query`,
:class:`Split`, and :class:`Source` (where a dataset is published, read by
:func:`read_rows`). The readers are :mod:`._mmeb_v2_image`, :mod:`._mmeb_v2_video` and
:mod:`._mmeb_v2_docs`; their table is :data:`._mmeb_v2_data.SOURCES`.

Files, relative to ``--data ROOT`` (a clone of the Hub dataset ``TIGER-Lab/MMEB-V2`` with each
annotation dataset downloaded to ``ROOT/<hub owner>/<hub name>``, e.g. with
``hf download VLM2Vec/UCF101 --repo-type dataset --local-dir ROOT/VLM2Vec/UCF101``):

* image: ``ziyjiang/MMEB_Test_Instruct/<dataset>/test-*.parquet``, images under ``image-tasks/``;
* video: ``VLM2Vec/<dataset>/`` (parquet, JSON or JSONL, as its card's ``configs:`` names
  them), frames ``video-tasks/frames/<group>/<dataset>/<id>/``
  (else the clip ``video-tasks/videos/<group>/<dataset>/<id>.mp4``);
* visual documents: the BEIR-format ``queries``, ``qrels`` and ``corpus`` parquet files of
  ``vidore/...``, ``openbmb/VisRAG-Ret-Test-...`` or ``VLM2Vec/...``; pages are the corpus rows'
  images (VLM2Vec saves exactly these to ``visdoc-tasks/<dataset>/`` before embedding them).
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from bindkit.errors import BindkitError, DataFormatError
from bindkit.tasks._files import read_parquet_rows

Kind = Literal["text", "image", "video", "page"]
Metric = Literal["hit_at_1", "ndcg_linear_at_5"]


@dataclass(frozen=True)
class Input:
    """One thing to embed: a text, or an image, page or video with ``text`` as instruction."""

    kind: Kind
    text: str
    path: str = ""  # image file or video (frame folder) under ROOT, or a page's corpus id
    sample: bool = True  # a video: False keeps every frame (VLM2Vec's load_frames)
    #: an image or a video: what follows the model's token in VLM2Vec's composed prompt,
    #: whitespace kept (``prompts.Composed``); ``text`` is the plain instruction
    exact: str | None = None


@dataclass(frozen=True)
class Query:
    id: str
    input: Input
    candidates: tuple[str, ...]  # names ranked for this query (a local ranking)
    labels: tuple[str, ...]
    rel_scores: tuple[float, ...] | None = None


@dataclass
class Split:
    """One dataset as VLM2Vec scores it."""

    queries: list[Query]
    candidates: dict[str, Input]  # name -> input, in VLM2Vec's order
    ranking: Literal["local", "global"]
    pages: dict[str, Any] = field(default_factory=dict)  # corpus id -> parquet image cell

    def add(self, name: str, item: Input) -> None:
        self.candidates.setdefault(name, item)


@dataclass(frozen=True)
class Source:
    """Where a dataset's annotation rows are published and how its reader reads them."""

    repo: str  # Hub dataset id, its folder under ROOT
    config: str | None
    split: str
    reader: Callable[[Path, str, Source], Split]
    media: str = ""  # frames / images folder under ROOT
    ranking: Literal["local", "global"] = "local"

    def files(self, root: Path, config: str | None = None) -> list[Path]:
        """The split's annotation files (parquet, JSON or JSONL) in the Hub's layouts.

        A folder with a dataset card resolves them as ``datasets.load_dataset(folder, config,
        split=...)`` does (the card's ``configs:`` mapping, e.g. ``data/test.jsonl`` or a root
        ``msvd_test.json``); otherwise, or when the card names no such config, the parquet
        layouts ``<config>/<split>-*.parquet``, ``<config>/<split>/*.parquet``
        (``refs/convert/parquet``) and ``data/<split>-*.parquet``; last, the file names
        ``datasets`` infers a split from (``data/test.jsonl``, ``default/test/0000.parquet``)."""
        base = root / self.repo
        config = config if config is not None else self.config
        if (base / "README.md").is_file():
            found = _card_files(base, config, self.split)
            if found:
                return found
        folders = [base / config, base / "data" / config] if config else [base / "data", base]
        if not config:
            folders.append(base / "default")
        for folder in folders:
            found = sorted(folder.glob(f"{self.split}-*.parquet")) or sorted(
                (folder / self.split).glob("*.parquet")
            )
            if found:
                return found
        if not config and base.is_dir():
            return _card_files(base, None, self.split)
        return []

    def rows(self, root: Path, columns: tuple[str, ...], config: str | None = None) -> list[Any]:
        return [row for _, row in self.located_rows(root, columns, config)]

    def located_rows(
        self, root: Path, columns: tuple[str, ...], config: str | None = None
    ) -> list[tuple[str, Any]]:
        """Each row with ``FILE row N`` (0-based within its file), for errors that name it."""
        files = self.files(root, config)
        if not files:
            where = root / self.repo / (config or self.config or "")
            raise DataFormatError(
                f"{where}: no {self.split} annotation files (parquet, JSON or JSONL); download "
                f"huggingface.co/datasets/{self.repo} to {root / self.repo}"
            )
        return [(f"{f} row {n}", row) for f in files for n, row in enumerate(read_rows(f, columns))]


def _card_files(base: Path, config: str | None, split: str) -> list[Path]:
    """The split's files as ``datasets`` resolves a local dataset folder (its card's
    ``configs:``, else its inferred layout); empty when it resolves none."""
    try:
        import datasets
    except ImportError:
        raise BindkitError(
            f"{base}: reading its dataset card needs datasets; pip install 'bindkit[benchmarks]'"
        ) from None
    with tempfile.TemporaryDirectory() as cache:  # resolving writes lock files only
        try:
            builder = datasets.load_dataset_builder(str(base), config, cache_dir=cache)
        except (FileNotFoundError, ValueError):
            return []  # no data files, or the card has no such config
    found = (builder.config.data_files or {}).get(split, [])
    return [Path(str(f)) for f in found if Path(str(f)).suffix in READABLE]


READABLE = (".parquet", ".json", ".jsonl")


def read_rows(path: Path, columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """One annotation file's rows (parquet, JSON lines, or a JSON list of records) with
    ``columns``; a missing column names the file."""
    if path.suffix == ".parquet":
        return read_parquet_rows(path, columns)
    try:
        with path.open(encoding="utf-8") as f:
            if path.suffix == ".jsonl":
                records = [json.loads(line) for line in f if line.strip()]
            else:
                records = json.load(f)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise DataFormatError(f"{path}: not a readable JSON file ({exc})") from None
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise DataFormatError(f"{path}: expected a list of records; pass the file as published")
    for record in records:
        missing = [c for c in columns if c not in record]
        if missing:
            raise DataFormatError(
                f"{path}: no field {missing[0]!r} (found {', '.join(record)}); "
                "pass the file as published"
            )
    return [{c: r[c] for c in columns} for r in records]
