"""bindkit's benchmarks as mteb 2.x tasks, and any bindkit embedder as an mteb model.

Needs ``pip install 'bindkit[mteb]'``; nothing here downloads: every task builds its mteb dataset
from bindkit's own files in ``load_data``.

Task types (mteb 2.26's names):

- SABER MCQ → ``VisionCentricQA``, mteb's multiple-choice type (1.x called it
  ``Any2AnyMultiChoice``): an :class:`~mteb.abstasks.AbsTaskRetrieval` whose ``top_ranked`` lists
  each query's 4 candidates. Main score ``mcq_accuracy`` = bindkit's ``mcq_accuracy`` (a tie in
  the top group shares the credit, 1/k); mteb's own ``accuracy`` (= Recall@1) sits beside it and
  differs only on ties: pytrec_eval orders tied documents by id, in reverse.
- SABER retrieval → two ``Any2AnyRetrieval`` tasks over the whole gallery (every candidate of
  the set), ``SABERRetrievalIndependent`` (subset ``independent``) and ``SABERRetrievalNested``
  (subset ``nested``): seed 000 reports independent and nested mAP separately, so each is a
  task's score of its own (one task with both subsets would score their mean, a number the
  paper never reports). Main score ``map_at_1000`` (pytrec_eval): equals bindkit's
  ``map_independent`` / ``map_nested`` when no gallery score ties a relevant candidate's and
  every relevant candidate ranks within 1000; bindkit ranks a tie against the relevant item,
  pytrec_eval by document id.
- triplets → ``Reranking`` of two documents per query (positive, negative); main score
  ``triplet_accuracy`` = bindkit's (a tie counts wrong); mteb's ``accuracy`` breaks ties by id.
  (mteb's ``PairClassification`` thresholds one pair at a time, not a ranking of two.)

- ColorSwap, BiVLC, CLEVR-binding, PUG:SPAR and PUG:SPARE (images paired with captions) →
  ``Compositionality``: :mod:`bindkit.mteb_bridge.mteb_pairs`.

The other benchmarks: mteb already ships SugarCrepe, Winoground and ARO (``Compositionality``),
ROxford/RParis (``Any2AnyRetrieval``) and SICK-R (``STS``), so those stay mteb's own.

Registration: mteb 2.x has no plug-in hook for tasks (no entry point group; its CLI imports
nothing of the user's); ``mteb.get_task(name)`` reads the module mapping
``mteb.get_tasks._TASKS_REGISTRY`` and ``mteb.get_tasks()`` the tuple ``TASK_LIST`` beside it.
:func:`register` adds task classes to both (and :func:`register_defaults` the SABER tasks on
the built-in set), so ``mteb.get_task("SABERMCQ")`` and ``mteb.get_tasks(task_types=[...])``
find them; a task object can also be passed to ``mteb.evaluate`` directly. From a shell,
``bindkit mteb run ...`` (:mod:`bindkit.mteb_bridge.mteb_cli`) runs mteb's own CLI with them
registered.
"""

from __future__ import annotations

import typing
from abc import abstractmethod
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from datasets import Dataset as HFDataset
from datasets import Image as HFImage
from mteb.abstasks import AbsTaskRetrieval
from mteb.abstasks.task_metadata import TaskMetadata as MtebTaskMetadata
from mteb.models.abs_encoder import AbsEncoder
from mteb.types import Licenses

from bindkit.embed.protocol import Embedder, Role
from bindkit.errors import BindkitError
from bindkit.metrics.pairwise import Ties, hit_at_1
from bindkit.mteb_bridge.mteb_models import count_parameters, model_meta
from bindkit.saber.io import MCQ, Item, SaberSet, role_positions
from bindkit.tasks.base import PAIRINGS, Dataset, TaskMetadata, get_task

CATEGORY = {"tt": "t2t", "ti": "t2i", "it": "i2t", "ii": "i2i"}
SPLIT = "test"


def task_name(kind: str, pairing: str = "tt", data_name: str | None = None) -> str:
    """``SABERMCQ`` (text→text), ``SABERMCQT2I``, ...; ``-<data>`` for a set other than the
    built-in one."""
    suffix = "" if pairing == "tt" else CATEGORY[pairing].upper()
    return f"{kind}{suffix}" + (f"-{data_name}" if data_name else "")


def _license(value: str) -> str:
    if value == "this package":
        return "mit"  # bindkit's own licence
    lowered = value.lower()
    return lowered if lowered in typing.get_args(Licenses) else "not specified"


# per bindkit task: mteb's domains, annotation kind and (per task kind) subtypes
_DOMAINS = {
    "saber": ["Constructed"],
    "triplets": ["Constructed"],
    "colorswap": ["Constructed"],
    "bivlc": ["Encyclopaedic", "Constructed"],  # COCO captions and images, edited
    "clevr_binding": ["Constructed"],
    "pug_spar": ["Constructed"],
    "pug_spare": ["Constructed"],
}
_ANNOTATIONS = {
    "saber": "algorithmic",
    "triplets": "algorithmic",
    "colorswap": "automatic-and-reviewed",
    "bivlc": "LM-generated and reviewed",
    "clevr_binding": "derived",  # captions from the scenes' rendering labels
    "pug_spar": "derived",
    "pug_spare": "derived",
}


def _subtypes(kind: str, pairing: str) -> list[str]:
    if kind == "Compositionality" or kind == "VisionCentricQA":
        return ["Caption Pairing"] if pairing in ("ti", "it") else []
    if kind == "Any2AnyRetrieval" and pairing in ("ti", "it"):
        return ["Image Text Retrieval"]
    return []


def dataset_path(source: str) -> str:
    """mteb's ``dataset.path`` for bindkit data: the Hub id of ``hf:OWNER/NAME[:split]``, the
    absolute path of a local file or folder, ``builtin:NAME`` for a set bindkit builds in
    memory. bindkit's tasks load their data themselves, so mteb never passes it to
    ``datasets.load_dataset``; with ``revision`` (the data's sha256) it identifies the data."""
    if source.startswith("hf:"):
        return source[3:].split(":")[0]
    if source.startswith("builtin:"):
        return source.split()[0]
    return str(Path(source).resolve())


def _reference(meta: TaskMetadata, source: str) -> str:
    """A URL for mteb's ``reference``: the task's web page where its reference names one, else
    the data's Hub page or its local folder (``file://``); the built-in set: bindkit's SABER
    package."""
    import re

    found = re.search(r"(https?://)?((?:huggingface\.co|github\.com)/[^\s;,)]+)", meta.reference)
    if found:
        return "https://" + found.group(2)
    if source.startswith("hf:"):
        return f"https://huggingface.co/datasets/{dataset_path(source)}"
    if source.startswith("builtin:"):
        import bindkit.saber

        return Path(bindkit.saber.__file__).parent.resolve().as_uri()
    return Path(source).resolve().as_uri()


def _data_date(source: str) -> str:
    """The day the data was written (its file's modification date; the built-in set: that of
    its vocabulary), mteb's ``date`` as a one-day range."""
    import datetime

    if source.startswith("builtin:"):
        from bindkit.saber.vocab import builtin_vocabulary_dir

        path = builtin_vocabulary_dir()
    elif source.startswith("hf:"):
        return datetime.date.today().isoformat()
    else:
        path = Path(source)
    stamp = path.stat().st_mtime if path.exists() else datetime.datetime.now().timestamp()
    return datetime.date.fromtimestamp(stamp).isoformat()


def mteb_metadata(
    meta: TaskMetadata,
    dataset: Dataset,
    *,
    name: str,
    kind: str,
    pairing: str,
    main_score: str,
    subsets: Sequence[str] = ("default",),
) -> MtebTaskMetadata:
    """mteb's metadata from bindkit's, every field mteb's ``is_filled`` checks set: the revision
    is the data's sha256, ``dataset.path`` says where the data is (:func:`dataset_path`)."""
    prompt = {"query": meta.query_instruction} if meta.query_instruction else None
    langs: Any = (
        ["eng-Latn"] if tuple(subsets) == ("default",) else {s: ["eng-Latn"] for s in subsets}
    )
    day = _data_date(dataset.source)
    return MtebTaskMetadata(
        name=name,
        description=f"bindkit {meta.name}: {meta.description} ({meta.reference})",
        reference=_reference(meta, dataset.source),
        dataset={"path": dataset_path(dataset.source), "revision": dataset.sha256},
        type=kind,
        category=CATEGORY[pairing],
        modalities=sorted(set(PAIRINGS[pairing])),
        eval_splits=[SPLIT],
        eval_langs=langs,
        main_score=main_score,
        date=(day, day),
        domains=_DOMAINS.get(meta.name, ["Constructed"]),
        task_subtypes=_subtypes(kind, pairing),
        license=_license(meta.license),
        annotations_creators=_ANNOTATIONS.get(meta.name, "algorithmic"),
        dialect=[],
        sample_creation="created",
        prompt=prompt,
        bibtex_citation="",  # mteb's rule: empty when there is no citation (SABER: unpublished)
    )


def _column(items: Sequence[Item], modality: str, saber: SaberSet) -> HFDataset:
    ids = [item.id for item in items]
    if modality == "text":
        return HFDataset.from_dict({"id": ids, "text": [item.text for item in items]})
    images = (saber.manifest or {}).get("images")
    mirrored = isinstance(images, dict) and images.get("flip_applied") is True
    paths = []
    for item in items:
        path = saber.image_path(item)
        if path is None or not path.is_file():
            raise BindkitError(
                f"{item.id}: image missing; render the set (`bindkit saber render "
                f"{saber.directory}`) or use pairing tt"
            )
        if item.flip and not mirrored:
            raise BindkitError(
                f"{saber.directory}: images are not stored mirrored (manifest images."
                "flip_applied); re-render the set with `bindkit saber render` for mteb"
            )
        paths.append(str(path))
    return HFDataset.from_dict({"id": ids, "image": paths}).cast_column("image", HFImage())


class _BindkitRetrieval(AbsTaskRetrieval):  # type: ignore[misc]
    """Shared loading: subclasses build :meth:`_split_data` from bindkit's loaded data."""

    _dataset: Dataset
    _pairing: str = "tt"
    data_loaded: bool

    @abstractmethod
    def _split_data(self) -> dict[str, dict[str, Any]]:
        """Per mteb subset, the corpus / queries / relevance of the one evaluation split."""

    def load_data(self, num_proc: int | None = None, **kwargs: Any) -> None:
        if self.data_loaded:
            return
        self.dataset = {subset: {SPLIT: data} for subset, data in self._split_data().items()}
        self.data_loaded = True


class _SaberMCQ(_BindkitRetrieval):
    def _split_data(self) -> dict[str, dict[str, Any]]:
        saber: SaberSet = self._dataset.payload
        q_modality, c_modality = PAIRINGS[self._pairing]
        mcqs = saber.mcqs
        relevant = {}
        for mcq in mcqs:
            exact = mcq.candidates[role_positions(mcq)[0]].id
            relevant[mcq.query.id] = {c.id: int(c.id == exact) for c in mcq.candidates}
        return {
            "default": {
                "queries": _column([m.query for m in mcqs], q_modality, saber),
                "corpus": _column([c for m in mcqs for c in m.candidates], c_modality, saber),
                "relevant_docs": relevant,
                "top_ranked": {m.query.id: [c.id for c in m.candidates] for m in mcqs},
            }
        }

    def task_specific_scores(
        self,
        scores: dict[str, dict[str, float]],
        qrels: dict[str, dict[str, int]],
        results: dict[str, dict[str, float]],
        hf_split: str,
        hf_subset: str,
    ) -> dict[str, float]:
        ties = get_task("saber").metadata.tie_rule(hf_subset)
        return {"mcq_accuracy": mcq_accuracy_from_runs(qrels, results, ties)}


def mcq_accuracy_from_runs(
    qrels: dict[str, dict[str, int]], results: dict[str, dict[str, float]], ties: Ties
) -> float:
    """bindkit's MCQ accuracy from mteb's run scores: per query, the relevant options' credit
    under SABER's tie rule ``ties`` (:func:`bindkit.metrics.pairwise.hit_at_1`; ``share``: the
    share of the top tie group)."""
    credit = []
    for qid, relevant in qrels.items():
        options = list(results.get(qid, {}))
        if not options:
            credit.append(0.0)
            continue
        row = np.array([[results[qid][d] for d in options]])
        won = [hit_at_1(row, k, ties)[0] for k, d in enumerate(options) if relevant.get(d, 0) > 0]
        credit.append(float(sum(won)))
    return float(np.mean(credit))


def nested_relevance(mcqs: Sequence[MCQ]) -> dict[str, list[str]]:
    """For each nested query: its own binding-preserving candidate and those of the later steps
    of its chain (bindkit's nested relevance without ``swap_supersets``)."""
    exact = {m.id: m.candidates[role_positions(m)[0]].id for m in mcqs}
    chains: dict[str, dict[int, MCQ]] = {}
    for m in mcqs:
        if m.kind == "nested":
            chains.setdefault(m.chain or "", {})[m.step or 0] = m
    out = {}
    for m in mcqs:
        if m.kind != "nested":
            continue
        chain = chains[m.chain or ""]
        later = [chain[s] for s in sorted(chain) if s > (m.step or 0)]
        out[m.query.id] = [exact[m.id]] + [exact[x.id] for x in later]
    return out


class _SaberRetrieval(_BindkitRetrieval):
    def _split_data(self) -> dict[str, dict[str, Any]]:
        saber: SaberSet = self._dataset.payload
        q_modality, c_modality = PAIRINGS[self._pairing]
        corpus = _column([c for m in saber.mcqs for c in m.candidates], c_modality, saber)
        nested = nested_relevance(saber.mcqs)
        out: dict[str, dict[str, Any]] = {}
        for subset in self.metadata.hf_subsets:
            mcqs = [m for m in saber.mcqs if m.kind == subset]
            if subset == "independent":
                relevant = {m.query.id: [m.candidates[role_positions(m)[0]].id] for m in mcqs}
            else:
                relevant = {m.query.id: nested[m.query.id] for m in mcqs}
            out[subset] = {
                "queries": _column([m.query for m in mcqs], q_modality, saber),
                "corpus": corpus,
                "relevant_docs": {q: dict.fromkeys(ids, 1) for q, ids in relevant.items()},
                "top_ranked": None,
            }
        return out


class _Triplets(_BindkitRetrieval):
    def _split_data(self) -> dict[str, dict[str, Any]]:
        rows: list[dict[str, Any]] = self._dataset.payload
        qids = [f"t{i}" for i in range(len(rows))]
        docs = [(f"{q}-positive", r["positive"]) for q, r in zip(qids, rows, strict=True)]
        docs += [(f"{q}-negative", r["negative"]) for q, r in zip(qids, rows, strict=True)]
        return {
            "default": {
                "queries": HFDataset.from_dict({"id": qids, "text": [r["query"] for r in rows]}),
                "corpus": HFDataset.from_dict(
                    {"id": [d for d, _ in docs], "text": [t for _, t in docs]}
                ),
                "relevant_docs": {q: {f"{q}-positive": 1, f"{q}-negative": 0} for q in qids},
                "top_ranked": {q: [f"{q}-positive", f"{q}-negative"] for q in qids},
            }
        }

    def task_specific_scores(
        self,
        scores: dict[str, dict[str, float]],
        qrels: dict[str, dict[str, int]],
        results: dict[str, dict[str, float]],
        hf_split: str,
        hf_subset: str,
    ) -> dict[str, float]:
        wins = [results[q][f"{q}-positive"] > results[q][f"{q}-negative"] for q in qrels]
        return {"triplet_accuracy": float(np.mean(wins))}


def load_dataset(task: Any, data: str | Path | None) -> Dataset:
    """A bindkit task's data as ``bindkit eval --data`` reads it (a folder or file, a ``bindkit
    export`` folder or ``hf:ID``; None: the built-in set), its source as the caller named it."""
    import dataclasses

    from bindkit.tasks.base import resolve_data

    path = resolve_data(task.metadata, data) if data is not None else None
    dataset: Dataset = task.load(path)
    if path is not None and data is not None and path.resolve() != Path(data).resolve():
        # an export, read through its rebuilt files
        dataset = dataclasses.replace(dataset, source=str(data))
    return dataset


def _make(
    base: type[_BindkitRetrieval], metadata: MtebTaskMetadata, dataset: Dataset, pairing: str
) -> AbsTaskRetrieval:
    attrs = {"metadata": metadata, "_dataset": dataset, "_pairing": pairing}
    cls: type[_BindkitRetrieval] = type(metadata.name, (base,), attrs)
    return cls()


def _pairings(pairings: str | Sequence[str]) -> list[str]:
    items = [pairings] if isinstance(pairings, str) else list(pairings)
    for p in items:
        if p not in PAIRINGS:
            raise BindkitError(f"mteb tasks: unknown pairing {p!r}; use tt, ti, it or ii")
    return items


# per mteb task kind of bindkit's: (bindkit task, mteb type, main score, subsets, the class)
KINDS: dict[str, tuple[str, str, str, tuple[str, ...], type[_BindkitRetrieval]]] = {
    "SABERMCQ": ("saber", "VisionCentricQA", "mcq_accuracy", ("default",), _SaberMCQ),
    "SABERRetrievalIndependent": (
        "saber",
        "Any2AnyRetrieval",
        "map_at_1000",
        ("independent",),
        _SaberRetrieval,
    ),
    "SABERRetrievalNested": (
        "saber",
        "Any2AnyRetrieval",
        "map_at_1000",
        ("nested",),
        _SaberRetrieval,
    ),
    "BindkitTriplets": ("triplets", "Reranking", "triplet_accuracy", ("default",), _Triplets),
}
SABER_KINDS = tuple(k for k, row in KINDS.items() if row[0] == "saber")


def kind_task(
    kind: str, dataset: Dataset, pairing: str = "tt", data_name: str | None = None
) -> AbsTaskRetrieval:
    """The mteb task of ``kind`` (:data:`KINDS`) on ``dataset``, named by
    :func:`task_name`."""
    bindkit_task, mteb_type, main_score, subsets, cls = KINDS[kind]
    meta = mteb_metadata(
        get_task(bindkit_task).metadata,
        dataset,
        name=task_name(kind, pairing, data_name),
        kind=mteb_type,
        pairing=pairing,
        main_score=main_score,
        subsets=subsets,
    )
    return _make(cls, meta, dataset, pairing)


def saber_tasks(
    data: str | Path | None = None, *, pairings: str | Sequence[str] = "tt"
) -> list[AbsTaskRetrieval]:
    """SABER's MCQ, independent and nested retrieval as mteb tasks, one of each per pairing, on
    a SABER directory (None: the built-in default set, text only)."""
    dataset = load_dataset(get_task("saber"), data)
    data_name = None if data is None else dataset.name
    out = []
    for pairing in _pairings(pairings):
        if "image" in PAIRINGS[pairing] and not dataset.has_images:
            raise BindkitError(
                f"mteb SABER {pairing}: {dataset.source} has no images; render it or use tt"
            )
        out += [kind_task(kind, dataset, pairing, data_name) for kind in SABER_KINDS]
    return out


def triplet_task(data: str | Path) -> AbsTaskRetrieval:
    """A triplet JSONL file (bindkit's ``triplets`` task) as an mteb ``Reranking`` task."""
    dataset = load_dataset(get_task("triplets"), data)
    return kind_task("BindkitTriplets", dataset, "tt", dataset.name)


def register(tasks: Iterable[Any]) -> None:
    """Make mteb find these tasks (classes or objects) by name (``mteb.get_task``,
    ``get_tasks(tasks=[...])``) and among all tasks (``mteb.get_tasks()`` with filters, ``mteb
    available-tasks``): mteb 2.x reads both from module globals of ``mteb.get_tasks``, its task
    registry and its task list; a task of the same name is replaced."""
    import importlib

    module: Any = importlib.import_module("mteb.get_tasks")
    classes: list[Any] = [task if isinstance(task, type) else type(task) for task in tasks]
    names = {cls.metadata.name for cls in classes}
    for cls in classes:
        module._TASKS_REGISTRY[cls.metadata.name] = cls
    kept = tuple(t for t in module.TASK_LIST if t.metadata.name not in names)
    module.TASK_LIST = kept + tuple(classes)


def register_defaults() -> list[str]:
    """Register ``SABERMCQ``, ``SABERRetrievalIndependent`` and ``SABERRetrievalNested`` (the
    built-in set, text→text); their names."""
    tasks = saber_tasks()
    register(tasks)
    return [t.metadata.name for t in tasks]


class MtebEncoder(AbsEncoder):  # type: ignore[misc]
    """A bindkit :class:`~bindkit.embed.protocol.Embedder` as an mteb encoder: texts and images
    in mteb's batches, ``role`` from mteb's prompt type, the task's prompt as the instruction
    (None when the task has none: the model's own default). Named ``bindkit/<spec>`` (or
    ``name``) with the embedder's fingerprint as the revision."""

    def __init__(self, embedder: Embedder, *, name: str | None = None) -> None:
        self.model = embedder
        spec = str(getattr(embedder, "spec", None) or type(embedder).__name__)
        modalities = sorted(m for m in embedder.modalities if m in ("text", "image"))
        describe = getattr(embedder, "describe", None)
        meta = model_meta(
            spec,
            embedder.fingerprint,
            describe() if callable(describe) else None,
            modalities=modalities,
            n_parameters=count_parameters(embedder),
        )
        if name is not None:
            meta = meta.model_copy(update={"name": name})
        self.mteb_model_meta = meta

    def encode(
        self,
        inputs: Any,
        *,
        task_metadata: MtebTaskMetadata,
        hf_split: str,
        hf_subset: str,
        prompt_type: Any = None,
        **kwargs: Any,
    ) -> np.ndarray:
        from mteb.types import PromptType

        role: Role = "query" if prompt_type in (None, PromptType.query) else "document"
        # mteb's Compositionality evaluator passes no prompt type: images are the queries and
        # captions the documents there, as bindkit's pair tasks embed them
        pairs = task_metadata.type == "Compositionality"
        prompt = task_metadata.prompt

        def instruction(side: Role) -> str | None:
            return prompt.get(side) if isinstance(prompt, dict) else prompt

        parts = []
        for batch in inputs:
            images = batch.get("image")
            if images is not None and len(images):
                refs = list(images)
                parts.append(
                    self.model.embed_images(refs, role=role, instruction=instruction(role))
                )
            else:
                texts = list(batch["text"])
                side: Role = "document" if pairs else role
                parts.append(
                    self.model.embed_texts(texts, role=side, instruction=instruction(side))
                )
        return np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
