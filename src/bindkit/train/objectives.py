"""The objectives of :func:`bindkit.train.trainer.train`: what a batch holds and its loss.

The trainer's plan deals out *units* (a triplet, a cluster) to micro-batches and ranks; an
objective turns a rank's units into a :class:`Batch` (its rows and the collated inputs of each
side) and the sides' embeddings into this rank's share of the global loss
(:mod:`bindkit.train.losses`). Adding an objective is one class here and one config class.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from bindkit.errors import BindkitError, DataFormatError
from bindkit.train.batches import Chunk, item, prepare, text_items
from bindkit.train.config import ClusterTrainConfig, TrainConfig


@dataclass
class Batch:
    """One rank's part of a micro-batch: its rows, the chunks of each side, the cluster ids."""

    rows: list[dict[str, Any]]
    sides: list[list[Chunk]]
    groups: list[int] | None = None


class Objective(Protocol):
    name: str
    units: int  # what the plan deals out: triplets, clusters
    data: str  # the training file (its hash is part of the checkpoint's identity)

    def counts(self) -> dict[str, int]: ...

    def collate(self, embedder: Any, units: list[int], chunk_size: int) -> Batch: ...

    def loss(self, embeddings: list[Any], batch: Batch, global_rows: int) -> Any: ...

    def share(self, loss: Any) -> Any: ...

    def named(self, embeddings: list[Any], batch: Batch) -> dict[str, Any]: ...

    def correct(self, embeddings: list[Any], batch: Batch) -> int: ...


class TripletObjective:
    """(query, positive, negative) rows under the hinge loss (:class:`~bindkit.train.losses.
    TripletHingeLoss`, the default) or in-batch InfoNCE (:class:`~bindkit.train.losses.
    TripletInfoNCELoss`, ``--loss infonce``). Sides: the queries (query role), then positives and
    negatives (document role)."""

    name = "triplets"

    def __init__(self, config: TrainConfig) -> None:
        from bindkit.tasks.text.triplets import read_triplets
        from bindkit.train.losses import TripletHingeLoss, TripletInfoNCELoss

        self.rows = read_triplets(config.train)
        self.units, self.data = len(self.rows), config.train
        self.loss_fn: TripletHingeLoss | TripletInfoNCELoss = (
            TripletInfoNCELoss(config.temperature)
            if config.loss == "infonce"
            else TripletHingeLoss(config.margin)
        )

    def counts(self) -> dict[str, int]:
        return {"triplets": len(self.rows)}

    def collate(self, embedder: Any, units: list[int], chunk_size: int) -> Batch:
        rows = [self.rows[i] for i in units]
        queries = text_items([r["query"] for r in rows])
        documents = text_items([r["positive"] for r in rows] + [r["negative"] for r in rows])
        return Batch(
            rows,
            [
                prepare(embedder, queries, "query", chunk_size),
                prepare(embedder, documents, "document", chunk_size),
            ],
        )

    def loss(self, embeddings: list[Any], batch: Batch, global_rows: int) -> Any:
        query, positive, negative = self._split(embeddings, batch)
        return self.loss_fn(query, positive, negative, global_rows)

    def share(self, loss: Any) -> Any:
        return self.loss_fn.share(loss)

    def named(self, embeddings: list[Any], batch: Batch) -> dict[str, Any]:
        return dict(
            zip(("query", "positive", "negative"), self._split(embeddings, batch), strict=True)
        )

    def correct(self, embeddings: list[Any], batch: Batch) -> int:
        query, positive, negative = self._split(embeddings, batch)
        return int((((query * positive).sum(-1) - (query * negative).sum(-1)) > 0).sum())

    @staticmethod
    def _split(embeddings: list[Any], batch: Batch) -> tuple[Any, Any, Any]:
        query, documents = embeddings
        n = len(batch.rows)
        return query, documents[:n], documents[n:]


def read_clusters(path: str | Path) -> list[list[dict[str, Any]]]:
    """The ``pairs`` of each cluster line of a ``bindkit mine`` file, validated."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataFormatError(f"--clusters {path}: no such file") from None
    except UnicodeDecodeError:
        raise DataFormatError(
            f"--clusters {path}: not UTF-8 text; give the JSONL that `bindkit mine` writes"
        ) from None
    except OSError as exc:
        raise DataFormatError(f"--clusters {path}: cannot read ({exc.strerror})") from None
    clusters = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        pairs = record.get("pairs") if isinstance(record, dict) else None
        if (
            not isinstance(pairs, list)
            or not pairs
            or not all(
                isinstance(p, dict)
                and isinstance(p.get("query"), str)
                and isinstance(p.get("positive"), str)
                and p["query"].strip()
                and p["positive"].strip()
                for p in pairs
            )
        ):
            raise DataFormatError(
                f"{path}:{number}: expected {{'pairs': [{{'query', 'positive'}}, ...]}} "
                "(the output of `bindkit mine`)"
            )
        clusters.append(pairs)
    if not clusters:
        raise DataFormatError(f"--clusters {path}: no clusters")
    return clusters


class ClusterObjective:
    """InfoNCE inside mined clusters (:class:`~bindkit.train.losses.ClusterInfoNCELoss`), seed
    002. A unit is a whole cluster, so a cluster never spans ranks. Sides: each pair's query
    (query role, the pair's instruction), then its positive (document role); values naming an
    image file are embedded as images."""

    name = "clusters"

    def __init__(self, config: ClusterTrainConfig) -> None:
        from bindkit.train.losses import ClusterInfoNCELoss

        self.clusters = read_clusters(config.clusters)
        self.base = Path(config.clusters).parent
        self.units, self.data = len(self.clusters), config.clusters
        self.loss_fn = ClusterInfoNCELoss(config.temperature, in_batch=config.in_batch)

    def counts(self) -> dict[str, int]:
        return {"clusters": len(self.clusters), "pairs": sum(map(len, self.clusters))}

    def collate(self, embedder: Any, units: list[int], chunk_size: int) -> Batch:
        rows, groups, queries, documents = [], [], [], []
        for group, unit in enumerate(units):
            for pair in self.clusters[unit]:
                rows.append(pair)
                groups.append(group)
                queries.append(item(pair["query"], pair.get("instruction") or None, self.base))
                documents.append(item(pair["positive"], None, self.base))
        return Batch(
            rows,
            [
                prepare(embedder, queries, "query", chunk_size),
                prepare(embedder, documents, "document", chunk_size),
            ],
            groups,
        )

    def loss(self, embeddings: list[Any], batch: Batch, global_rows: int) -> Any:
        queries, documents = embeddings
        return self.loss_fn(queries, documents, self._groups(batch, queries), global_rows)

    def share(self, loss: Any) -> Any:
        return self.loss_fn.share(loss)

    def named(self, embeddings: list[Any], batch: Batch) -> dict[str, Any]:
        return {"query": embeddings[0], "positive": embeddings[1]}

    def correct(self, embeddings: list[Any], batch: Batch) -> int:
        """Pairs whose own positive is the closest within their cluster."""
        queries, documents = embeddings
        groups = self._groups(batch, queries)
        scores = (queries @ documents.T).masked_fill(
            groups[:, None] != groups[None, :], float("-inf")
        )
        import torch

        return int((scores.argmax(-1) == torch.arange(len(queries), device=scores.device)).sum())

    @staticmethod
    def _groups(batch: Batch, like: Any) -> Any:
        import torch

        if batch.groups is None:
            raise BindkitError("cluster batch without cluster ids")
        return torch.tensor(batch.groups, device=like.device)


def objective_for(config: TrainConfig | ClusterTrainConfig) -> Objective:
    """The objective a config names; reads and checks its training file."""
    if isinstance(config, ClusterTrainConfig):
        return ClusterObjective(config)
    return TripletObjective(config)
