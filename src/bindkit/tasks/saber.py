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
from bindkit.errors import BindkitError, DataFormatError
from bindkit.metrics.containment import fraction_above
from bindkit.metrics.pairwise import TIE_RULES, Ties, hit_at_1
from bindkit.metrics.retrieval import average_precision, group_ends, top_k
from bindkit.records.tables import PAIRING_NAMES, PAIRING_ORDER, Table, as_dict, label, pct
from bindkit.saber.io import CANDIDATE_ROLES, MCQ, Item, SaberSet, read_saber, role_positions
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
        version=2,  # 2: roles read from the file, chained tie groups (issue #26)
        mteb_names={
            "mcq_accuracy": "accuracy",
            "map_independent": "map_at_1000",
            "map_nested": "map_at_1000",
        },
    )
    tie_rules = TIE_RULES  # the MCQ credit and wins by role; mAP and containment have their own

    def __init__(self, swap_supersets: bool = False) -> None:
        """``swap_supersets`` (``--task-option swap_supersets=true``): count the swap candidates
        of later chain steps that hold every binding of a nested query as supersets of it:
        relevant in nested mAP and supersets in containment (default: only binding-preserving
        candidates of later steps)."""
        if not isinstance(swap_supersets, bool):
            raise BindkitError(f"saber swap_supersets {swap_supersets!r}: give true or false")
        self.swap_supersets = swap_supersets

    def options(self, subset: str) -> dict[str, Any]:
        return {"swap_supersets": self.swap_supersets}

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
            try:
                role_positions(mcq)  # refused here, before any embedding
            except DataFormatError as exc:
                raise DataFormatError(f"{saber_file(data)}: {exc}") from None
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

    def halve(self, dataset: Dataset, half: str) -> Dataset:
        """A nested chain's MCQs share bindings: the chain is one key; an independent MCQ is
        keyed by its id."""
        from dataclasses import replace

        from bindkit.tasks._halves import check_half, halved, keep

        chosen = check_half(half)
        saber: SaberSet = dataset.payload
        mcqs = keep(saber.mcqs, lambda m: f"chain:{m.chain}" if m.chain else f"mcq:{m.id}", chosen)
        return halved(dataset, replace(saber, mcqs=tuple(mcqs)), chosen)

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
            embedder,
            candidate_modality,
            _inputs(saber, candidates, candidate_modality),
            "document",
            self.document_instruction(subset, ctx),
        )
        ties = self.metadata.tie_rule(subset)
        result = score_saber(mcqs, q, g, ties=ties, swap_supersets=self.swap_supersets)
        if missing is not None:
            result["counts"] |= {"missing_images": missing, "mcqs_total": len(saber.mcqs)}
        return result

    def describe_ids(
        self, dataset: Dataset, subset: str, pairing: str
    ) -> dict[str, tuple[str, str]]:
        """MCQ ids show their query, candidate ids the candidate, in the pairing's modality."""
        saber: SaberSet = dataset.payload
        query_modality, candidate_modality = PAIRINGS[pairing]

        def shown(item: Item, modality: str) -> tuple[str, str]:
            path = saber.image_path(item) if modality == "image" else None
            return ("image", str(path)) if path is not None else ("text", item.text)

        out = {c.id: shown(c, candidate_modality) for m in saber.mcqs for c in m.candidates}
        return out | {m.id: shown(m.query, query_modality) for m in saber.mcqs}

    def correct_ids(self, dataset: Dataset, subset: str, pairing: str) -> dict[str, frozenset[str]]:
        """Each MCQ's binding-preserving candidate (the MCQ's answer; for retrieval, the exact
        match)."""
        saber: SaberSet = dataset.payload
        return {
            m.id: frozenset(c.id for c in m.candidates if c.role == "binding_preserving")
            for m in saber.mcqs
        }

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        from bindkit.records.fields import group_by_data

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


# comparison -> (score key, report column); the counts add "_comparisons" to the key. The seed
# (Section 5) reports subset above exact (3.3-17.1 %) and subset above superset (33-39 %).
CONTAINMENT = {
    "subset_above_exact": ("containment_subset_above", "subset > exact (seed)"),
    "superset_above_exact": ("containment_superset_above", "superset > exact"),
    "subset_above_superset": ("containment_subset_above_superset", "subset > superset (seed)"),
}


def score_saber(
    mcqs: list[MCQ],
    queries: np.ndarray,
    gallery: np.ndarray,
    *,
    ties: Ties | None = None,
    swap_supersets: bool = False,
) -> dict[str, Any]:
    """All SABER metrics from query vectors (one per MCQ) and gallery vectors (4 per MCQ, in
    file order). Each candidate's role is read from its ``role`` field, not its position
    (:func:`bindkit.saber.io.role_positions`). Pure: no embedding happens here.

    ``ties`` (None: the task's declared rule) is the MCQ's tie rule: each option's credit per
    question (:func:`bindkit.metrics.pairwise.hit_at_1`), the correct option's being the MCQ
    accuracy. The retrieval scores rank whole tie groups (:mod:`bindkit.metrics.retrieval`) and
    containment counts a tie 1/2 (:mod:`bindkit.metrics.containment`), whatever ``ties`` is.

    Nested queries: *subset* candidates are the binding-preserving candidates of earlier steps
    of the chain, *superset* candidates those of later steps; with ``swap_supersets`` also the
    swap candidates of later steps that hold every binding of the query. Supersets are relevant
    in nested mAP. Containment compares, per query, every subset and every superset with the
    exact match (its own binding-preserving candidate) and every subset with every superset.
    """
    m, dim = queries.shape
    if gallery.shape != (4 * m, dim):
        raise ValueError(f"gallery must be ({4 * m}, {dim}), got {gallery.shape}")
    # column k of `by_role` is the gallery row of the candidate with role CANDIDATE_ROLES[k]
    by_role = 4 * np.arange(m)[:, None] + np.array([role_positions(x) for x in mcqs], dtype=int)
    exact = by_role[:, 0]  # the binding-preserving candidates
    mcq_scores = np.einsum("md,mkd->mk", queries, gallery[by_role])
    rule = SaberTask.metadata.tie_rule("default") if ties is None else ties
    shares = np.stack([hit_at_1(mcq_scores, k, rule) for k in range(len(CANDIDATE_ROLES))], 1)
    credit = shares[:, 0]
    gallery_ids = [c.id for x in mcqs for c in x.candidates]
    per_query: list[dict[str, Any]] = [
        {
            "metric": "correct",
            "ids": [x.id for x in mcqs],
            "values": credit.tolist(),
            "top": [  # the four options, best first
                [gallery_ids[j] for j in by_role[i][np.argsort(-mcq_scores[i], kind="stable")]]
                for i in range(m)
            ],
        }
    ]
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
        ends = np.stack(group_ends(queries[idx], gallery, by_role[idx].tolist()))
        ap = 1.0 / ends[:, 0]  # one relevant item: precision where its tie group ends
        top4 = ends.max(axis=1) <= 4  # every own candidate's tie group ends by rank 4
        scores["map_independent"] = float(ap.mean())
        scores["map_independent_by_n"] = _by(ap, ns[idx])
        scores["top4_occupancy"] = float(top4.mean())
        scores["top4_occupancy_by_n"] = _by(top4.astype(float), ns[idx])
        per_query.append(_retrieval_per_query("ap_independent", mcqs, idx, ap, queries, gallery))

    nested = [i for i, x in enumerate(mcqs) if x.kind == "nested"]
    counts_out = {
        "mcqs": m,
        "gallery": len(gallery),
        "independent_queries": len(independent),
        "nested_queries": len(nested),
    }
    if nested:
        steps: dict[str, dict[int, int]] = defaultdict(dict)
        for i in nested:
            steps[mcqs[i].chain or ""][mcqs[i].step or 0] = i
        relevant: list[list[int]] = []
        pairs: dict[str, list[tuple[int, int, int]]] = {name: [] for name in CONTAINMENT}
        swaps_containing = 0
        for i in nested:
            chain = steps[mcqs[i].chain or ""]
            step = mcqs[i].step or 0
            later = [chain[s] for s in sorted(chain) if s > step]
            earlier = [chain[s] for s in sorted(chain) if s < step]
            subsets = [int(exact[j]) for j in earlier]
            supersets = [int(exact[j]) for j in later]
            query_bindings = set(mcqs[i].query.bindings)
            swaps = [
                int(by_role[j, k])
                for j in later
                for k in range(1, len(CANDIDATE_ROLES))
                if query_bindings <= set(mcqs[j].candidates[by_role[j, k] - 4 * j].bindings)
            ]
            swaps_containing += len(swaps)
            if swap_supersets:
                supersets += swaps
            relevant.append([int(exact[i]), *supersets])
            own = int(exact[i])
            pairs["subset_above_exact"] += [(i, g, own) for g in subsets]
            pairs["superset_above_exact"] += [(i, g, own) for g in supersets]
            pairs["subset_above_superset"] += [(i, g, h) for g in subsets for h in supersets]
        idx = np.array(nested)
        ap = average_precision(queries[idx], gallery, relevant)
        scores["map_nested"] = float(ap.mean())
        scores["map_nested_by_n"] = _by(ap, ns[idx])
        per_query.append(_retrieval_per_query("ap_nested", mcqs, idx, ap, queries, gallery))
        for name, (key, _column) in CONTAINMENT.items():
            scores[key] = _above(queries, gallery, pairs[name])
            counts_out[f"{key}_comparisons"] = len(pairs[name])
        counts_out["swap_candidates_containing_query"] = swaps_containing
    return {"scores": scores, "counts": counts_out, "per_query": per_query}


def _retrieval_per_query(
    metric: str,
    mcqs: list[MCQ],
    idx: np.ndarray,
    ap: np.ndarray,
    queries: np.ndarray,
    gallery: np.ndarray,
) -> dict[str, Any]:
    """AP per query of a gallery retrieval, with each query's top-5 gallery candidates."""
    gallery_ids = [c.id for x in mcqs for c in x.candidates]
    best = top_k(queries[idx], gallery, 5)
    return {
        "metric": metric,
        "ids": [mcqs[i].id for i in idx],
        "values": np.asarray(ap, dtype=np.float64).tolist(),
        "top": [[gallery_ids[j] for j in row] for row in best],
    }


def _by(values: np.ndarray, keys: np.ndarray) -> dict[str, float]:
    return {str(k): float(values[keys == k].mean()) for k in sorted(set(keys.tolist()))}


def _above(
    queries: np.ndarray, gallery: np.ndarray, pairs: list[tuple[int, int, int]]
) -> float | None:
    """Share of (query, candidate, other) triples where the candidate scores above the other
    (ties 1/2); None without triples."""
    if not pairs:
        return None
    q, first, second = np.array(pairs).T
    return fraction_above(
        np.einsum("nd,nd->n", queries[q], gallery[first]),
        np.einsum("nd,nd->n", queries[q], gallery[second]),
    )


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
                ]
            )
    title = f"SABER ({data_name}): by kind, error analysis (%)"
    tables.append(Table(title, detail_columns, detail))
    tables.append(_containment_table(data_name, records, models, pairings))
    return tables


def _containment_table(
    data_name: str, records: list[dict[str, Any]], models: list[str], pairings: list[str]
) -> Table:
    """Containment shares, each beside its comparison count; "(seed)" marks the seed's two."""
    columns = ["model", "pairing", "supersets"]
    for _key, column in CONTAINMENT.values():
        columns += [column, "n"]
    by_cell = {(label(r), r["pairing"]): r for r in records}
    rows = []
    for model in models:
        for p in pairings:
            record = by_cell.get((model, p))
            if record is None:
                continue
            scores, counts = as_dict(record.get("scores")), as_dict(record.get("counts"))
            swaps = as_dict(record.get("options")).get("swap_supersets") is True
            row = [model, PAIRING_NAMES[p], "bp + swaps" if swaps else "bp"]
            for key, _column in CONTAINMENT.values():
                n = counts.get(f"{key}_comparisons")
                row += [pct(scores.get(key)), f"{n:,}" if isinstance(n, int) else "–"]
            rows.append(row)
    return Table(
        f"SABER ({data_name}): containment over nested queries (%; n = comparisons; supersets: "
        "binding-preserving candidates of later steps, bp, and with swap_supersets the swap "
        "candidates holding every query binding)",
        columns,
        rows,
    )
