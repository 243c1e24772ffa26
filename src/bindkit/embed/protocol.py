"""The one interface every model family implements: texts and images in, unit vectors out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from bindkit.embed.images import ImageInput

Role = Literal["query", "document"]
Modality = Literal["text", "image", "video"]
ROLES: tuple[Role, ...] = ("query", "document")


@runtime_checkable
class Embedder(Protocol):
    """Maps texts and images to float32, L2-normalised vectors; cosine similarity is a dot product.

    ``role`` says which side of a retrieval pair an input is on; models with asymmetric prompts
    (instructions on queries only, say) use it, others ignore it. ``instruction`` overrides the
    model's default task instruction.
    """

    @property
    def modalities(self) -> frozenset[Modality]: ...

    @property
    def fingerprint(self) -> str:
        """Short hash of everything that changes an embedding except role and instruction
        (model id, weights, adapter, pooling, prompt layout, preprocessing)."""
        ...

    def describe(self) -> dict[str, Any]:
        """The fields the fingerprint hashes, for result files."""
        ...

    def embed_texts(
        self, texts: Sequence[str], *, role: Role = "query", instruction: str | None = None
    ) -> np.ndarray: ...

    def embed_images(
        self,
        images: Sequence[ImageInput],
        *,
        role: Role = "query",
        instruction: str | None = None,
    ) -> np.ndarray: ...
