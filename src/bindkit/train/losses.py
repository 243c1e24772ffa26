"""Every training loss in one place: ``nn.Module`` wrappers around pure functions.

As in sentence-transformers, each module's ``forward`` delegates to
``compute_loss_from_embeddings`` (the attention term: ``compute_loss_from_margins``), so the math
is tested on hand-made tensors without a model (``tests/test_losses.py``: value and gradient per
loss). The objectives (:class:`TripletHingeLoss`, :class:`ClusterInfoNCELoss`) take a batch's
embeddings; :class:`DistillationLoss` and :class:`AttentionMarginLoss` are the auxiliary terms
(preservation, attention binding) that :mod:`bindkit.train.trainer` adds to either objective.

Several processes (``accelerate launch``): every loss returns this rank's *share* of the global
loss, so the trainer sums (not averages) gradients across ranks and gets the gradient of one
process on the whole global batch, also when ranks hold different numbers of rows or pairs.
This module imports torch: import it only where training happens.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

MARGIN = 0.05
TEMPERATURE = 0.02


# -- pure functions ----------------------------------------------------------------------------
def triplet_hinge(
    query: Tensor, positive: Tensor, negative: Tensor, margin: float = MARGIN
) -> Tensor:
    """mean(relu(margin − cos(q, p) + cos(q, n))) over rows of L2-normalised embeddings.

    The same as sentence-transformers' ``TripletLoss`` with the cosine distance.

    Example:
        >>> q, n = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])
        >>> float(triplet_hinge(q, q, n, margin=0.05))  # cos(q, p) − cos(q, n) = 1 ≥ margin
        0.0
        >>> round(float(triplet_hinge(q, n, q, margin=0.05)), 4)  # 0.05 − 0 + 1
        1.05
    """
    positive_sim = (query * positive).sum(-1)
    negative_sim = (query * negative).sum(-1)
    return torch.relu(margin - positive_sim + negative_sim).mean()


def triplet_infonce(
    query: Tensor, positive: Tensor, negative: Tensor, temperature: float = 0.05
) -> Tensor:
    """mean_i −log softmax_j(q_i·d_j / τ)[i] with d = [positives; negatives] of the batch.

    Multiple-negatives ranking with hard negatives (sentence-transformers'
    ``MultipleNegativesRankingLoss`` on (anchor, positive, negative) rows, scale 1/τ): each
    query's candidates are every positive and every negative of the batch, its own positive
    the target. Rows are L2-normalised.

    Example:
        >>> q = torch.eye(2)
        >>> # query 0's candidates score 1 (own positive), 0, −1 (own negative), 0
        >>> round(float(triplet_infonce(q, q, -q, temperature=1.0)), 4)
        0.6265
    """
    candidates = torch.cat([positive, negative]) if len(negative) else positive
    logits = query @ candidates.T / temperature
    target = torch.arange(len(query), device=logits.device)
    return torch.nn.functional.cross_entropy(logits, target)


def cluster_infonce_terms(
    queries: Tensor, documents: Tensor, groups: Tensor | None, temperature: float = TEMPERATURE
) -> Tensor:
    """Per pair i: ``−log softmax_j(q_i·d_j / τ)[i]``, j over i's group (None: every pair).

    Example:
        >>> q = torch.eye(2)
        >>> cluster_infonce_terms(q, q, torch.tensor([0, 1])).tolist() == [0.0, 0.0]  # alone
        True
    """
    logits = queries @ documents.T / temperature
    if groups is not None:
        same = groups[:, None] == groups[None, :]
        logits = logits.masked_fill(~same, float("-inf"))
    target = torch.arange(len(queries), device=logits.device)
    return torch.nn.functional.cross_entropy(logits, target, reduction="none")


def cluster_infonce(
    queries: Tensor,
    documents: Tensor,
    groups: Tensor | None = None,
    temperature: float = TEMPERATURE,
) -> Tensor:
    """Mean InfoNCE over pairs, the denominator restricted to each pair's group.

    Args:
        queries: ``[n, d]`` L2-normalised query embeddings.
        documents: ``[n, d]`` L2-normalised positive embeddings; row i is query i's positive.
        groups: ``[n]`` integer cluster id per pair; None for the in-batch baseline (every
            other positive in the batch is a negative).
        temperature: softmax temperature τ.

    Example:
        >>> q = torch.eye(2); loss = cluster_infonce(q, q, torch.tensor([0, 1]))
        >>> float(loss)  # one pair per cluster: nothing to contrast with
        0.0
    """
    return cluster_infonce_terms(queries, documents, groups, temperature).mean()


def distillation(student: Tensor, teacher: Tensor) -> Tensor:
    """mean(1 − cos(student, teacher)) over rows of L2-normalised embeddings.

    Example:
        >>> s = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
        >>> float(distillation(s, torch.tensor([[1.0, 0.0], [1.0, 0.0]])))  # (0 + 1) / 2
        0.5
    """
    return (1.0 - (student * teacher).sum(-1)).mean()


def relational_distillation(student: Tensor, teacher: Tensor) -> Tensor:
    """mean over pairs i ≠ j of (cos(s_i, s_j) − cos(t_i, t_j))²: the base model's similarity
    structure among the sentences, kept (relational knowledge distillation, Park et al. CVPR
    2019, with cosine as the relation). Rows are L2-normalised; one row gives 0.

    Example:
        >>> s = torch.tensor([[1.0, 0.0], [0.0, 1.0]])  # cos(s0, s1) = 0
        >>> t = torch.tensor([[1.0, 0.0], [0.6, 0.8]])  # cos(t0, t1) = 0.6
        >>> round(float(relational_distillation(s, t)), 6)  # (0 − 0.6)² on both ordered pairs
        0.36
    """
    n = student.shape[0]
    if n < 2:
        return student.sum() * 0.0
    gap = student @ student.T - teacher @ teacher.T
    off = ~torch.eye(n, dtype=torch.bool, device=student.device)
    return gap[off].pow(2).mean()


def ensemble_targets(members: Tensor, owners: Tensor, rows: int) -> Tensor:
    """Row r's target: the L2-normalised mean of the ``members`` whose owner is r.

    A prompt ensemble as a distillation target: ``members`` ``[m, dim]`` are the teacher's
    L2-normalised embeddings of several wordings of each row's text (for SABER captions, the
    same pairs in other orders), ``owners`` ``[m]`` the row each belongs to. A row without
    members gets a zero vector.

    Example:
        >>> members = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
        >>> ensemble_targets(members, torch.tensor([0, 0, 1]), 2).tolist()[1]
        [0.0, 1.0]
    """
    sums = members.new_zeros((rows, members.shape[1])).index_add_(0, owners, members)
    return torch.nn.functional.normalize(sums, dim=-1)


def attention_penalty(margins: Tensor, tau: float = 0.1) -> Tensor:
    """mean over (layer, object) of ``[τ − margin]+`` (zero for no objects).

    Example:
        >>> round(float(attention_penalty(torch.tensor([[0.0, 0.3]]), tau=0.1)), 6)  # (0.1 + 0)/2
        0.05
    """
    if margins.numel() == 0:
        return margins.sum()
    return torch.relu(tau - margins).mean()


# -- across processes --------------------------------------------------------------------------
def _world() -> tuple[int, int]:
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def global_count(local: int, device: torch.device | None = None) -> int:
    """The sum of ``local`` over ranks (``local`` itself in one process)."""
    _, world = _world()
    if world == 1:
        return local
    import torch.distributed as dist

    count = torch.tensor([local], dtype=torch.long, device=device)
    dist.all_reduce(count)
    return int(count)


def gather_with_grad(local: Tensor) -> tuple[Tensor, int]:
    """Concatenate a tensor across ranks whose first dimensions may differ; keep this rank's slice
    differentiable. Returns (gathered, offset of this rank's rows).

    Each rank pads its rows to the longest rank's count, ``all_gather`` moves equal-sized blocks
    (gloo and NCCL need that), and the padding is cut off again. ``all_gather`` returns tensors
    without gradient; putting the local tensor back in its slot lets each rank's loss reach its
    own encoder (VLM2Vec's recipe). One process: ``(local, 0)``.
    """
    rank, world = _world()
    if world == 1:
        return local, 0
    import torch.distributed as dist

    size = torch.tensor([local.shape[0]], dtype=torch.long, device=local.device)
    sizes_t = [torch.zeros_like(size) for _ in range(world)]
    dist.all_gather(sizes_t, size)
    sizes = [int(s) for s in sizes_t]
    padded = local.new_zeros((max(sizes), *local.shape[1:]))
    padded[: local.shape[0]] = local.detach()
    parts = [torch.empty_like(padded) for _ in range(world)]
    dist.all_gather(parts, padded.contiguous())
    pieces = [part[:n] for part, n in zip(parts, sizes, strict=True)]
    pieces[rank] = local
    return torch.cat(pieces), sum(sizes[:rank])


# -- the objectives ----------------------------------------------------------------------------
class TripletHingeLoss(nn.Module):  # type: ignore[misc]  # torch is untyped here
    """Hinge triplet loss over cosine similarity (seed 000, §4: margin γ = 0.05).

    ``L = mean_i relu(γ − cos(q_i, p_i) + cos(q_i, n_i))``.

    Inputs: three ``[batch, dim]`` L2-normalised tensors (query, positive, negative). Needs a plain
    shuffled batch sampler; no in-batch negatives are used. Across ranks, each rank's loss is its
    rows' sum over the global row count (``global_rows``), so summed gradients are the global
    mean's.
    """

    def __init__(self, margin: float = MARGIN) -> None:
        super().__init__()
        self.margin = margin

    def compute_loss_from_embeddings(
        self, query: Tensor, positive: Tensor, negative: Tensor, global_rows: int | None = None
    ) -> Tensor:
        loss = triplet_hinge(query, positive, negative, self.margin)
        if global_rows is None or global_rows == len(query):
            return loss
        return loss * (len(query) / global_rows)

    def forward(
        self, query: Tensor, positive: Tensor, negative: Tensor, global_rows: int | None = None
    ) -> Tensor:
        return self.compute_loss_from_embeddings(query, positive, negative, global_rows)

    def share(self, loss: Tensor) -> Tensor:
        """This rank's part of the global loss value: the loss already is its share."""
        return loss


class TripletInfoNCELoss(nn.Module):  # type: ignore[misc]
    """InfoNCE over (query, positive, negative) rows with in-batch negatives
    (:func:`triplet_infonce`, ``--loss infonce``): each query against every positive and
    negative of the *global* batch. Besides its own hard negative, each query is pushed from the
    batch's other captions, which keeps the embedding space spread out as the model's own
    pre-training loss did.

    Across ranks: queries, positives and negatives are gathered (:func:`gather_with_grad`), every
    rank computes the global loss with its own slice carrying gradients, and ``share`` divides
    the replicated value by the world size.
    """

    def __init__(self, temperature: float = 0.05) -> None:
        super().__init__()
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.temperature = temperature

    def compute_loss_from_embeddings(
        self, query: Tensor, positive: Tensor, negative: Tensor, global_rows: int | None = None
    ) -> Tensor:
        all_query, _ = gather_with_grad(query)
        all_positive, _ = gather_with_grad(positive)
        all_negative, _ = gather_with_grad(negative)
        return triplet_infonce(all_query, all_positive, all_negative, self.temperature)

    def forward(
        self, query: Tensor, positive: Tensor, negative: Tensor, global_rows: int | None = None
    ) -> Tensor:
        return self.compute_loss_from_embeddings(query, positive, negative, global_rows)

    def share(self, loss: Tensor) -> Tensor:
        """This rank's part of the global loss value (the loss is replicated on every rank)."""
        return loss / _world()[1]


class ClusterInfoNCELoss(nn.Module):  # type: ignore[misc]
    """InfoNCE inside mined clusters (seed 002, §III-C3), or the in-batch baseline.

    ``L = mean_i −log( exp(q_i·d_i/τ) / Σ_{j ∈ C(i)} exp(q_i·d_j/τ) )`` where C(i) is pair i's
    cluster (``in_batch``: every pair of the global batch). τ = 0.02 as in the seed (§IV-A1) and
    VLM2Vec; with B clusters of k+1 pairs per step the effective batch is B·(k+1)
    (docs/seed-choices.md#seed-002s-training-recipe-bindkit-train-clusters).

    Inputs: ``queries`` and ``documents`` ``[n, dim]`` L2-normalised (row i of ``documents`` is
    query i's positive), ``groups`` ``[n]`` cluster ids. Needs a sampler that keeps each cluster
    whole on one rank (the trainer's plan shards whole clusters).

    Across ranks: the cluster loss needs no gather (a denominator never leaves its cluster), each
    rank returns its pairs' sum over the global pair count; the in-batch baseline gathers queries
    and documents of unequal sizes (:func:`gather_with_grad`) and every rank computes the global
    loss, its own slice carrying gradients, scaled so the ranks' gradients sum to the global one.
    """

    def __init__(self, temperature: float = TEMPERATURE, in_batch: bool = False) -> None:
        super().__init__()
        if not temperature > 0:
            raise ValueError(f"temperature must be positive, got {temperature}")
        self.temperature = temperature
        self.in_batch = in_batch

    def compute_loss_from_embeddings(
        self, queries: Tensor, documents: Tensor, groups: Tensor, global_pairs: int | None = None
    ) -> Tensor:
        if self.in_batch:
            all_queries, _ = gather_with_grad(queries)
            all_documents, _ = gather_with_grad(documents)
            return cluster_infonce(all_queries, all_documents, None, self.temperature)
        terms = cluster_infonce_terms(queries, documents, groups, self.temperature)
        if global_pairs is None:
            global_pairs = global_count(len(terms), terms.device)
        return terms.sum() / global_pairs

    def forward(
        self, queries: Tensor, documents: Tensor, groups: Tensor, global_pairs: int | None = None
    ) -> Tensor:
        return self.compute_loss_from_embeddings(queries, documents, groups, global_pairs)

    def share(self, loss: Tensor) -> Tensor:
        """This rank's part of the global loss value (the in-batch loss is replicated)."""
        return loss / _world()[1] if self.in_batch else loss


# -- the auxiliary terms -----------------------------------------------------------------------
class DistillationLoss(nn.Module):  # type: ignore[misc]
    """Preservation: keep the finetuned model's embeddings of general sentences near the base
    model's (a feature-distillation term; cf. LiNeS, Wang et al. ICLR 2025, on forgetting).

    ``L = w · mean_i (1 − cos(s_i, t_i)) + w_rel · mean_{i≠j} (cos(s_i, s_j) − cos(t_i, t_j))²``
    with s the student's (trained) and t the teacher's (base model, precomputed) L2-normalised
    embeddings of the same sentences, ``[n, dim]`` each; the second term
    (:func:`relational_distillation`, off by default) keeps how similar the sentences are to
    each other, which is what STS measures.
    Every rank sees the same sentences, so a rank's share is ``L / world``.
    """

    def __init__(self, weight: float = 1.0, relational: float = 0.0) -> None:
        super().__init__()
        self.weight, self.relational = weight, relational

    def compute_loss_from_embeddings(self, student: Tensor, teacher: Tensor) -> Tensor:
        loss = self.weight * distillation(student, teacher)
        if self.relational > 0:
            loss = loss + self.relational * relational_distillation(student, teacher)
        return loss / _world()[1]

    def forward(self, student: Tensor, teacher: Tensor) -> Tensor:
        return self.compute_loss_from_embeddings(student, teacher)


class AttentionMarginLoss(nn.Module):  # type: ignore[misc]
    """The attention binding loss (seed 000, §5.2): ``L = λ · mean_{(o, ℓ)} [τ − m_{o,ℓ}]+``.

    ``m_{o,ℓ}`` is object o's binding margin at layer ℓ (its mean attention to its own attribute
    words minus that to the other objects' attribute words; :mod:`bindkit.analysis.attention`),
    for layers ℓ in the band (18–26 of 36). Input: ``margins`` ``[layers, objects]`` of this rank's
    rows; ``rows``/``global_rows`` scale it to this rank's share of the global batch.
    """

    def __init__(self, tau: float = 0.1, weight: float = 0.1) -> None:
        super().__init__()
        self.tau, self.weight = tau, weight

    def compute_loss_from_margins(
        self, margins: Tensor, rows: int = 1, global_rows: int = 1
    ) -> Tensor:
        return self.weight * attention_penalty(margins, self.tau) * (rows / global_rows)

    def forward(self, margins: Tensor, rows: int = 1, global_rows: int = 1) -> Tensor:
        return self.compute_loss_from_margins(margins, rows, global_rows)
