"""MMEB v1 (Jiang et al., ICLR 2025; TIGER-AI-Lab/VLM2Vec ``eval.py``): 36 subsets in four
meta-tasks; each row is a query and a candidate list whose first entry is the answer. Hit@1 =
``argmax(scores) == 0``; an argmax keeps the first of equal maxima, so a tie with the answer
counts as right (tie rule ``correct``).

Files as published (TIGER-Lab/MMEB-eval on the Hub): ``<subset>/test-*.parquet``, or the Hub's
``refs/convert/parquet`` layout ``<subset>/test/0000.parquet``, with
``qry_text``, ``qry_img_path``, ``tgt_text`` (list) and ``tgt_img_path`` (list), images from its
``images.zip`` under ``--image-root`` (default ``DATA/eval_images``). Every text carries its
subset's own instruction (e.g. ``<|image_1|>\\nRepresent the given image with the following
question: ...``), so the rows' texts are used as published: the image token is removed, and for
an input with an image the rest of the text is passed as the embedder's instruction. Query and
candidate inputs are de-duplicated as in ``EvalDataset.get_paired_data``. A row whose images are
missing is reported and left out.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_bytes, sha256_file
from bindkit.embed.images import ImageRef
from bindkit.embed.protocol import Embedder, Role
from bindkit.errors import DataFormatError
from bindkit.metrics.pairwise import TIE_RULES, hit_at_1
from bindkit.records.tables import Table, pct
from bindkit.tasks import _images
from bindkit.tasks._files import read_parquet_rows
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.mmeb._base import META_TASKS, MMEBTask

SUBSETS = tuple(s for group in META_TASKS.values() for s in group)
COLUMNS = ("qry_text", "qry_img_path", "tgt_text", "tgt_img_path")
IMAGE_TOKENS = ("<|image_1|>", "<|image_pad|>", "<image>")


@dataclass(frozen=True)
class MMEBRow:
    query: tuple[str, str]  # (text, image path or "")
    candidates: tuple[tuple[str, str], ...]  # the answer first


@dataclass(frozen=True)
class MMEBData:
    rows: dict[str, list[MMEBRow]]
    image_root: Path


def _strip(text: str) -> str:
    for token in IMAGE_TOKENS:
        text = text.replace(token, "")
    return text.strip()


def read_subset(files: list[Path]) -> list[MMEBRow]:
    rows = []
    for file in files:
        for number, raw in enumerate(read_parquet_rows(file, COLUMNS)):
            where = f"{file}: row {number}"
            texts, images = raw["tgt_text"], raw["tgt_img_path"]
            if not isinstance(raw["qry_text"], str) or not isinstance(texts, list) or not texts:
                raise DataFormatError(f"{where}: qry_text must be text and tgt_text a list")
            if not isinstance(images, list) or len(images) != len(texts):
                raise DataFormatError(f"{where}: tgt_img_path must match tgt_text in length")
            candidates = tuple(
                (str(t or ""), str(i or "")) for t, i in zip(texts, images, strict=True)
            )
            rows.append(MMEBRow((raw["qry_text"], str(raw["qry_img_path"] or "")), candidates))
    return rows


def subset_files(data: Path, subset: str) -> list[Path]:
    """A subset's test parquet files: ``<subset>/*.parquet`` (the dataset's own layout), else
    ``<subset>/test/*.parquet`` (the Hub's ``refs/convert/parquet`` export)."""
    return sorted((data / subset).glob("*.parquet")) or sorted(
        (data / subset / "test").glob("*.parquet")
    )


class MMEB(MMEBTask):
    metadata = TaskMetadata(
        name="mmeb",
        description="MMEB v1: Hit@1 on 36 subsets (classification, VQA, retrieval, grounding)",
        main_score="hit_at_1",
        averaged=True,
        reference="Jiang et al., ICLR 2025 (VLM2Vec); github.com/TIGER-AI-Lab/VLM2Vec eval.py",
        subsets=SUBSETS,
        modalities=("text", "image"),
        pairings=("it",),
        ties="correct",
        license="see the dataset card (per-source licences)",
        published="https://huggingface.co/datasets/TIGER-Lab/MMEB-eval (<subset>/*.parquet, "
        "images.zip)",
        data_dir="mmeb",
        data_help="the MMEB-eval folder of <subset>/*.parquet (pip install 'bindkit[benchmarks]')",
        fetchable=True,
    )
    tie_rules = TIE_RULES

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        present = [s for s in SUBSETS if subset_files(data, s)]
        if not present:
            raise DataFormatError(
                f"{data}: no <subset>/*.parquet folders (e.g. {data / SUBSETS[0]}); pass "
                f"{self.metadata.data_help}"
            )
        rows, digests = {}, []
        for subset in present:
            files = subset_files(data, subset)
            rows[subset] = read_subset(files)
            digests += [sha256_file(f) for f in files]
        root = image_root if image_root is not None else data / "eval_images"
        payload = MMEBData(rows, root)
        digest = sha256_bytes("".join(digests).encode())
        return Dataset("mmeb", digest, str(data), payload, tuple(present), has_images=True)

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        data: MMEBData = dataset.payload
        rows = data.rows[subset]
        needed = [p for r in rows for _, p in (r.query, *r.candidates) if p]
        mask = _images.present(
            sorted(set(needed)), data.image_root, f"mmeb {subset}", self.metadata.published, ctx
        )
        ok = {p for p, m in zip(sorted(set(needed)), mask, strict=True) if m}
        keep = [r for r in rows if all(not p or p in ok for _, p in (r.query, *r.candidates))]
        if not keep:
            return None
        queries = _embed(embedder, sorted({r.query for r in keep}), "query", data.image_root)
        targets = _embed(
            embedder, sorted({c for r in keep for c in r.candidates}), "document", data.image_root
        )
        credit = [
            float(
                hit_at_1(
                    np.array([[float(queries[r.query] @ targets[c]) for c in r.candidates]]),
                    0,
                    self.metadata.tie_rule(subset),
                )[0]
            )
            for r in keep
        ]
        counts = {"rows": len(rows), "scored": len(keep), "missing_images": int((~mask).sum())}
        number = {id(r): k for k, r in enumerate(rows)}  # rows have no ids: their file order
        per_query = {"metric": "hit", "ids": [str(number[id(r)]) for r in keep], "values": credit}
        return {
            "scores": {"hit_at_1": float(np.mean(credit))},
            "counts": counts,
            "per_query": per_query,
        }

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        """Mean Hit@1 per meta-task and overall (over the subsets each model has)."""
        by_model = self.scores_by_model(records)
        if not by_model:
            return []
        rows = []
        for model, hits in by_model.items():
            row = [model]
            for group in META_TASKS.values():
                values = [hits[s] for s in group if s in hits]
                row.append(pct(np.mean(values)) + f" ({len(values)})" if values else "–")
            row.append(pct(np.mean(list(hits.values()))) + f" ({len(hits)})")
            rows.append(row)
        columns = ["model", *META_TASKS, "overall"]
        return [Table("MMEB Hit@1 per meta-task (%; subsets scored)", columns, rows)]


def _embed(
    embedder: Embedder, inputs: list[tuple[str, str]], role: Role, root: Path
) -> dict[tuple[str, str], np.ndarray]:
    """One vector per (text, image path): images with the text as their instruction."""
    out: dict[tuple[str, str], np.ndarray] = {}
    texts = [x for x in inputs if not x[1]]
    if texts:
        vectors = embedder.embed_texts([_strip(t) for t, _ in texts], role=role)
        out |= dict(zip(texts, vectors, strict=True))
    by_instruction: dict[str, list[tuple[str, str]]] = {}
    for x in inputs:
        if x[1]:
            by_instruction.setdefault(_strip(x[0]), []).append(x)
    for instruction, group in by_instruction.items():
        vectors = embedder.embed_images(
            [ImageRef(root / p) for _, p in group], role=role, instruction=instruction or None
        )
        out |= dict(zip(group, vectors, strict=True))
    return out
