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
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.errors import BindkitError
from bindkit.mining.data import PairRow, read_pairs
from bindkit.mining.diagnostics import (
    Diagnostics,
    diagnose,
    drop_singletons,
    format_table,
    scatter_png,
)
from bindkit.mining.index import IndexConfig
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
    """

    method: str = "saha"
    k: int = 7
    m: int = 4
    relative_margin: float = 0.05
    label_filter: bool = True
    seed: int = 0
    index: IndexConfig = field(default_factory=IndexConfig)

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


def run_method(pool: Pool, config: MineConfig) -> list[Cluster]:
    """Mine one task's pool with ``config.method``."""
    from bindkit.mining.baselines import hard_negatives, random_negatives
    from bindkit.mining.saha import saha

    if config.method == "saha":
        return saha(pool, config.k, config.m, config.index, config.label_filter)
    if config.method == "hn":
        return hard_negatives(pool, config.k, config.m, config.index)
    if config.method == "hn-margin":
        return hard_negatives(pool, config.k, config.m, config.index, config.relative_margin)
    return random_negatives(pool, config.k, config.seed)


def _embed_sides(
    embedder: Any, sides: Sequence[tuple[str, str, str | None]], role: str
) -> dict[tuple[str, str, str | None], np.ndarray]:
    """Vectors of distinct (modality, value, instruction) triples, grouped into few calls."""
    groups: dict[tuple[str, str | None], list[str]] = {}
    for modality, value, instruction in dict.fromkeys(sides):
        groups.setdefault((modality, instruction), []).append(value)
    vectors: dict[tuple[str, str, str | None], np.ndarray] = {}
    for (modality, instruction), values in groups.items():
        embed = embedder.embed_texts if modality == "text" else embedder.embed_images
        out = np.asarray(embed(values, role=role, instruction=instruction), dtype=np.float32)
        for value, vector in zip(values, out, strict=True):
            vectors[(modality, value, instruction)] = vector
    return vectors


def _check_modalities(embedder: Any, rows: Sequence[PairRow], spec: str) -> None:
    needed = {r.query.modality for r in rows} | {r.positive.modality for r in rows}
    missing = sorted(needed - set(embedder.modalities))
    if missing:
        raise BindkitError(
            f"--model {spec}: the data has {' and '.join(missing)} inputs, which this model "
            f"cannot embed (it takes {', '.join(sorted(embedder.modalities))}); "
            "use a model for both modalities"
        )


def build_pools(embedder: Any, rows: Sequence[PairRow]) -> dict[str, tuple[list[int], Pool]]:
    """Per task (first-appearance order): its row indices and its :class:`Pool`."""
    queries = _embed_sides(
        embedder, [(r.query.modality, r.query.value, r.instruction) for r in rows], "query"
    )
    positives = _embed_sides(
        embedder, [(r.positive.modality, r.positive.value, None) for r in rows], "document"
    )
    tasks: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        tasks.setdefault(row.task, []).append(i)
    pools: dict[str, tuple[list[int], Pool]] = {}
    for task, members in tasks.items():
        candidate_ids: dict[tuple[str, str], int] = {}
        positive = [
            candidate_ids.setdefault(rows[i].positive.key, len(candidate_ids)) for i in members
        ]
        candidates = np.stack([positives[(*key, None)] for key in candidate_ids])
        q = np.stack([queries[(*rows[i].query.key, rows[i].instruction)] for i in members])
        labels = [rows[i].label for i in members]
        pool = Pool(q, candidates, np.asarray(positive), labels if any(labels) else None)
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


def sidecar(out: Path, suffix: str) -> Path:
    """``clusters.jsonl`` → ``clusters<suffix>`` (e.g. ``.diagnostics.json``)."""
    return out.with_name(out.stem + suffix)


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
            ``task``.
        out: the clusters JSONL to write (replaced atomically, so a killed run leaves the
            previous file or none; rerunning restarts, reusing cached embeddings).
        config: method and options.
        log: where the table goes (None: silent).

    Returns:
        The diagnostics record written to ``OUT.diagnostics.json``.
    """
    from bindkit import __version__
    from bindkit._io import atomic_write_bytes, atomic_write_text, jsonl_bytes, sha256_file

    config = config or MineConfig()
    out = Path(out)
    rows = read_pairs(data)
    check_sizes(rows, config.k)
    if isinstance(model, str):
        from bindkit.embed.registry import load_embedder

        spec, embedder = model, load_embedder(model)
    else:
        spec, embedder = getattr(model, "spec", type(model).__name__), model
    _check_modalities(embedder, rows, spec)
    pools = build_pools(embedder, rows)

    records: list[dict[str, Any]] = []
    per_task: dict[str, Diagnostics] = {}
    total = Diagnostics()
    for task, (members, pool) in pools.items():
        clusters, dropped = drop_singletons(run_method(pool, config))
        records += [cluster_record(c, rows, members) for c in clusters]
        per_task[task] = diagnose(pool, clusters, dropped=dropped)
        total.add(per_task[task])

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
