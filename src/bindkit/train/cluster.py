"""InfoNCE inside mined clusters (seed 002, §III-C3) and the in-batch baseline.

Each pair i has a query embedding ``q_i`` and a positive embedding ``d_i``; the loss of pair i is
``−log softmax_j(q_i·d_j / τ)[i]`` where j runs over the pairs of i's cluster (``groups``), or
over the whole (gathered) batch for the in-batch baseline. τ = 0.02 as in the seed and VLM2Vec.
With B clusters of k+1 pairs per step the effective batch is B·(k+1).
"""

from __future__ import annotations

from typing import Any

TEMPERATURE = 0.02


def cluster_infonce(
    queries: Any, documents: Any, groups: Any | None = None, temperature: float = TEMPERATURE
) -> Any:
    """Mean InfoNCE over pairs, the denominator restricted to each pair's group.

    Args:
        queries: ``[n, d]`` L2-normalised query embeddings.
        documents: ``[n, d]`` L2-normalised positive embeddings; row i is query i's positive.
        groups: ``[n]`` integer cluster id per pair; None for the in-batch baseline (every
            other positive in the batch is a negative).
        temperature: softmax temperature τ.

    Returns:
        A scalar tensor.

    Example:
        >>> import torch
        >>> q = torch.eye(2); loss = cluster_infonce(q, q, torch.tensor([0, 1]))
        >>> float(loss)  # one pair per cluster: nothing to contrast with
        0.0
    """
    import torch

    logits = queries @ documents.T / temperature
    if groups is not None:
        same = groups[:, None] == groups[None, :]
        logits = logits.masked_fill(~same, float("-inf"))
    target = torch.arange(len(queries), device=logits.device)
    return torch.nn.functional.cross_entropy(logits, target)


def gather_with_grad(local: Any) -> Any:
    """Concatenate a tensor across ranks, keeping this rank's slice differentiable.

    ``all_gather`` returns tensors without gradient; putting the local shard back in its slot
    lets each rank's loss reach its own encoder (VLM2Vec's recipe). Single process: the input.
    """
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return local
    parts = [torch.empty_like(local) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, local.contiguous())
    parts[dist.get_rank()] = local
    return torch.cat(parts)


class ClusterInfoNCELoss:
    """The loss as an object, for trainers that hold one: ``loss(q, d, groups)``.

    Args:
        temperature: τ.
        in_batch: ignore the clusters (the in-batch baseline).
        gather: gather embeddings (and group ids, offset per rank) across ranks first.
    """

    def __init__(
        self, temperature: float = TEMPERATURE, in_batch: bool = False, gather: bool = True
    ) -> None:
        if temperature <= 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.temperature = temperature
        self.in_batch = in_batch
        self.gather = gather

    def __call__(self, queries: Any, documents: Any, groups: Any) -> Any:
        if self.gather:
            queries, documents = gather_with_grad(queries), gather_with_grad(documents)
            groups = _gather_groups(groups)
        return cluster_infonce(
            queries, documents, None if self.in_batch else groups, self.temperature
        )


def _gather_groups(groups: Any) -> Any:
    import torch
    import torch.distributed as dist

    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return groups
    # make ids unique per rank: rank r's ids are offset by r·(max id + 1 over ranks)
    span = groups.max().detach().reshape(1) + 1
    dist.all_reduce(span, op=dist.ReduceOp.MAX)
    shifted = groups + dist.get_rank() * span
    parts = [torch.empty_like(shifted) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, shifted.contiguous())
    return torch.cat(parts)
