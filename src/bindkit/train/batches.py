"""Inputs of one micro-batch, collated ahead of the step and embedded through the embedder.

A side of a batch (the queries, the documents) is a list of :data:`Item`; :func:`prepare` cuts
it into chunks (one chunk, or GradCache's) and collates each chunk with the embedder's own
``collate``, one call per (modality, instruction) group so the prompts are exactly evaluation's.
It runs on the prefetch thread (tokenisers and image decoding release the GIL).
:func:`encode` runs the forward passes of a chunk and returns its embeddings in item order.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Item = tuple[str, str, str | None]  # (modality, text or image path, instruction)


@dataclass
class Chunk:
    """Collated inputs of consecutive items: ``groups`` holds (item positions, batch) pairs."""

    groups: list[tuple[list[int], Any]]
    size: int


def text_items(texts: Sequence[str], instruction: str | None = None) -> list[Item]:
    return [("text", text, instruction) for text in texts]


def item(value: str, instruction: str | None, base: Path) -> Item:
    """A text, or an image when ``value`` names an image file (relative to ``base``)."""
    from bindkit.embed.images import IMAGE_SUFFIXES

    if Path(value).suffix.lower() in IMAGE_SUFFIXES:
        path = Path(value) if Path(value).is_absolute() else base / value
        return ("image", str(path), instruction)
    return ("text", value, instruction)


def prepare(embedder: Any, items: Sequence[Item], role: str, chunk_size: int = 0) -> list[Chunk]:
    """Collate ``items`` in chunks of ``chunk_size`` (0: one chunk)."""
    size = chunk_size or max(len(items), 1)
    return [_collate(embedder, items[s : s + size], role) for s in range(0, len(items), size)]


def _collate(embedder: Any, items: Sequence[Item], role: str) -> Chunk:
    from bindkit.embed.images import load_image

    groups: dict[tuple[str, str | None], list[int]] = {}
    for i, (modality, _, instruction) in enumerate(items):
        groups.setdefault((modality, instruction), []).append(i)
    collated = []
    for (modality, instruction), positions in groups.items():
        values = [items[i][1] for i in positions]
        inputs = values if modality == "text" else [load_image(v) for v in values]
        batch = embedder.collate(inputs, modality=modality, role=role, instruction=instruction)
        collated.append((positions, batch))
    return Chunk(collated, len(items))


def encode(embedder: Any, chunk: Chunk) -> Any:
    """The embeddings (with gradients when enabled) of a chunk's items, in item order."""
    import torch

    if len(chunk.groups) == 1:
        return embedder.forward(chunk.groups[0][1]).float()
    parts = [embedder.forward(batch).float() for _, batch in chunk.groups]
    order = torch.tensor([i for positions, _ in chunk.groups for i in positions])
    stacked = torch.cat(parts)
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(len(order))
    return stacked[inverse.to(stacked.device)]
