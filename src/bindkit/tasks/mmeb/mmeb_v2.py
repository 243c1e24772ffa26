"""MMEB-V2 (Meng et al., 2025; TIGER-AI-Lab/VLM2Vec ``eval.py``): image, video and
visual-document embedding tasks, scored as VLM2Vec's evaluation code scores them.

Per dataset, each query is ranked by cosine similarity either against its own candidates
(``eval_type: local``: every image task and video QA) or against every candidate of the dataset
(``global``: video classification against all labels, visual documents against the corpus),
with VLM2Vec's ``np.argsort(-scores)``. The leaderboard's score is Hit@1 for image and video and
NDCG@5 with linear gain (``ndcg_linear@5``) for visual documents; each meta-task shows the mean
over its datasets and *overall* the mean over every dataset scored.

Ties follow ``np.argsort(-scores)`` as ``eval.py`` ranks (the ranking here is that call, so on
one machine ties break as VLM2Vec's do). numpy does not define that order: its default sort is
not stable, and with AVX-512 (numpy 2.4) it reorders ties even among 4 candidates (scores
``[0, 0, 1, 1]``: index 3 ranks before 2). Measured there, a tie between the first-listed
candidate and one other (float32, 2,000 draws each) went to the first-listed in every draw for
2, 4, 5, 8, 16, 17 and 100 candidates and in 97% for 1,000. Per meta-task: *image* lists the
answer first (``tgt_text[0]``), so a tie mostly counts as correct; *video* QA and moment
retrieval list the answer anywhere among a query's own options, and classification, retrieval
and *visdoc* rank against every label, clip or page, so a tie there falls as numpy's order has
it. The task declares no ``ties``: the ranking decides, and this paragraph is the rule.

Graded NDCG (visual documents, whose qrels grade pages): VLM2Vec's ``RankingMetrics.evaluate``
de-duplicates each query's labels with ``list(set(labels))`` before ``ndcg_at_k`` zips them with
``rel_scores`` in the file's order, so where grades differ its leaderboard value pairs grades with
the wrong pages, and for string ids that pairing follows the process's ``PYTHONHASHSEED`` (random
per run unless set). bindkit reports the intended value by default (each page's own grade, as
``ndcg_at_k`` documents); ``--task-option ndcg=leaderboard`` computes the leaderboard code's
value, ``list(set(labels))`` in this process: equal to ``eval.py`` run with the same
``PYTHONHASHSEED`` (set it, e.g. ``PYTHONHASHSEED=0``, for a value that repeats). That choice is
in the visdoc results' options only when it is not the default. Binary labels (every other
dataset) give the same value either way.

Readers and file layout: :mod:`bindkit.tasks.mmeb._mmeb_v2_data`. Inputs are embedded in chunks of
``chunk_size`` (``--task-option chunk_size=N``) through the embedder (and its cache), with a
progress line per chunk, so a killed run loses at most the chunk in flight and a rerun skips
what the cache holds; finished datasets are result files the engine reuses. The chunk size
changes how, not what, is embedded, so it is not among the result's options.

The video datasets need an embedder with ``embed_videos`` (:mod:`bindkit.embed.video`); a clip is
its frame folder (VLM2Vec's ``video-tasks/frames/...``), else its ``.mp4`` under
``video-tasks/videos/...``: frame sampling (VLM2Vec: 8 of the saved frames, evenly spaced, all
of them when fewer) is the embedder's; MomentSeeker's clips are ``VideoRef(sample=False)``
(every frame, as its loader's ``load_frames``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import sha256_file
from bindkit._progress import progress
from bindkit.embed.images import ImageRef
from bindkit.embed.prompts import Composed
from bindkit.embed.protocol import Embedder, Role
from bindkit.embed.video import VideoRef, require_video
from bindkit.errors import BindkitError, DataFormatError
from bindkit.records.tables import Table, pct
from bindkit.tasks._images import decode_image
from bindkit.tasks.base import Dataset, EvalContext, TaskMetadata
from bindkit.tasks.mmeb._base import META_TASKS, MMEBTask
from bindkit.tasks.mmeb._mmeb_v2_data import SOURCES
from bindkit.tasks.mmeb._mmeb_v2_files import Input, Query, Split

#: The leaderboard's datasets per meta-task and sub-task (``report_score_v2.py``'s lists).
GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    # MMEB v1's 36 image datasets, the same lists in the same order
    "image": {
        "cls": META_TASKS["classification"],
        "qa": META_TASKS["vqa"],
        "ret": META_TASKS["retrieval"],
        "vg": META_TASKS["grounding"],
    },
    "video": {
        "cls": ("K700", "SmthSmthV2", "HMDB51", "UCF101", "Breakfast"),
        "qa": ("MVBench", "Video-MME", "NExTQA", "EgoSchema", "ActivityNetQA"),
        "ret": ("DiDeMo", "MSR-VTT", "MSVD", "VATEX", "YouCook2"),
        "mret": ("QVHighlight", "Charades-STA", "MomentSeeker"),
    },
    "visdoc": {
        "vidore_v1": (
            "ViDoRe_arxivqa",
            "ViDoRe_docvqa",
            "ViDoRe_infovqa",
            "ViDoRe_tabfquad",
            "ViDoRe_tatdqa",
            "ViDoRe_shiftproject",
            "ViDoRe_syntheticDocQA_artificial_intelligence",
            "ViDoRe_syntheticDocQA_energy",
            "ViDoRe_syntheticDocQA_government_reports",
            "ViDoRe_syntheticDocQA_healthcare_industry",
        ),
        "vidore_v2": (
            "ViDoRe_esg_reports_human_labeled_v2",
            "ViDoRe_biomedical_lectures_v2_multilingual",
            "ViDoRe_economics_reports_v2_multilingual",
            "ViDoRe_esg_reports_v2_multilingual",
        ),
        "visrag": (
            "VisRAG_ArxivQA",
            "VisRAG_ChartQA",
            "VisRAG_MP-DocVQA",
            "VisRAG_SlideVQA",
            "VisRAG_InfoVQA",
            "VisRAG_PlotQA",
        ),
        "ood": ("ViDoSeek-page", "ViDoSeek-doc", "MMLongBench-page", "MMLongBench-doc"),
    },
}
#: ``--task-option ndcg=``: the intended graded NDCG (default) or the leaderboard code's
NDCG_FORMS = ("intended", "leaderboard")
META_METRIC = {"image": "hit_at_1", "video": "hit_at_1", "visdoc": "ndcg_linear_at_5"}
LEADERBOARD = tuple(s for groups in GROUPS.values() for g in groups.values() for s in g)
#: The datasets bindkit reads: the leaderboard's, then ``visdoc.yaml``'s English-only ViDoRe v2
#: views (scored only when named in ``--subsets``).
SUBSETS = LEADERBOARD + tuple(s for s in SOURCES if s not in LEADERBOARD)
#: The six video datasets of seed 002's Table V, in its order.
SEED_002_VIDEO = ("ActivityNetQA", "Breakfast", "EgoSchema", "K700", "UCF101", "Video-MME")
#: Seed 002's sizes (Table V, appendix C3): queries, and candidates per query (local ranking) or
#: in all (global); ``None`` where the seed gives no number.
SEED_002_SIZES: dict[str, tuple[int, int | None]] = {
    "ActivityNetQA": (1000, 2),
    "Breakfast": (433, 10),
    "EgoSchema": (500, None),
    "K700": (1000, None),
    "UCF101": (1000, 101),
    "Video-MME": (1000, None),
}
PUBLISHED = (
    "https://huggingface.co/datasets/TIGER-Lab/MMEB-V2 (media) with each dataset's annotations "
    "from its Hub id under DATA/<owner>/<name>"
)


def meta_task(subset: str) -> str:
    """The meta-task a dataset belongs to (the English-only ViDoRe v2 views: visdoc)."""
    found = [m for m, groups in GROUPS.items() for g in groups.values() if subset in g]
    return found[0] if found else "visdoc"


def families() -> dict[str, tuple[str, ...]]:
    """``--subsets`` names for groups: ``image``, ``video``, ``visdoc``, ``video-cls`` ...,
    and ``seed002-video`` (the six datasets of seed 002's Table V)."""
    out: dict[str, tuple[str, ...]] = {}
    for meta, groups in GROUPS.items():
        out[meta] = tuple(s for g in groups.values() for s in g)
        out |= {f"{meta}-{name}": g for name, g in groups.items()}
    out["seed002-video"] = SEED_002_VIDEO
    return out


@dataclass(frozen=True)
class V2Data:
    root: Path
    present: tuple[str, ...]
    digests: dict[str, str]  # dataset -> hash of its annotation files


class MMEBV2(MMEBTask):
    metadata = TaskMetadata(
        name="mmeb_v2",
        description="MMEB-V2: image, video and visual-document tasks (Hit@1; NDCG@5 for pages)",
        main_score="score",
        scores=("hit_at_1", "ndcg_linear_at_5"),
        averaged=True,
        reference="Meng et al. 2025 (VLM2Vec-V2, MMEB-V2); github.com/TIGER-AI-Lab/VLM2Vec "
        "eval.py, src/data/eval_dataset/*, experiments/report_score_v2.py",
        subsets=SUBSETS,
        modalities=("text", "image", "video"),
        pairings=("it",),
        license="per source dataset (see each Hub dataset card)",
        published=PUBLISHED,
        data_dir="mmeb_v2",
        fetchable=True,
        data_help="the MMEB-V2 folder (image-tasks/, video-tasks/frames/, annotation datasets "
        "under <owner>/<name>; see the README)",
    )

    def __init__(self, chunk_size: int = 64, ndcg: str = "intended") -> None:
        if chunk_size < 1:
            raise BindkitError(f"--task-option chunk_size={chunk_size}: use at least 1")
        if ndcg not in NDCG_FORMS:
            raise BindkitError(
                f"mmeb_v2 --task-option ndcg={ndcg!r}: use one of {', '.join(NDCG_FORMS)}"
            )
        self.chunk_size = chunk_size
        self.ndcg = ndcg

    def options(self, subset: str) -> dict[str, Any]:
        """``ndcg`` only where it changes the result (graded visdoc labels) and is not the
        default, so results scored before the option existed keep their provenance."""
        if self.ndcg != "intended" and meta_task(subset) == "visdoc":
            return {"ndcg": self.ndcg}
        return {}

    def families(self) -> dict[str, tuple[str, ...]]:
        return families()

    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        assert data is not None
        present = tuple(s for s in SUBSETS if _annotation_files(data, s))
        if not present:
            raise DataFormatError(
                f"{data}: no MMEB-V2 annotation files (e.g. {data / SOURCES['UCF101'].repo}); "
                f"pass {self.metadata.data_help}"
            )
        digests = {}
        for s in present:
            lines = [
                f"{f.relative_to(data)}:{sha256_file(f)}\n" for f in _annotation_files(data, s)
            ]
            digests[s] = hashlib.sha256("".join(lines).encode()).hexdigest()
        whole = hashlib.sha256("".join(f"{s}:{d}\n" for s, d in digests.items()).encode())
        payload = V2Data(image_root if image_root is not None else data, present, digests)
        return Dataset("mmeb_v2", whole.hexdigest(), str(data), payload, present, has_images=True)

    def default_subsets(self, dataset: Dataset) -> tuple[str, ...]:
        """The leaderboard's datasets that the data has (the English-only views when named)."""
        return tuple(s for s in dataset.subsets if s in LEADERBOARD)

    def data_identity(self, dataset: Dataset, subset: str, pairing: str) -> str:
        """Each dataset's own annotation files: adding another keeps finished results."""
        digest: str = dataset.payload.digests[subset]
        return digest

    def missing_subset(self, subset: str, dataset: Dataset) -> str | None:
        source = SOURCES[subset]
        return (
            f"no annotation files under {Path(dataset.source) / source.repo}; download "
            f"huggingface.co/datasets/{source.repo} there (and its media from {PUBLISHED})"
        )

    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        data: V2Data = dataset.payload
        split = SOURCES[subset].reader(data.root, subset, SOURCES[subset])
        differs = size_warning(subset, split)
        if differs:
            ctx.note(differs)
        inputs = [q.input for q in split.queries] + list(split.candidates.values())
        missing = _missing_media(inputs, split, data.root, subset, ctx)
        keep = [
            q
            for q in split.queries
            if q.input not in missing
            and not any(split.candidates[c] in missing for c in (q.candidates or q.labels))
        ]
        if not keep:
            return None
        names = list(split.candidates)
        if split.ranking == "global":
            names = [n for n in names if split.candidates[n] not in missing]
        vectors = self._embed(embedder, subset, split, keep, names, data.root)
        predictions = rank(split, keep, names, vectors)
        hits = [hit_at_1(p, q.labels) for p, q in zip(predictions, keep, strict=True)]
        ndcg = [
            ndcg_linear_at_k(p, self._ndcg_labels(q.labels), q.rel_scores, 5)
            for p, q in zip(predictions, keep, strict=True)
        ]
        main = hits if META_METRIC[meta_task(subset)] == "hit_at_1" else ndcg
        scores = {
            "score": float(np.mean(main)),
            "hit_at_1": float(np.mean(hits)),
            "ndcg_linear_at_5": float(np.mean(ndcg)),
        }
        counts = {
            "queries": len(split.queries),
            "scored": len(keep),
            "candidates": len(names) if split.ranking == "global" else len(split.candidates),
            "missing_images": len(missing),  # images, clips or pages: the engine marks partial
        }
        per_query = {
            "metric": "correct" if main is hits else "ndcg_linear_at_5",
            "ids": unique_ids([q.id for q in keep]),
            "values": [float(v) for v in main],
            "top": [p[:5] for p in predictions],
        }
        return {"scores": scores, "counts": counts, "per_query": per_query}

    def _ndcg_labels(self, labels: tuple[str, ...]) -> Sequence[str]:
        return leaderboard_labels(labels) if self.ndcg == "leaderboard" else labels

    def _embed(
        self,
        embedder: Embedder,
        subset: str,
        split: Split,
        queries: list[Query],
        names: list[str],
        root: Path,
    ) -> dict[tuple[Role, Input], np.ndarray]:
        needed: dict[tuple[Role, Input], None] = {}
        for q in queries:
            needed[("query", q.input)] = None
        wanted = (
            set(names) if split.ranking == "global" else {c for q in queries for c in q.candidates}
        )
        for n in split.candidates:
            if n in wanted:
                needed[("document", split.candidates[n])] = None
        if any(item.kind == "video" for _, item in needed):
            require_video(embedder, f"mmeb_v2 {subset}")
        return embed_inputs(
            embedder, list(needed), root, split, self.chunk_size, f"mmeb_v2 {subset}"
        )

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        """The leaderboard's tables: the mean score per meta-task and overall, and per sub-task
        (each cell: mean % and the datasets scored of the published count)."""
        by_model = self.scores_by_model(records, LEADERBOARD)
        if not by_model:
            return []

        def cell(values: dict[str, float], group: Sequence[str]) -> str:
            got = [values[s] for s in group if s in values]
            return f"{pct(np.mean(got))} ({len(got)}/{len(group)})" if got else "–"

        overview, detail = [], []
        for model, values in by_model.items():
            metas = [cell(values, families()[m]) for m in GROUPS]
            overview.append([model, *metas, cell(values, LEADERBOARD)])
            detail.append(
                [model, *(cell(values, g) for groups in GROUPS.values() for g in groups.values())]
            )
        sub = [f"{m} {g}" for m, groups in GROUPS.items() for g in groups]
        return [
            Table(
                "MMEB-V2 per meta-task (%; Hit@1 image/video, NDCG@5 visdoc; datasets scored)",
                ["model", *GROUPS, "overall"],
                overview,
            ),
            Table("MMEB-V2 per sub-task (%; datasets scored)", ["model", *sub], detail),
        ]


def unique_ids(ids: list[str]) -> list[str]:
    """Per-query ids made unique: a repeated id gets ``#2``, ``#3``... in row order (the first
    keeps its own), so per-query results never merge two queries."""
    seen: dict[str, int] = {}
    out = []
    for i in ids:
        seen[i] = seen.get(i, 0) + 1
        out.append(i if seen[i] == 1 else f"{i}#{seen[i]}")
    return out


def size_warning(subset: str, split: Split) -> str | None:
    """One warning line when a seed-002 dataset's queries or candidates differ from the sizes
    seed 002 reports (:data:`SEED_002_SIZES`); ``None`` when they match or are not recorded."""
    if subset not in SEED_002_SIZES:
        return None
    queries, candidates = SEED_002_SIZES[subset]
    if split.ranking == "global":
        counts = {len(split.candidates)}
    else:
        counts = {len(q.candidates) for q in split.queries}
    got = f"{len(split.queries):,} queries"
    if candidates is not None:
        got += f", {'/'.join(str(c) for c in sorted(counts))} candidates"
        got += " per query" if split.ranking == "local" else ""
    wanted = f"{queries:,} queries" + (
        f", {candidates} candidates" + (" per query" if split.ranking == "local" else "")
        if candidates is not None
        else ""
    )
    if len(split.queries) == queries and (candidates is None or counts == {candidates}):
        return None
    return (
        f"warning: mmeb_v2 {subset}: {got}; seed 002 reports {wanted}: check the download "
        f"(huggingface.co/datasets/{SOURCES[subset].repo})"
    )


def _annotation_files(root: Path, subset: str) -> list[Path]:
    """The dataset's annotation files; empty when a part it needs is absent."""
    from bindkit.tasks.mmeb._mmeb_v2_docs import read_beir
    from bindkit.tasks.mmeb._mmeb_v2_video import MVBENCH_SUBSETS, read_mvbench

    source = SOURCES[subset]
    if source.repo.startswith("ziyjiang/"):
        return source.files(root, subset)
    parts: tuple[str | None, ...] = (source.config,)
    if source.reader is read_beir:
        parts = ("queries", "qrels", "corpus")
    elif source.reader is read_mvbench:
        parts = MVBENCH_SUBSETS
    found = [source.files(root, part) for part in parts]
    return [f for files in found for f in files] if all(found) else []


# -- media --------------------------------------------------------------------------------------
def video_path(root: Path, path: str) -> Path | None:
    """The clip's frame folder (one with image files), else its ``.mp4`` in ``videos/``."""
    frames = root / path
    if frames.is_dir() and any(
        p.suffix.lower() in (".jpg", ".jpeg", ".png") for p in frames.iterdir()
    ):
        return frames
    clip = (root / path.replace("video-tasks/frames/", "video-tasks/videos/", 1)).with_suffix(
        ".mp4"
    )
    return clip if clip.is_file() else None


def _missing_media(
    inputs: list[Input], split: Split, root: Path, subset: str, ctx: EvalContext
) -> set[Input]:
    missing: set[Input] = set()
    for item in dict.fromkeys(inputs):
        absent = (
            (item.kind == "image" and not (root / item.path).is_file())
            or (item.kind == "video" and video_path(root, item.path) is None)
            or (item.kind == "page" and item.path not in split.pages)
        )
        if absent:
            missing.add(item)
    if missing:
        first = sorted(missing, key=lambda i: i.path)[0]
        where = root / first.path
        message = (
            f"mmeb_v2 {subset}: {len(missing)} images or clips missing (first: {where}); "
            f"get them from {PUBLISHED}"
        )
        if not ctx.allow_missing_images:
            raise BindkitError(f"{message}, or pass --allow-missing-images to score the rest")
        ctx.note(f"warning: {message}; scoring the rest: the result is marked partial")
    return missing


def _media(item: Input, root: Path, split: Split) -> Any:
    if item.kind == "image":
        return ImageRef(root / item.path)
    if item.kind == "page":
        return decode_image(split.pages[item.path], f"page {item.path}")
    path = video_path(root, item.path)
    assert path is not None  # checked by _missing_media
    return VideoRef(path, sample=item.sample)


def embed_inputs(
    embedder: Embedder,
    items: list[tuple[Role, Input]],
    root: Path,
    split: Split,
    chunk_size: int,
    desc: str,
) -> dict[tuple[Role, Input], np.ndarray]:
    """One vector per (role, input), embedded in chunks of ``chunk_size`` grouped by role, kind
    and instruction; the progress line counts inputs. An image's or a video's instruction is a
    :class:`~bindkit.embed.prompts.Composed`: plain, with VLM2Vec's exact composition."""
    groups: dict[tuple[Role, str, str, str | None], list[Input]] = {}
    for role, item in items:
        text, exact = (item.text, item.exact) if item.kind != "text" else ("", None)
        groups.setdefault((role, item.kind, text, exact), []).append(item)
    out: dict[tuple[Role, Input], np.ndarray] = {}
    bar = progress(len(items), f"{desc}: embedding", unit="input")
    try:
        for (role, kind, text, exact), group in groups.items():
            instruction = Composed(text, exact) if exact is not None else text or None
            call = _caller(embedder, kind, role, instruction)
            for start in range(0, len(group), chunk_size):
                chunk = group[start : start + chunk_size]
                values = [c.text if kind == "text" else _media(c, root, split) for c in chunk]
                vectors = call(values)
                out |= {(role, c): v for c, v in zip(chunk, vectors, strict=True)}
                bar.update(len(chunk))
    finally:
        bar.close()
    return out


def _caller(
    embedder: Embedder, kind: str, role: Role, instruction: str | None
) -> Callable[[list[Any]], np.ndarray]:
    if kind == "text":
        return lambda xs: embedder.embed_texts(xs, role=role)
    if kind == "video":
        videos = require_video(embedder, "mmeb_v2")
        return lambda xs: videos.embed_videos(xs, role=role, instruction=instruction)
    return lambda xs: embedder.embed_images(xs, role=role, instruction=instruction)


# -- scoring (VLM2Vec eval.py and RankingMetrics, restated) ------------------------------------
def rank(
    split: Split,
    queries: list[Query],
    names: list[str],
    vectors: dict[tuple[Role, Input], np.ndarray],
) -> list[list[str]]:
    """Candidate names best first per query: ``np.argsort(-q @ C.T)`` over the dataset's
    candidates (global) or the query's own (local), as ``eval.py`` ranks them."""
    if split.ranking == "global":
        matrix = np.stack([vectors[("document", split.candidates[n])] for n in names])
        queries_m = np.stack([vectors[("query", q.input)] for q in queries])
        order = np.argsort(-np.dot(queries_m, matrix.T), axis=1)
        return [[names[i] for i in row] for row in order]
    out = []
    for q in queries:
        matrix = np.stack([vectors[("document", split.candidates[c])] for c in q.candidates])
        order = np.argsort(-np.dot(vectors[("query", q.input)], matrix.T))
        out.append([q.candidates[i] for i in order])
    return out


def hit_at_1(prediction: Sequence[str], labels: Sequence[str]) -> float:
    """1 when the top-ranked candidate is relevant (``RankingMetrics.hit_at_k`` with k=1)."""
    return 1.0 if labels and prediction[:1] and prediction[0] in set(labels) else 0.0


def leaderboard_labels(labels: Sequence[str]) -> list[str]:
    """The labels in the order ``RankingMetrics.evaluate`` passes them to ``ndcg_at_k``:
    ``list(set(labels))``. That call then zips them with ``rel_scores`` in the file's order, so
    with graded labels it pairs grades with the wrong documents; for strings the set's order
    follows this process's ``PYTHONHASHSEED``. See the module docstring."""
    return list(set(labels))


def ndcg_linear_at_k(
    prediction: Sequence[str],
    labels: Sequence[str],
    rel_scores: Sequence[float] | None,
    k: int,
) -> float:
    """NDCG@k with linear gain, graded by ``rel_scores`` when given (``RankingMetrics.ndcg_at_k``,
    ``form="linear"``): DCG = sum(rel_i / log2(i + 2)) over the top k, over the ideal DCG."""
    if rel_scores is None:
        relevant = set(labels)
        gains = [1.0 if p in relevant else 0.0 for p in prediction[:k]]
        ideal = [1.0] * min(len(relevant), k)
    else:
        grades = dict(zip(labels, rel_scores, strict=True))
        gains = [float(grades.get(p, 0)) for p in prediction[:k]]
        ideal = sorted(map(float, grades.values()), reverse=True)[:k]

    def dcg(values: list[float]) -> float:
        return float(sum(v / np.log2(i + 2) for i, v in enumerate(values)))

    best = dcg(ideal) if ideal else 1.0
    return dcg(gains) / best if best > 0 else 0.0
