"""Training losses: ``nn.Module`` wrappers around pure functions of embeddings.

As in sentence-transformers, each module's ``forward`` delegates to
``compute_loss_from_embeddings`` so the math is tested on hand-made tensors, without a model.
This module imports torch: import it only where training happens.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn


def triplet_hinge(
    query: Tensor, positive: Tensor, negative: Tensor, margin: float = 0.05
) -> Tensor:
    """mean(relu(margin − cos(q, p) + cos(q, n))) over rows of L2-normalised embeddings.

    The same as sentence-transformers' ``TripletLoss`` with the cosine distance.

    Example:
        >>> q, n = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
        >>> float(triplet_hinge(q, q, n, margin=0.05))
        0.0
    """
    positive_sim = (query * positive).sum(-1)
    negative_sim = (query * negative).sum(-1)
    return torch.relu(margin - positive_sim + negative_sim).mean()


def distillation(student: Tensor, teacher: Tensor) -> Tensor:
    """mean(1 − cos(student, teacher)) over rows of L2-normalised embeddings."""
    return (1.0 - (student * teacher).sum(-1)).mean()


class TripletHingeLoss(nn.Module):  # type: ignore[misc]  # torch is untyped here
    """Hinge triplet loss over cosine similarity (margin γ, default 0.05).

    Inputs: three ``[batch, dim]`` L2-normalised tensors (query, positive, negative). Needs a plain
    shuffled batch sampler; no in-batch negatives are used.
    """

    def __init__(self, margin: float = 0.05) -> None:
        super().__init__()
        self.margin = margin

    def compute_loss_from_embeddings(
        self, query: Tensor, positive: Tensor, negative: Tensor
    ) -> Tensor:
        return triplet_hinge(query, positive, negative, self.margin)

    def forward(self, query: Tensor, positive: Tensor, negative: Tensor) -> Tensor:
        return self.compute_loss_from_embeddings(query, positive, negative)
