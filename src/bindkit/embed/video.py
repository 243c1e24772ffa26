"""Video inputs: what a video is to an embedder, and the protocol of embedders that take them.

A video is a file (decoded by the backend) or a folder of frame images in name order (the way
MMEB-V2 releases its clips). Embedders that take videos list ``"video"`` in ``modalities`` and
implement :class:`VideoEmbedder`; the others are refused in one line by :func:`require_video`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from bindkit.embed.protocol import Role
from bindkit.errors import BindkitError


@dataclass(frozen=True)
class VideoRef:
    """A video file, or a folder whose image files are the frames in name order."""

    path: Path


VideoInput = str | Path | VideoRef


def as_video_ref(video: VideoInput) -> VideoRef:
    return video if isinstance(video, VideoRef) else VideoRef(Path(video))


@runtime_checkable
class VideoEmbedder(Protocol):
    """An embedder that also maps videos to float32, L2-normalised vectors."""

    def embed_videos(
        self,
        videos: Sequence[VideoInput],
        *,
        role: Role = "query",
        instruction: str | None = None,
    ) -> np.ndarray: ...


def require_video(embedder: object, where: str) -> VideoEmbedder:
    """``embedder`` as a :class:`VideoEmbedder`, or a one-line error naming ``where``."""
    modalities: frozenset[str] = getattr(embedder, "modalities", frozenset())
    if "video" not in modalities or not isinstance(embedder, VideoEmbedder):
        name = getattr(embedder, "spec", type(embedder).__name__)
        raise BindkitError(
            f"{where}: {name} does not embed videos; use an mllm: model "
            "(Qwen2-VL, Qwen2.5-VL, Qwen3-VL, GME, VLM2Vec, Qwen3-VL-Embedding)"
        )
    return embedder
