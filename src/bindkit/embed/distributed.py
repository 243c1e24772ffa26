"""Multi-process embedding: each process embeds a shard of the missing inputs, then all gather.

Launch the caller with ``accelerate launch`` or ``torchrun``; with one process nothing changes.
"""

from __future__ import annotations

import os
from typing import Any, TypeVar

T = TypeVar("T")


def world() -> tuple[int, int]:
    """(rank, world size) from the launcher's environment."""
    return int(os.environ.get("RANK", "0")), int(os.environ.get("WORLD_SIZE", "1"))


def shard(items: list[T], rank: int, size: int) -> list[T]:
    """Interleaved, nearly equal split of ``items``: process ``rank`` takes every ``size``-th item
    starting at ``rank``. The items are sorted longest first, so interleaving gives every shard
    about the same cost (a contiguous split would give one process all the long inputs)."""
    return items[rank::size]


def gather(local: dict[str, Any]) -> dict[str, Any]:
    """Merge every process's ``{key: vector}`` dict on every process (accelerate's gather)."""
    import torch
    from accelerate import PartialState
    from accelerate.utils import gather_object

    # initialises torch.distributed if needed: nccl on GPUs, gloo when running on CPUs
    PartialState(cpu=not torch.cuda.is_available())
    merged: dict[str, Any] = {}
    for part in gather_object([local]):
        merged.update(part)
    return merged
