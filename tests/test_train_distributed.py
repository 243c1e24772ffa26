"""Two gloo processes on the CPU with unequal local batches give one process's loss and gradients.

Rank 0 holds 8 pairs (clusters of 3 and 5) or 3 triplets (hinge, in-batch InfoNCE), rank 1
holds 5 pairs (clusters of 2 and 3) or 2 triplets, as the trainer's plan deals out mixed-size
clusters and a last uneven batch.
Each rank's loss is its share of the global loss; the gradients are summed across ranks, as the
trainer does (``Run.all_reduce`` in :mod:`bindkit.train.loop`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
if not dist.is_available() or not dist.is_gloo_available():
    pytest.skip("torch.distributed with gloo is not available", allow_module_level=True)

from bindkit.train.losses import (  # noqa: E402
    ClusterInfoNCELoss,
    TripletHingeLoss,
    TripletInfoNCELoss,
    global_count,
)

PAIRS = [8, 5]  # pairs per rank
GROUPS = [0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 3, 3, 3]  # clusters of 3, 5 | 2, 3: none spans ranks
TRIPLETS = [3, 2]


def data() -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return {
        name: torch.randn(13, 6, generator=generator, dtype=torch.float64)
        for name in ("q", "d", "n")
    }


def encoder() -> torch.nn.Module:
    torch.manual_seed(1)
    return torch.nn.Linear(6, 4, dtype=torch.float64)


def losses(model: torch.nn.Module, batch: dict[str, torch.Tensor], groups: torch.Tensor) -> Any:
    def embed(x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.normalize(model(x), dim=-1)

    q, d = embed(batch["q"]), embed(batch["d"])
    rows = global_count(len(q))
    return {
        "clusters": ClusterInfoNCELoss(0.1)(q, d, groups),
        "in_batch": ClusterInfoNCELoss(0.1, in_batch=True)(q, d, groups),
        "hinge": TripletHingeLoss(0.3)(q, d, embed(batch["n"]), rows),
        "triplet_nce": TripletInfoNCELoss(0.1)(q, d, embed(batch["n"]), rows),
    }


NAMES = ("clusters", "in_batch", "hinge", "triplet_nce")
TRIPLET_LOSSES = ("hinge", "triplet_nce")


def one_process() -> dict[str, tuple[float, list[torch.Tensor]]]:
    results = {}
    for name in NAMES:
        model = encoder()
        full = data()
        if name in TRIPLET_LOSSES:
            full = {k: v[: sum(TRIPLETS)] for k, v in full.items()}
        loss = losses(model, full, torch.tensor(GROUPS[: len(full["q"])]))[name]
        loss.backward()
        results[name] = (float(loss.detach()), [p.grad.clone() for p in model.parameters()])
    return results


def worker(rank: int, world: int, init: str, out: str) -> None:
    dist.init_process_group("gloo", init_method=f"file://{init}", rank=rank, world_size=world)
    try:
        results = {}
        for name in NAMES:
            sizes = TRIPLETS if name in TRIPLET_LOSSES else PAIRS
            start, stop = sum(sizes[:rank]), sum(sizes[: rank + 1])
            local = {k: v[start:stop] for k, v in data().items()}
            model = encoder()
            loss_fn: Any = (
                TripletInfoNCELoss(0.1)
                if name == "triplet_nce"
                else ClusterInfoNCELoss(0.1, in_batch=name == "in_batch")
            )
            loss = losses(model, local, torch.tensor(GROUPS[start:stop]))[name]
            loss.backward()
            for parameter in model.parameters():
                dist.all_reduce(parameter.grad)  # summed, as the trainer does
            value = loss_fn.share(loss.detach()) if name != "hinge" else loss.detach()
            dist.all_reduce(value)
            results[name] = (float(value), [p.grad.clone() for p in model.parameters()])
        if rank == 0:
            torch.save(results, out)
    finally:
        dist.destroy_process_group()


def test_unequal_ranks_equal_one_process(tmp_path: Path) -> None:
    import torch.multiprocessing as mp

    out = tmp_path / "ranks.pt"
    mp.spawn(worker, args=(2, str(tmp_path / "init"), str(out)), nprocs=2, join=True)
    ranks = torch.load(out, weights_only=False)
    single = one_process()
    for name, (value, grads) in single.items():
        got_value, got_grads = ranks[name]
        assert got_value == pytest.approx(value, rel=1e-12), name
        for got, expected in zip(got_grads, grads, strict=True):
            torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12, msg=name)
