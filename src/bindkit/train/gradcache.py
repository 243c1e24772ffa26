"""GradCache (Gao et al. 2021, luyug/GradCache): a contrastive batch larger than memory.

1. Embed every chunk without gradients, remembering each chunk's RNG state (dropout).
2. Compute the full-batch loss on detached embeddings and backpropagate to them: ∂L/∂e.
3. Re-embed each chunk with gradients under its saved RNG state and backpropagate
   ``Σ e·∂L/∂e``, which gives each chunk's share of the full-batch parameter gradient.

The parameter gradients equal those of one full-batch backward (tested); peak activation memory
is that of one chunk. Under DDP, gradient sync runs on the last chunk only (``no_sync``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any


class RandState:
    """The CPU and CUDA RNG states at construction; ``with state:`` replays from them."""

    def __init__(self) -> None:
        import torch

        self.cpu = torch.get_rng_state()
        self.cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    @contextlib.contextmanager
    def replay(self) -> Iterator[None]:
        import torch

        devices = list(range(len(self.cuda))) if self.cuda is not None else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(self.cpu)
            if self.cuda is not None:
                torch.cuda.set_rng_state_all(self.cuda)
            yield


def split_batch(batch: Any, size: int) -> list[Any]:
    """Split a tensor, or a mapping of tensors (and lists) with a shared first dimension."""
    if isinstance(batch, Mapping):
        n = len(next(iter(batch.values())))
        return [{k: v[s : s + size] for k, v in batch.items()} for s in range(0, n, size)]
    return [batch[s : s + size] for s in range(0, len(batch), size)]


@dataclass
class GradCache:
    """One optimisation step's backward over large contrastive batches, chunk by chunk.

    Attributes:
        chunk_size: inputs per forward pass with gradients.
        no_sync: a context-manager factory that suspends gradient sync (``lambda:
            accelerator.no_sync(model)``); entered for every chunk but the last.
    """

    chunk_size: int
    no_sync: Callable[[], contextlib.AbstractContextManager[Any]] | None = None

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1, got {self.chunk_size}")

    def backward(
        self,
        encoders: Sequence[Callable[[Any], Any]],
        batches: Sequence[Any],
        loss_fn: Callable[..., Any],
    ) -> Any:
        """Accumulate parameter gradients of ``loss_fn(*embeddings)``; return the loss (detached).

        Args:
            encoders: one per side (e.g. query and document encoders of the same model).
            batches: one collated batch per side (a tensor, or a mapping of tensors).
            loss_fn: the full-batch loss of the embeddings of every side, in order.
        """
        if len(encoders) != len(batches):
            raise ValueError("need one encoder per batch")
        chunks = [split_batch(b, self.chunk_size) for b in batches]
        loss, _ = self.backward_chunks(encoders, chunks, loss_fn)
        return loss

    def backward_chunks(
        self,
        encoders: Sequence[Callable[[Any], Any]],
        chunks: Sequence[Sequence[Any]],
        loss_fn: Callable[..., Any],
    ) -> tuple[Any, list[Any]]:
        """:meth:`backward` over inputs already cut into chunks (e.g. collated ahead).

        Returns:
            The loss and each side's full embeddings, both detached.
        """
        import torch

        if len(encoders) != len(chunks):
            raise ValueError("need one encoder per side")
        states: list[list[RandState]] = []
        cached = []
        with torch.no_grad():
            for encode, side in zip(encoders, chunks, strict=True):
                side_states = []
                reps = []
                for chunk in side:
                    side_states.append(RandState())
                    reps.append(encode(chunk))
                states.append(side_states)
                cached.append(torch.cat(reps))
        leaves = [rep.detach().requires_grad_() for rep in cached]
        loss = loss_fn(*leaves)
        loss.backward()
        grads = [leaf.grad for leaf in leaves]

        total = sum(len(side) for side in chunks)
        done = 0
        for encode, side, side_states, grad in zip(encoders, chunks, states, grads, strict=True):
            start = 0
            for chunk, state in zip(side, side_states, strict=True):
                done += 1
                sync = done == total or self.no_sync is None
                with state.replay(), contextlib.nullcontext() if sync else self.no_sync():  # type: ignore[misc]
                    rep = encode(chunk)
                    part = grad[start : start + len(rep)]
                    torch.dot(rep.flatten(), part.flatten()).backward()
                start += len(rep)
        return loss.detach(), [leaf.detach() for leaf in leaves]
