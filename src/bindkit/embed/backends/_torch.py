"""The differentiable path shared by the torch backends: ``collate`` then ``forward``.

Evaluation and training run the same two steps, so they can never disagree on prompts,
tokenisation or pooling: ``_encode_*`` is ``forward(collate(...))`` under ``inference_mode``; a
trainer calls the same pair with gradients on (as sentence-transformers separates ``tokenize``
from ``forward``).
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from bindkit.embed.base import BaseEmbedder
from bindkit.embed.protocol import Modality, Role


class TorchEmbedder(BaseEmbedder):
    """A :class:`BaseEmbedder` whose batches go through :meth:`collate` and :meth:`forward`.

    Subclasses set ``self.model`` and ``self.device`` and implement both steps.
    """

    device: str
    model: Any

    @property
    def module(self) -> Any:
        """The ``torch.nn.Module`` holding the weights (LoRA adapters are injected here)."""
        return self.model

    @abstractmethod
    def collate(
        self,
        inputs: Sequence[Any],
        *,
        modality: Modality,
        role: Role,
        instruction: str | None,
    ) -> dict[str, Any]:
        """Inputs (texts, or loaded RGB images) → the model's batch, on :attr:`device`.

        Applies exactly the prompt and preprocessing that evaluation uses for this role and
        instruction; no gradients are involved.
        """

    @abstractmethod
    def forward(self, batch: dict[str, Any]) -> Any:
        """A collated batch → pooled, L2-normalised embeddings (a differentiable tensor)."""

    def suggested_batch_size(self) -> int:
        return default_batch_size(self.device, self.module)

    def _encode(
        self, modality: Modality, inputs: list[Any], role: Role, instruction: str | None
    ) -> np.ndarray:
        import torch

        with torch.inference_mode():
            vectors = self.forward(
                self.collate(inputs, modality=modality, role=role, instruction=instruction)
            )
        return np.asarray(vectors.float().cpu().numpy(), dtype=np.float32)

    def _encode_texts(self, texts: list[str], role: Role, instruction: str | None) -> np.ndarray:
        return self._encode("text", texts, role, instruction)

    def _encode_images(self, images: list[Any], role: Role, instruction: str | None) -> np.ndarray:
        return self._encode("image", images, role, instruction)

    def _encode_videos(self, videos: list[Any], role: Role, instruction: str | None) -> np.ndarray:
        return self._encode("video", videos, role, instruction)


def normalize(vectors: Any) -> Any:
    """L2-normalise rows of a tensor (differentiable)."""
    import torch

    return torch.nn.functional.normalize(vectors, p=2, dim=-1)


def default_batch_size(device: str, module: Any) -> int:
    """Inputs per batch when the caller gives none: 32 on a CPU; on an accelerator, larger for
    smaller models (sentence-transformers' own best on a GPU is 128-512 for MiniLM-size
    encoders). Out-of-memory errors still halve it on the way."""
    if not str(device).startswith(("cuda", "mps", "xpu")):
        return 32
    try:
        parameters = sum(int(p.numel()) for p in module.parameters())
    except (AttributeError, TypeError):
        return 32
    for limit, size in ((150_000_000, 256), (600_000_000, 128), (3_000_000_000, 32)):
        if parameters < limit:
            return size
    return 8
