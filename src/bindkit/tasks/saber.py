"""SABER evaluation, the seed's protocol: 4-way MCQ, independent and nested gallery retrieval,
containment, in the text→text, text→image, image→text and image→image pairings.

Queries are embedded with role "query", candidates with role "document"; the gallery is every
candidate of the set (7,200 for the default set) in the candidate modality.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.embed.images import ImageRef
from bindkit.embed.protocol import Embedder
from bindkit.errors import BindkitError
from bindkit.metrics.containment import fraction_above
from bindkit.metrics.mcq import winner_shares
from bindkit.metrics.retrieval import average_precision, count_at_least, relevant_scores
from bindkit.results.tables import PAIRING_NAMES, PAIRING_ORDER, Table, as_dict, label, pct
from bindkit.saber.io import CANDIDATE_ROLES, MCQ, Item, SaberSet, read_saber
from bindkit.tasks.base import PAIRINGS, Dataset, EvalContext, Task, TaskMetadata, embed


class SaberTask(Task):
    metadata = TaskMetadata(
        name="saber",
        description="SABER: 4-way MCQ, independent and nested retrieval, containment",
        main_score="mcq_accuracy",
        scores=("map_independent", "map_nested"),
        reference="seed 000 (SABER), Tables 2 and 17-19",
        modalities=("text", "image"),
        pairings=("tt", "ti", "it", "ii"),
        ties="share",
        license="this package",
        published="built in (`bindkit saber generate`)",
        data_help="a directory made by `bindkit saber generate` (default: the default set)",
    )

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        """A SABER directory, or (no --data) the default set generated in memory (seed 0)."""
        if data is None:
            from bindkit._io import jsonl_bytes, sha256_bytes
            from bindkit.saber.build import SaberOptions, build_saber
            from bindkit.saber.vocab import load_vocabulary

            mcqs = tuple(build_saber(SaberOptions(), load_vocabulary()))
            digest = sha256_bytes(jsonl_bytes(m.to_json() for m in mcqs))
            saber = SaberSet(Path("."), mcqs, None)
            return Dataset("saber-default", digest, "builtin:saber seed=0", saber)
        from bindkit._io import sha256_file
        from bindkit.saber.io import saber_file

        saber = read_saber(data)
        if not saber.mcqs:
            raise BindkitError(f"{saber_file(data)}: holds no MCQs; regenerate it")
        seen: dict[str, int] = {}
        for number, mcq in enumerate(saber.mcqs, start=1):
            if mcq.id in seen:
                raise BindkitError(
                    f"{saber_file(data)}: MCQ id {mcq.id!r} appears twice (MCQs {seen[mcq.id]} "
                    f"and {number}); remove the duplicate line or regenerate the set"
                )
            seen[mcq.id] = number
        # a partly rendered set still has image pairings: they stop on (or skip) the gaps
        has_images = any(item.image is not None for m in saber.mcqs for item in m.items)
        name = Path(data).resolve().name or "saber"
        return Dataset(
            name,
            sha256_file(saber_file(data)),
            str(Path(data)),
            saber,
            has_images=has_images,
            images_sha256=_images_digest(saber),
        )

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        saber: SaberSet = dataset.payload
        query_modality, candidate_modality = PAIRINGS[pairing]
        mcqs, missing = _with_images(saber, pairing, ctx)
        if not mcqs:
            return None
        queries = [m.query for m in mcqs]
        candidates = [c for m in mcqs for c in m.candidates]
        q = embed(
            embedder,
            query_modality,
            _inputs(saber, queries, query_modality),
            "query",
            self.query_instruction(subset, ctx),
        )
        g = embed(
            embedder, candidate_modality, _inputs(saber, candidates, candidate_modality), "document"
        )
        result = score_saber(mcqs, q, g)
        if missing is not None:
            result["counts"] |= {"missing_images": missing, "mcqs_total": len(saber.mcqs)}
        return result

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        from bindkit.results.report import group_by_data

        tables: list[Table] = []
        for data_name, group in group_by_data(records):
            tables += _saber_tables(data_name, group)
        return tables


def _with_images(saber: SaberSet, pairing: str, ctx: EvalContext) -> tuple[list[MCQ], int | None]:
    """The MCQs whose images this pairing needs all exist, and how many images are missing
    (None for tt); missing ones stop the run unless ``--allow-missing-images``."""
    from bindkit.saber.io import IMAGES_DIR
    from bindkit.tasks import _images

    query_modality, candidate_modality = PAIRINGS[pairing]
    if "image" not in (query_modality, candidate_modality):
        return list(saber.mcqs), None

    def needed(mcq: MCQ) -> list[Item]:
        items = [mcq.query] if query_modality == "image" else []
        return items + (list(mcq.candidates) if candidate_modality == "image" else [])

    names = [
        item.image or f"{IMAGES_DIR}/{item.id}.png (not rendered)"
        for mcq in saber.mcqs
        for item in needed(mcq)
    ]
    fix = f"render them (`bindkit saber render {saber.directory}`)"
    mask = _images.present(names, saber.directory, "saber", "", ctx, fix)
    keep, start = [], 0
    for mcq in saber.mcqs:
        end = start + len(needed(mcq))
        if mask[start:end].all():
            keep.append(mcq)
        start = end
    return keep, int((~mask).sum())


def _images_digest(saber: SaberSet) -> Any:
    """The image files' digest, read from the files (not the manifest) once, when first asked:
    an image redrawn or replaced since the last run changes the image pairings' identity."""
    import hashlib
    from functools import cache

    from bindkit._io import sha256_file

    @cache
    def digest() -> str:
        out = hashlib.sha256()
        for item in (i for m in saber.mcqs for i in m.items):
            path = saber.image_path(item)
            if path is None:
                continue
            found = sha256_file(path) if path.is_file() else "missing"  # reported when scored
            out.update(f"{item.id}\t{item.image}\t{found}\n".encode())
        return out.hexdigest()

    return digest


def _inputs(saber: SaberSet, items: list[Item], modality: str) -> list[Any]:
    if modality == "text":
        return [item.text for item in items]
    # rendered sets store their images already mirrored (manifest images.flip_applied)
    images = (saber.manifest or {}).get("images")
    mirrored = isinstance(images, dict) and images.get("flip_applied") is True
    refs = []
    for item in items:
        path = saber.image_path(item)
        if path is None:
            raise BindkitError(f"{item.id}: has no image; render images or use --pairings tt")
        refs.append(ImageRef(path, flip=item.flip and not mirrored))
    return refs


def score_saber(mcqs: list[MCQ], queries: np.ndarray, gallery: np.ndarray) -> dict[str, Any]:
    """All SABER metrics from query vectors (one per MCQ) and gallery vectors (4 per MCQ, in
    file order, candidates in role order). Pure: no embedding happens here."""
    m, dim = queries.shape
    if gallery.shape != (4 * m, dim):
        raise ValueError(f"gallery must be ({4 * m}, {dim}), got {gallery.shape}")
    options = gallery.reshape(m, 4, dim)
    mcq_scores = np.einsum("md,mkd->mk", queries, options)
    shares = winner_shares(mcq_scores)
    credit = shares[:, 0]
    ns = np.array([x.n for x in mcqs])
    kinds = np.array([x.kind for x in mcqs])
    scores: dict[str, Any] = {
        "mcq_accuracy": float(credit.mean()),
        "mcq_accuracy_by_n": _by(credit, ns),
        "mcq_accuracy_by_kind": _by(credit, kinds),
        "mcq_wins_by_role": {
            role: float(shares[:, k].mean()) for k, role in enumerate(CANDIDATE_ROLES)
        },
    }

    independent = [i for i, x in enumerate(mcqs) if x.kind == "independent"]
    if independent:
        idx = np.array(independent)
        own = [[4 * i + k for k in range(4)] for i in independent]
        own_scores = relevant_scores(queries[idx], gallery, own)
        thresholds = np.stack([own_scores[:, 0], own_scores.min(axis=1)], axis=1)
        counts = count_at_least(queries[idx], gallery, thresholds)
        ap = 1.0 / counts[:, 0]  # one relevant item: precision at its rank
        top4 = counts[:, 1] <= 4
        scores["map_independent"] = float(ap.mean())
        scores["map_independent_by_n"] = _by(ap, ns[idx])
        scores["top4_occupancy"] = float(top4.mean())
        scores["top4_occupancy_by_n"] = _by(top4.astype(float), ns[idx])

    nested = [i for i, x in enumerate(mcqs) if x.kind == "nested"]
    if nested:
        steps: dict[str, dict[int, int]] = defaultdict(dict)
        for i in nested:
            steps[mcqs[i].chain or ""][mcqs[i].step or 0] = i
        relevant, subset_pairs, superset_pairs = [], [], []
        for i in nested:
            chain = steps[mcqs[i].chain or ""]
            step = mcqs[i].step or 0
            later = [chain[s] for s in sorted(chain) if s > step]
            earlier = [chain[s] for s in sorted(chain) if s < step]
            relevant.append([4 * i] + [4 * j for j in later])
            exact = float(queries[i] @ gallery[4 * i])
            subset_pairs += [(float(queries[i] @ gallery[4 * j]), exact) for j in earlier]
            superset_pairs += [(float(queries[i] @ gallery[4 * j]), exact) for j in later]
        idx = np.array(nested)
        ap = average_precision(queries[idx], gallery, relevant)
        scores["map_nested"] = float(ap.mean())
        scores["map_nested_by_n"] = _by(ap, ns[idx])
        scores["containment_subset_above"] = _above(subset_pairs)
        scores["containment_superset_above"] = _above(superset_pairs)
    counts_out = {
        "mcqs": m,
        "gallery": len(gallery),
        "independent_queries": len(independent),
        "nested_queries": len(nested),
    }
    return {"scores": scores, "counts": counts_out}


def _by(values: np.ndarray, keys: np.ndarray) -> dict[str, float]:
    return {str(k): float(values[keys == k].mean()) for k in sorted(set(keys.tolist()))}


def _above(pairs: list[tuple[float, float]]) -> float | None:
    if not pairs:
        return None
    other, exact = np.array(pairs).T
    return fraction_above(other, exact)


def _saber_tables(data_name: str, records: list[dict[str, Any]]) -> list[Table]:
    cell = {(label(r), r["pairing"]): r["scores"] for r in records}
    pairings = [p for p in PAIRING_ORDER if any(r["pairing"] == p for r in records)]
    models = list(dict.fromkeys(label(r) for r in records))
    columns = ["model"]
    for p in pairings:
        columns += [
            f"{PAIRING_NAMES[p]} MCQ",
            f"{PAIRING_NAMES[p]} mAP ind.",
            f"{PAIRING_NAMES[p]} mAP nest.",
        ]
    columns.append("mean MCQ")
    rows = []
    for model in models:
        row = [model]
        accs = []
        for p in pairings:
            s = cell.get((model, p), {})
            row += [
                pct(s.get("mcq_accuracy")),
                pct(s.get("map_independent")),
                pct(s.get("map_nested")),
            ]
            if isinstance(s.get("mcq_accuracy"), int | float):
                accs.append(s["mcq_accuracy"])
        row.append(pct(sum(accs) / len(accs)) if accs else "–")
        rows.append(row)
    tables = [Table(f"SABER ({data_name}): MCQ accuracy and retrieval mAP (%)", columns, rows)]
    for p in pairings:
        ns = sorted(
            {
                int(n)
                for (m, q), s in cell.items()
                if q == p
                for n in as_dict(s.get("mcq_accuracy_by_n"))
                if str(n).isdigit()
            }
        )
        by_n_rows = [
            [model]
            + [
                pct(as_dict(as_dict(cell.get((model, p))).get("mcq_accuracy_by_n")).get(str(n)))
                for n in ns
            ]
            for model in models
        ]
        tables.append(
            Table(
                f"SABER ({data_name}) {PAIRING_NAMES[p]}: MCQ accuracy by N (%)",
                ["model"] + [f"N={n}" for n in ns],
                by_n_rows,
            )
        )
    detail_columns = [
        "model",
        "pairing",
        "independent",
        "nested",
        "won by attribute swap",
        "won by object swap",
        "won by joint swap",
        "top-4 occupancy",
        "subset above exact",
        "superset above exact",
    ]
    detail = []
    for model in models:
        for p in pairings:
            s = cell.get((model, p))
            if s is None:
                continue
            wins = as_dict(s.get("mcq_wins_by_role"))
            kinds = as_dict(s.get("mcq_accuracy_by_kind"))
            detail.append(
                [
                    model,
                    PAIRING_NAMES[p],
                    pct(kinds.get("independent")),
                    pct(kinds.get("nested")),
                    pct(wins.get("attribute_swap")),
                    pct(wins.get("object_swap")),
                    pct(wins.get("joint_swap")),
                    pct(s.get("top4_occupancy")),
                    pct(s.get("containment_subset_above")),
                    pct(s.get("containment_superset_above")),
                ]
            )
    tables.append(
        Table(
            f"SABER ({data_name}): by kind, error analysis, containment (%)", detail_columns, detail
        )
    )
    return tables
