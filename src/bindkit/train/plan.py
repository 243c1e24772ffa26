"""The plan of a training run: which units (triplets, clusters) each rank sees, micro-batch by
micro-batch, from the seed and the epoch alone (so a resumed run sees the batches an
uninterrupted one would), and the ranks themselves (:func:`process_state`)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from bindkit.train.config import BaseTrainConfig, ClusterTrainConfig, TrainConfig

__all__ = ["Plan", "epoch_micro_batches", "per_device", "process_state"]


def epoch_micro_batches(epochs: float, per_epoch: int) -> int:
    """Micro-batches of ``epochs`` passes of ``per_epoch`` micro-batches: a fractional pass
    rounds up, as transformers' Trainer does (``ceil(num_train_epochs x steps per epoch)``).

    Example:
        >>> epoch_micro_batches(1.5, 7), epoch_micro_batches(2, 7), epoch_micro_batches(1.1, 50)
        (11, 14, 55)
    """
    # round first: 1.1 x 50 is 55.00000000000001 in floats, 55 micro-batches, not 56
    return math.ceil(round(epochs * per_epoch, 9))


@dataclass
class Plan:
    """The micro-batches of one run: which units (triplets, clusters) each rank sees, in order.

    Epoch ``e``'s order is a permutation seeded by ``seed`` and ``e`` alone, built when the run
    reaches it: a run stopped by ``--max-steps`` builds only the epochs it trains (``--epochs``
    never costs memory or time up front), and a resumed run sees the same batches. Fractional
    ``epochs`` run :func:`epoch_micro_batches` micro-batches: the last epoch is cut part-way.
    """

    rows: int
    batch_size: int
    world: int
    epochs: float
    seed: int
    _epoch: int = field(default=-1, init=False, repr=False)
    _batches: list[list[int]] = field(default_factory=list, init=False, repr=False)

    @property
    def per_step(self) -> int:
        """Units of one global micro-batch (every rank's together)."""
        return self.batch_size * self.world

    @property
    def per_epoch(self) -> int:
        """Micro-batches per epoch: with several ranks, a last batch too small to give every
        rank a unit is dropped."""
        return self.rows // self.per_step + (1 if self.rows % self.per_step >= self.world else 0)

    @property
    def total(self) -> int:
        """Micro-batches of every epoch (the last one cut when ``epochs`` is fractional)."""
        return epoch_micro_batches(self.epochs, self.per_epoch)

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """Epoch ``epoch``'s global micro-batches (the last one built is kept)."""
        import torch

        if epoch != self._epoch:
            generator = torch.Generator().manual_seed(self.seed * 1000 + epoch)
            perm = torch.randperm(self.rows, generator=generator).tolist()
            batches = [perm[i : i + self.per_step] for i in range(0, len(perm), self.per_step)]
            self._epoch, self._batches = epoch, batches[: self.per_epoch]
        return self._batches

    def batch(self, micro: int) -> list[int]:
        """Global micro-batch ``micro`` (every rank's units)."""
        epoch, index = divmod(micro, self.per_epoch)
        return self.epoch_batches(epoch)[index]

    @property
    def order(self) -> list[list[int]]:
        """Every micro-batch of every epoch (built in full: for tests and small plans)."""
        epochs = range(math.ceil(self.epochs))
        return [b for epoch in epochs for b in self.epoch_batches(epoch)][: self.total]

    def shard(self, micro: int, rank: int) -> list[int]:
        """Rank ``rank``'s units of global micro-batch ``micro``."""
        return self.batch(micro)[rank :: self.world]


def per_device(config: BaseTrainConfig) -> int:
    """Units per device per micro-batch: triplets, or clusters."""
    if isinstance(config, ClusterTrainConfig):
        return config.clusters_per_step
    assert isinstance(config, TrainConfig)
    return config.batch_size


def process_state() -> Any:
    """accelerate's process state, its ranks from the launcher's environment (``accelerate
    launch``, ``torchrun``): nccl on GPUs, gloo on CPUs, as :mod:`bindkit.embed.distributed`
    (accelerate's default ``cpu=False`` sees one process on a machine without CUDA)."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())
