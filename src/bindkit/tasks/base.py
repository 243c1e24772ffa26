"""What every task declares and provides, and the task registry.

A task is one module in ``bindkit/tasks/`` (or an entry point in the ``bindkit.tasks`` group)
holding a :class:`Task` subclass with a :class:`TaskMetadata`. The engine
(:mod:`bindkit.evaluation`) reads the metadata for subsets, pairings, instructions and the
headline score; the report reads it for its tables. Adding a benchmark touches no other file.
"""

from __future__ import annotations

import difflib
import importlib
import os
import pkgutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from bindkit.errors import BindkitError
from bindkit.metrics.pairwise import TIE_RULES, Ties

if TYPE_CHECKING:
    import numpy as np

    from bindkit.embed.images import ImageRef
    from bindkit.embed.protocol import Embedder, Role
    from bindkit.records.tables import Table

ENTRY_POINT_GROUP = "bindkit.tasks"
DATA_ENV = "BINDKIT_DATA"
PAIRINGS = {
    "tt": ("text", "text"),
    "ti": ("text", "image"),
    "it": ("image", "text"),
    "ii": ("image", "image"),
}


@dataclass(frozen=True)
class TaskMetadata:
    """What a task is, declared once; the engine, the report and the CLI help read it.

    Attributes:
        name: The ``--task`` name.
        description: One line for ``bindkit eval --help`` and the report.
        main_score: The score the headline and the overview table show.
        reference: Paper and code the protocol follows.
        subsets: Subset names in report order (``("default",)`` for a single set); a task whose
            subsets depend on the data returns them from :meth:`Task.load` instead.
        modalities: Modalities the data holds.
        pairings: Query→candidate pairings the task can run, e.g. ``("it", "tt")``.
        ties: How a tie between the correct and a wrong option counts: ``wrong`` (strict ``>``),
            ``correct`` (``>=``, an argmax that keeps the first index) or ``share`` (1/k); one
            rule, or one per subset (``{subset: rule}`` naming every subset). The scorer reads
            it (:meth:`tie_rule`); a task whose scores are rankings or correlations, each with
            its metric's own tie handling (stated in its docstring), declares none (None), and
            a task class declares the rules its scorer implements (:attr:`Task.tie_rules`).
        query_instruction, document_instruction: Default instructions per side (None: the
            model's own default); ``--query-instruction`` overrides the query side.
        license: The data's licence.
        published: Where the files are published (shown when they are missing).
        data_dir: Folder name under ``$BINDKIT_DATA`` when ``--data`` is not given.
        data_help: What ``--data`` should point to.
        version: Bump when a metric's definition changes: stored results are then recomputed.
        scores: The benchmark's further official scores, shown beside the main score in the
            headline and in the per-benchmark table.
        averaged: The benchmark reports the mean over its subsets (MMEB's overall score): the
            overview shows that mean; otherwise it shows each subset in its own column.
        mteb_names: bindkit scores (the main score or ``scores``) that mteb computes under another
            name (``map_independent`` → ``map_at_1000``): ``bindkit export-results --format
            mteb`` writes each under both.
        fetchable: ``bindkit fetch NAME`` has a download plan for it (:mod:`bindkit.fetch.
            sources`), so a missing-data error names that command. Declared here, and checked
            against the plans by a test, so that tasks never import the fetch layer above them.
    """

    name: str
    description: str
    main_score: str
    reference: str = ""
    subsets: tuple[str, ...] = ("default",)
    modalities: tuple[str, ...] = ("text",)
    pairings: tuple[str, ...] = ("tt",)
    ties: Ties | Mapping[str, Ties] | None = None
    query_instruction: str | None = None
    document_instruction: str | None = None
    license: str = ""
    published: str = ""
    data_dir: str | None = None
    data_help: str = ""
    version: int = 1
    scores: tuple[str, ...] = field(default=())
    averaged: bool = False
    fetchable: bool = False
    mteb_names: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        unknown_scores = sorted(set(self.mteb_names) - {self.main_score, *self.scores})
        if unknown_scores:
            raise ValueError(
                f"{self.name}: mteb_names of scores it does not declare {unknown_scores}"
            )
        if any(r not in TIE_RULES for r in self._tie_rules()):
            raise ValueError(f"{self.name}: ties must be wrong, correct or share")
        if isinstance(self.ties, Mapping) and set(self.ties) != set(self.subsets):
            raise ValueError(
                f"{self.name}: ties per subset must name each subset ({', '.join(self.subsets)})"
            )
        unknown = [p for p in self.pairings if p not in PAIRINGS]
        if unknown:
            raise ValueError(f"{self.name}: unknown pairings {unknown}")
        if not self.subsets:
            raise ValueError(f"{self.name}: declare at least one subset")

    def _tie_rules(self) -> list[Ties]:
        if isinstance(self.ties, Mapping):
            return list(self.ties.values())
        return [] if self.ties is None else [self.ties]

    def tie_rule(self, subset: str) -> Ties:
        """The tie rule of ``subset``'s scores (the task's one rule, or the subset's own).

        Raises:
            ValueError: the task declares no tie rule.
        """
        if self.ties is None:
            raise ValueError(f"{self.name}: declares no tie rule (its scores have none)")
        return self.ties[subset] if isinstance(self.ties, Mapping) else self.ties

    def check_tie_rules(self, implemented: tuple[Ties, ...]) -> None:
        """The declared tie rules are ones the task's scorer ``implemented`` (none: no rule).

        Raises:
            ValueError: one line naming the task and the rule its scorer cannot apply.
        """
        for rule in self._tie_rules():
            if rule not in implemented:
                can = f"applies {', '.join(implemented)}" if implemented else "has no tie rule"
                raise ValueError(
                    f"{self.name}: ties {rule!r}: its scorer {can}; declare one it has"
                )


@dataclass(frozen=True)
class Dataset:
    """A task's loaded data plus what identifies it in result files."""

    name: str  # short, file-name safe, e.g. "saber-default" or "sick-trial"
    sha256: str  # hash of the data's content (or manifest)
    source: str  # where it came from: a path or "builtin:..."
    payload: Any
    subsets: tuple[str, ...] = ("default",)
    has_images: bool = False
    images_sha256: Callable[[], str] | None = None  # digest of the image files, computed lazily

    def identity(self, pairing: str) -> str:
        """The data hash a result on ``pairing`` depends on: for an image pairing of data whose
        images are its own files, the text data and the image files together."""
        if self.images_sha256 is None or "image" not in PAIRINGS[pairing]:
            return self.sha256
        import hashlib

        return hashlib.sha256(f"{self.sha256}\n{self.images_sha256()}".encode()).hexdigest()


@dataclass
class EvalContext:
    """Per-run inputs a task may use beyond the embedder and the data."""

    query_instruction: str | None = None  # the user's override (None: the task's default)
    image_root: Path | None = None
    warn: Any = None  # callable(str) for notes such as missing images
    allow_missing_images: bool = False  # score the rest (a partial result) instead of stopping
    document_instruction: str | None = None  # the user's document-side override

    def note(self, message: str) -> None:
        if self.warn is not None:
            self.warn(message)


class Task(ABC):
    """One benchmark: read its files, score a model on one (subset, pairing) at a time."""

    metadata: ClassVar[TaskMetadata]
    # the tie rules the scorer applies, reading ``metadata.tie_rule(subset)``; none: its scores
    # have no rule to choose, and the metadata must declare ``ties=None``
    tie_rules: ClassVar[tuple[Ties, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        metadata = cls.__dict__.get("metadata")
        if isinstance(metadata, TaskMetadata):
            metadata.check_tie_rules(cls.tie_rules)

    @abstractmethod
    def load(self, data: Path | None, *, image_root: Path | None = None) -> Dataset:
        """Read the data at ``data`` (None: the task's built-in set, if it has one)."""

    @abstractmethod
    def evaluate(
        self, embedder: Embedder, dataset: Dataset, subset: str, pairing: str, ctx: EvalContext
    ) -> dict[str, Any] | None:
        """``{"scores": {...}, "counts": {...}}`` with scores as fractions in [0, 1]; None when
        nothing could be scored (e.g. every image missing): no result file is written."""

    def pairings(self, dataset: Dataset, embedder: Embedder) -> list[str]:
        """The declared pairings that the data and the model both support."""
        out = []
        for pairing in self.metadata.pairings:
            needed = set(PAIRINGS[pairing])
            if "image" in needed and not dataset.has_images:
                continue
            if needed <= set(embedder.modalities):
                out.append(pairing)
        return out

    def default_pairings(self, available: list[str]) -> list[str]:
        """The pairings run when ``--pairings`` is not given, of the ``available`` ones: all of
        them, unless the benchmark's protocol is one and the others are variants asked for."""
        return available

    def default_subsets(self, dataset: Dataset) -> tuple[str, ...]:
        """The subsets scored when ``--subsets`` is not given: all of the data's, unless the
        benchmark scores one split of several (e.g. ColorSwap's test split)."""
        return dataset.subsets

    def data_identity(self, dataset: Dataset, subset: str, pairing: str) -> str:
        """The data hash a (subset, pairing) result depends on (its provenance): by default the
        whole data's; a benchmark of separately published datasets returns the subset's own, so
        downloading another dataset keeps the finished results reusable."""
        return dataset.identity(pairing)

    def families(self) -> dict[str, tuple[str, ...]]:
        """Names that ``--subsets`` expands to several subsets (e.g. MMEB-V2's ``video``): each
        runs the family's subsets that the data has, in the family's order."""
        return {}

    def missing_subset(self, subset: str, dataset: Dataset) -> str | None:
        """Why one of this task's declared subsets is absent from ``dataset`` (its expected file
        and where it is published), for the one-line error of ``--subsets``; None: no hint."""
        return None

    def halve(self, dataset: Dataset, half: str) -> Dataset:
        """``dataset`` restricted to its hashed ``dev`` or ``test`` half
        (:mod:`bindkit.tasks._halves`); a task without halves refuses in one line."""
        with_halves = sorted(n for n, c in task_classes().items() if has_halves(c))
        raise BindkitError(
            f"--half {half}: task {self.metadata.name} has no dev/test halves "
            f"(tasks with halves: {', '.join(with_halves)}); leave --half out"
        )

    def options(self, subset: str) -> dict[str, Any]:
        """Settings of this task that change ``subset``'s result beyond the data and the model
        (e.g. a shuffle seed); recorded in the result's options, so changing one recomputes it."""
        return {}

    def query_instruction(self, subset: str, ctx: EvalContext) -> str | None:
        """The user's override, else the task's default for this subset."""
        if ctx.query_instruction is not None:
            return ctx.query_instruction
        return self.metadata.query_instruction

    def document_instruction(self, subset: str, ctx: EvalContext) -> str | None:
        """The user's document-side instruction (an ``--instructions`` entry), else the task's."""
        if ctx.document_instruction is not None:
            return ctx.document_instruction
        return self.metadata.document_instruction

    def tables(self, records: list[dict[str, Any]]) -> list[Table]:
        """Task-owned report tables beyond the per-subset main-score table."""
        return []

    def describe_ids(
        self, dataset: Dataset, subset: str, pairing: str
    ) -> dict[str, tuple[str, str]]:
        """What the ids of this task's per-query scores on (subset, pairing) show in ``bindkit
        compare``'s contact sheet: id → ``("text", text)`` or ``("image", image file)``; an id
        not in it is shown as it is."""
        return {}

    def correct_ids(self, dataset: Dataset, subset: str, pairing: str) -> dict[str, frozenset[str]]:
        """Query id → the ids of its correct candidates, which ``bindkit compare``'s contact
        sheet marks; empty where the task does not name them."""
        return {}


def embed(
    embedder: Embedder,
    modality: str,
    inputs: list[str] | list[ImageRef],
    role: Role,
    instruction: str | None = None,
) -> np.ndarray:
    """Embed texts or image references with one call (the embedder dedups and caches)."""
    if modality == "text":
        return embedder.embed_texts(inputs, role=role, instruction=instruction)  # type: ignore[arg-type]
    return embedder.embed_images(inputs, role=role, instruction=instruction)


def parse_pairings(value: str | list[str] | None) -> list[str] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [p.strip() for p in items if p.strip()]
    if not items:
        raise BindkitError(
            "--pairings: empty; give a comma list of tt, ti, it, ii or leave it out for all"
        )
    for p in items:
        if p not in PAIRINGS:
            raise BindkitError(
                f"--pairings: unknown pairing {p!r}; use tt, ti, it, ii (query→candidate modality)"
            )
    return items


# -- registry ------------------------------------------------------------------------------
_REGISTRY: dict[str, type[Task]] | None = None


def task_modules() -> list[str]:
    """The modules of ``bindkit.tasks`` that may hold tasks, family folders included, in the
    order of their own names (``pairs.aro`` before ``instance.ilias``), so the registry lists the
    tasks as it did before the families; a name starting with ``_`` is a shared helper."""
    import bindkit.tasks as package

    def fail(name: str) -> None:  # a family folder that does not import is an error, not absent
        raise ImportError(f"bindkit.tasks: cannot import {name}")

    names = []
    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.", onerror=fail):
        parts = info.name.split(".")[2:]
        if info.ispkg or parts == ["base"] or any(p.startswith("_") for p in parts):
            continue
        names.append(info.name)
    return sorted(names, key=lambda name: name.rsplit(".", 1)[-1])


def _scan() -> dict[str, type[Task]]:
    found: dict[str, type[Task]] = {}
    for name in task_modules():
        module = importlib.import_module(name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Task)
                and value.__module__ == module.__name__
                and "metadata" in vars(value)
                and not value.metadata.name.startswith("_")  # a shared base, not a task
            ):
                found[value.metadata.name] = value
    from importlib.metadata import entry_points

    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found:
            continue
        value = ep.load()
        if not (isinstance(value, type) and issubclass(value, Task)):
            raise BindkitError(f"entry point {ep.value}: not a bindkit.tasks.base.Task subclass")
        found[value.metadata.name] = value
    return found


def task_classes() -> dict[str, type[Task]]:
    """Every task, by name: modules of ``bindkit.tasks`` and ``bindkit.tasks`` entry points."""
    global _REGISTRY
    if _REGISTRY is None:
        _REGISTRY = _scan()
    return _REGISTRY


def get_task(name: str, options: dict[str, str] | None = None) -> Task:
    """The task named ``name``, built with ``options`` (``--task-option KEY=VALUE`` strings,
    converted to the types of the task's constructor parameters)."""
    tasks = task_classes()
    if name not in tasks:
        close = difflib.get_close_matches(name.lower(), list(tasks), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BindkitError(f"--task {name!r}: unknown task{hint}; use one of {', '.join(tasks)}")
    cls = tasks[name]
    return cls(**_task_options(cls, options or {}))


def _task_options(cls: type[Task], options: dict[str, str]) -> dict[str, Any]:
    import inspect
    import typing

    if not options:
        return {}
    hints = typing.get_type_hints(cls.__init__)
    params = {
        n: hints.get(n, str)
        for n, p in inspect.signature(cls.__init__).parameters.items()
        if n != "self" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    name = cls.metadata.name
    converted: dict[str, Any] = {}
    for key, text in options.items():
        if key not in params:
            accepted = ", ".join(params) if params else "none"
            close = difflib.get_close_matches(key, list(params), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise BindkitError(
                f"--task-option {key}: {name} has no such option{hint}; accepted: {accepted}"
            )
        kind = params[key]
        try:
            if kind is bool:
                if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                    raise ValueError(text)
                converted[key] = text.lower() in ("true", "1", "yes")
            else:
                converted[key] = kind(text) if kind in (int, float, str) else text
        except ValueError:
            raise BindkitError(
                f"--task-option {key}={text}: not a valid {getattr(kind, '__name__', kind)}"
            ) from None
    return converted


def resolve_data(meta: TaskMetadata, data: str | Path | None) -> Path | None:
    """``--data`` if given, else ``$BINDKIT_DATA/<data_dir>``; None for a task that has a
    built-in set. A missing path is one line naming the expected path and the publisher."""
    where = f"; {meta.name} is published at {meta.published}" if meta.published else ""
    if meta.fetchable:
        where += f"; `bindkit fetch {meta.name}` downloads it (or add --fetch to bindkit eval)"
    if data is None and meta.data_dir is not None:
        root = os.environ.get(DATA_ENV)
        if not root:
            raise BindkitError(
                f"--task {meta.name} needs --data ({meta.data_help or 'its files'}) or "
                f"{DATA_ENV}=ROOT holding {meta.data_dir}/{where}"
            )
        data = Path(root) / meta.data_dir
    if data is None:
        return None
    from bindkit.hfdata.read import local_path  # a `bindkit export` folder or hf:ID reads as files

    path = local_path(data)
    if not path.exists():
        raise BindkitError(f"--data {path}: not found; expected {meta.data_help}{where}")
    return path


def has_halves(task: Task | type[Task]) -> bool:
    """Whether ``task`` (a :class:`Task` or its class) implements :meth:`Task.halve`: its
    data has fixed, hashed dev/test halves (:mod:`bindkit.tasks._halves`)."""
    cls = task if isinstance(task, type) else type(task)
    return getattr(cls, "halve", None) is not Task.halve
