"""``bindkit mine``: embed (query, positive) rows, mine clusters per task, write them atomically.

The output is JSONL, one cluster per line: ``{"anchor": QUERY, "task": TASK, "phase": P,
"pairs": [ROW, ...]}`` with the anchor's own row first; every miner writes this format. Beside it,
``OUT.diagnostics.json`` (the numbers and what produced them) and ``OUT.scatter.png``.

A cluster without negatives (an anchor left with no valid negative) is not written: it would
train on zero loss while counting in the mean. The table and ``dropped_singletons`` count them;
their anchors show up as uncovered rows unless another cluster holds them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.errors import BindkitError
from bindkit.mining.data import PairRow, read_pairs, sidecar
from bindkit.mining.diagnostics import (
    Diagnostics,
    diagnose,
    drop_singletons,
    format_table,
    scatter_png,
)
from bindkit.mining.index import MIN_MEMORY, IndexConfig
from bindkit.mining.pool import Cluster, Pool

METHODS = ("saha", "hn", "hn-margin", "random")
SCHEMA = "bindkit.mining/1"


@dataclass(frozen=True)
class MineConfig:
    """Options of one mining run.

    Attributes:
        method: ``saha``, ``hn``, ``hn-margin`` or ``random``.
        k: negatives per cluster (clusters hold up to k+1 pairs).
        m: pool multiplier: candidates retrieved per anchor = m·k.
        relative_margin: ``hn-margin``: skip candidates above s⁺ − |s⁺|·margin.
        label_filter: SaHa: drop candidates owned by any row of a labelled anchor's label (else
            labels are used only by the diagnostics).
        seed: ``random``: the sampling seed.
        index: how candidates are searched.
        max_memory: bytes the mining may hold besides the model (None: no bound). The exact
            search's blocks get a quarter of it (``index.memory`` is replaced); the vectors stay
            in RAM while they take at most half of it, else they are written to a temporary
            folder beside the output and memory-mapped; inputs are embedded in chunks.
    """

    method: str = "saha"
    k: int = 7
    m: int = 4
    relative_margin: float = 0.05
    label_filter: bool = True
    seed: int = 0
    index: IndexConfig = field(default_factory=IndexConfig)
    max_memory: int | None = None

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            import difflib

            close = difflib.get_close_matches(self.method, METHODS, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise BindkitError(f"--method {self.method!r}{hint} (use one of {', '.join(METHODS)})")
        if self.k < 1:
            raise BindkitError(f"--k {self.k}: must be at least 1")
        if self.m < 1:
            raise BindkitError(f"--m {self.m}: must be at least 1")
        if not 0 <= self.relative_margin < 1:
            raise BindkitError(f"--margin {self.relative_margin}: use a value in [0, 1)")
        if self.max_memory is not None and self.max_memory < 4 * MIN_MEMORY:
            raise BindkitError(f"--max-memory {self.max_memory} bytes: give at least 4M")

    def search_index(self) -> IndexConfig:
        """The index options with the search scratch taken from ``max_memory`` when set."""
        if self.max_memory is None:
            return self.index
        return replace(self.index, memory=self.max_memory // 4)


def parse_size(text: str) -> int:
    """``"512M"``, ``"2G"``, ``"1.5GiB"``, ``"1000000"`` → bytes (K, M, G, T are powers of 1024).

    Raises:
        BindkitError: not a positive size.
    """
    import re

    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?)(I?B)?\s*", text.upper())
    if not match:
        raise BindkitError(f"--max-memory {text!r}: give a size such as 512M or 2G")
    value = float(match[1]) * 1024 ** " KMGT".index(match[2] or " ")
    if not value >= 1:
        raise BindkitError(f"--max-memory {text!r}: give a positive size such as 512M or 2G")
    return int(value)


def run_method(pool: Pool, config: MineConfig) -> list[Cluster]:
    """Mine one task's pool with ``config.method``."""
    from bindkit.mining.baselines import hard_negatives, random_negatives
    from bindkit.mining.saha import saha

    index = config.search_index()
    if config.method == "saha":
        return saha(pool, config.k, config.m, index, config.label_filter)
    if config.method == "hn":
        return hard_negatives(pool, config.k, config.m, index)
    if config.method == "hn-margin":
        return hard_negatives(pool, config.k, config.m, index, config.relative_margin)
    return random_negatives(pool, config.k, config.seed)


def _check_modalities(embedder: Any, rows: Sequence[PairRow], spec: str) -> None:
    needed = {r.query.modality for r in rows} | {r.positive.modality for r in rows}
    missing = sorted(needed - set(embedder.modalities))
    if missing:
        raise BindkitError(
            f"--model {spec}: the data has {' and '.join(missing)} inputs, which this model "
            f"cannot embed (it takes {', '.join(sorted(embedder.modalities))}); "
            "use a model for both modalities"
        )


class VectorStore:
    """Where the pools' vectors live: in RAM, or in ``.npy`` files memory-mapped from disk.

    With a ``budget`` (bytes), vectors that would take more than half of it go to a temporary
    folder beside ``near`` (``.NAME.XXXX.vectors``), removed by :meth:`close`; the decision is
    made when the first array is allocated, once the dimension is known.
    """

    def __init__(self, budget: int | None = None, near: Path | None = None) -> None:
        self.budget, self.near = budget, near
        self.total_rows = 0
        self.folder: Path | None = None
        self._decided = False
        self._count = 0

    def _spill(self, dim: int) -> bool:
        if not self._decided:
            self._decided = True
            size = self.total_rows * dim * 4
            if self.budget is not None and self.near is not None and size > self.budget // 2:
                import tempfile

                from bindkit._io import make_dirs

                make_dirs(self.near.parent)
                self.folder = Path(
                    tempfile.mkdtemp(
                        prefix=f".{self.near.name}.", suffix=".vectors", dir=self.near.parent
                    )
                )
        return self.folder is not None

    def empty(self, rows: int, dim: int) -> np.ndarray:
        if not self._spill(dim):
            return np.empty((rows, dim), dtype=np.float32)
        assert self.folder is not None
        self._count += 1
        path = self.folder / f"{self._count}.npy"
        return np.lib.format.open_memmap(path, mode="w+", dtype=np.float32, shape=(rows, dim))

    def finish(self, array: np.ndarray) -> np.ndarray:
        """The filled array, read-only (a mapped one is reopened so its pages can be released)."""
        if not isinstance(array, np.memmap) or array.filename is None:
            return array
        array.flush()
        mapped: np.ndarray = np.load(array.filename, mmap_mode="r")
        return mapped

    @property
    def spilled(self) -> bool:
        return self.folder is not None

    def close(self) -> None:
        """Delete the temporary folder (open maps stay readable until dropped)."""
        if self.folder is not None:
            import shutil

            shutil.rmtree(self.folder, ignore_errors=True)


def remove_stray_vectors(out: Path) -> list[Path]:
    """Vector folders a killed ``mine`` left beside ``out``; removed, and returned."""
    import shutil

    if not out.parent.is_dir():
        return []
    found = sorted(
        p
        for p in out.parent.iterdir()
        if p.name.startswith(f".{out.name}.") and p.name.endswith(".vectors") and p.is_dir()
    )
    for path in found:
        shutil.rmtree(path, ignore_errors=True)
    return found


def embed_chunk(max_memory: int | None) -> int | None:
    """Inputs per embedder call: all at once without a bound, else what ~1/16 of the budget
    holds at 1,024 dimensions (1,024 to 65,536)."""
    if max_memory is None:
        return None
    return max(1024, min(65_536, max_memory // 16 // 4096))


@dataclass
class _Side:
    """One distinct embedder input and where its vector goes: (task, row) pairs."""

    value: str
    targets: list[tuple[int, int]]


def _embed_into(
    embedder: Any,
    groups: dict[tuple[str, str | None], dict[str, _Side]],
    role: str,
    arrays: list[np.ndarray | None],
    sizes: list[int],
    store: VectorStore,
    chunk: int | None,
) -> None:
    """Embed every side (grouped by modality and instruction, ``chunk`` inputs per call) and
    write each vector into ``arrays[task][row]`` (allocated once the dimension is known)."""
    for (modality, instruction), sides in groups.items():
        embed = embedder.embed_texts if modality == "text" else embedder.embed_images
        items = list(sides.values())
        step = chunk or len(items)
        for start in range(0, len(items), step):
            part = items[start : start + step]
            vectors = np.asarray(
                embed([side.value for side in part], role=role, instruction=instruction),
                dtype=np.float32,
            )
            per_task: dict[int, tuple[list[int], list[int]]] = {}
            for source, side in enumerate(part):
                for task, row in side.targets:
                    rows, sources = per_task.setdefault(task, ([], []))
                    rows.append(row)
                    sources.append(source)
            for task, (rows, sources) in per_task.items():
                target = arrays[task]
                if target is None:
                    target = arrays[task] = store.empty(sizes[task], vectors.shape[1])
                target[rows] = vectors[sources]


def build_pools(
    embedder: Any,
    rows: Sequence[PairRow],
    store: VectorStore | None = None,
    chunk: int | None = None,
) -> dict[str, tuple[list[int], Pool]]:
    """Per task (first-appearance order): its row indices and its :class:`Pool`.

    Each distinct input is embedded once (even when several tasks hold it), ``chunk`` inputs
    per embedder call (None: one call per modality and instruction); the vectors are written
    straight into the task's arrays, which ``store`` keeps in RAM or memory-maps from disk.
    """
    store = store or VectorStore()
    tasks: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        tasks.setdefault(row.task, []).append(i)
    query_sides: dict[tuple[str, str | None], dict[str, _Side]] = {}
    positive_sides: dict[tuple[str, str | None], dict[str, _Side]] = {}
    positives: list[np.ndarray] = []
    n_candidates: list[int] = []
    for t, members in enumerate(tasks.values()):
        candidate_ids: dict[tuple[str, str], int] = {}
        positive = []
        for j, i in enumerate(members):
            row = rows[i]
            side = query_sides.setdefault((row.query.modality, row.instruction), {})
            side.setdefault(row.query.value, _Side(row.query.value, [])).targets.append((t, j))
            c = candidate_ids.get(row.positive.key)
            if c is None:
                c = candidate_ids[row.positive.key] = len(candidate_ids)
                side = positive_sides.setdefault((row.positive.modality, None), {})
                value = row.positive.value
                side.setdefault(value, _Side(value, [])).targets.append((t, c))
            positive.append(c)
        positives.append(np.asarray(positive, dtype=np.int64))
        n_candidates.append(len(candidate_ids))
    store.total_rows = sum(sizes := [len(m) for m in tasks.values()]) + sum(n_candidates)
    query_arrays: list[np.ndarray | None] = [None] * len(tasks)
    candidate_arrays: list[np.ndarray | None] = [None] * len(tasks)
    _embed_into(embedder, query_sides, "query", query_arrays, sizes, store, chunk)
    del query_sides
    _embed_into(embedder, positive_sides, "document", candidate_arrays, n_candidates, store, chunk)
    pools: dict[str, tuple[list[int], Pool]] = {}
    for t, (task, members) in enumerate(tasks.items()):
        q_array, c_array = query_arrays[t], candidate_arrays[t]
        assert q_array is not None and c_array is not None
        labels = [rows[i].label for i in members]
        pool = Pool(
            store.finish(q_array),
            store.finish(c_array),
            positives[t],
            labels if any(labels) else None,
        )
        pools[task] = (members, pool)
    return pools


def check_sizes(rows: Sequence[PairRow], k: int) -> None:
    """One-line errors for a task too small for ``k`` negatives per anchor (before embedding)."""
    tasks: dict[str, list[PairRow]] = {}
    for row in rows:
        tasks.setdefault(row.task, []).append(row)
    for task, members in tasks.items():
        name = repr(task) if task else "(no task)"
        if len(members) < k + 1:
            raise BindkitError(
                f"task {name} has {len(members)} rows; --k {k} needs at least {k + 1} per task "
                "(lower --k or merge small tasks)"
            )
        distinct = len({row.positive.key for row in members})
        if distinct - 1 < k:
            raise BindkitError(
                f"--k {k} is larger than the pool of task {name}: it has only "
                f"{distinct - 1} distinct positives besides an anchor's own; lower --k"
            )


def check_output(out: Path, data: Path) -> None:
    """Refuse an output that is the input (or a directory, or under a file), before any work."""
    from bindkit._io import check_can_create, check_not_input
    from bindkit.errors import PathError

    if out.is_dir():
        raise PathError(f"--out {out}: is a directory; give the clusters file to write")
    try:
        check_can_create(out.parent)
    except PathError as exc:
        raise PathError(f"--out {out}: cannot be created ({exc})") from None
    for target in (out, sidecar(out, ".diagnostics.json"), sidecar(out, ".scatter.png")):
        check_not_input(target, [data], option="--out" if target == out else "--out's sidecar")


def cluster_record(
    cluster: Cluster, rows: Sequence[PairRow], members: Sequence[int]
) -> dict[str, Any]:
    anchor = rows[members[cluster.anchor]]
    return {
        "anchor": anchor.raw["query"],
        "task": anchor.task,
        "phase": cluster.phase,
        "pairs": [rows[members[r]].raw for r in cluster.rows],
    }


def mine(
    model: str | Any,
    data: str | Path,
    out: str | Path,
    config: MineConfig | None = None,
    *,
    log: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Mine clusters from a (query, positive) file and write them with their diagnostics.

    Args:
        model: a model spec (loaded with the embedding cache) or an :class:`Embedder`.
        data: JSONL rows with ``query``, ``positive`` and optional ``label``, ``instruction``,
            ``task``; or an exported split (``HFDIR:train``), read through
            :func:`bindkit.hfdata.read.local_path`.
        out: the clusters JSONL to write (replaced atomically, so a killed run leaves the
            previous file or none; rerunning restarts, reusing cached embeddings).
        config: method and options.
        log: where the table goes (None: silent).

    Returns:
        The diagnostics record written to ``OUT.diagnostics.json``.
    """
    from bindkit import __version__
    from bindkit._io import atomic_write_bytes, atomic_write_text, jsonl_bytes, sha256_file
    from bindkit.hfdata.read import local_path

    config = config or MineConfig()
    out = Path(out)
    if (local := local_path(data)) != Path(data):  # an exported split (HFDIR:train)
        data = local
    check_output(out, Path(data))
    rows = read_pairs(data)
    check_sizes(rows, config.k)
    if isinstance(model, str):
        from bindkit.embed.registry import load_embedder

        spec, embedder = model, load_embedder(model)
    else:
        spec, embedder = getattr(model, "spec", type(model).__name__), model
    _check_modalities(embedder, rows, spec)
    remove_stray_vectors(out)
    store = VectorStore(config.max_memory, out)
    try:
        pools = build_pools(embedder, rows, store, embed_chunk(config.max_memory))
        records: list[dict[str, Any]] = []
        per_task: dict[str, Diagnostics] = {}
        total = Diagnostics()
        for task, (members, pool) in pools.items():
            clusters, dropped = drop_singletons(run_method(pool, config))
            records += [cluster_record(c, rows, members) for c in clusters]
            per_task[task] = diagnose(pool, clusters, dropped=dropped)
            total.add(per_task[task])
        del pools
    finally:
        store.close()

    atomic_write_bytes(out, jsonl_bytes(records))
    options = asdict(config)
    report = {
        "schema": SCHEMA,
        "provenance": {
            "bindkit_version": __version__,
            "model": spec,
            "model_fingerprint": embedder.fingerprint,
            "data": str(data),
            "data_sha256": sha256_file(Path(data)),
            "options": options,
            "index_backend": config.index.resolved_backend(),
            "vectors": "memory-mapped" if store.spilled else "in memory",
        },
        "clusters_file": out.name,
        "total": total.summary(),
        "tasks": {task: d.summary() for task, d in per_task.items()},
    }
    import json

    atomic_write_text(sidecar(out, ".diagnostics.json"), json.dumps(report, indent=2) + "\n")
    plotted = scatter_png(sidecar(out, ".scatter.png"), {config.method: total})
    if log is not None:
        names = {config.method: total} if len(per_task) == 1 else {**per_task, "all": total}
        log(format_table(names))
        log(f"wrote {len(records)} clusters to {out}")
        if not plotted:
            log("no scatter plot: pip install 'bindkit[report]' for matplotlib")
    return report
