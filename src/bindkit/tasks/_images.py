"""Image files named by a benchmark's data, resolved lazily against an image root."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bindkit.embed.images import ImageRef
from bindkit.tasks.base import EvalContext


def image_root(data: Path | None, given: Path | None) -> Path | None:
    """``--image-root`` if given, else ``DATA/images`` (or ``DATA/../images`` for a file)."""
    if given is not None:
        return given
    if data is None:
        return None
    base = data if data.is_dir() else data.parent
    return base / "images"


def present(
    names: Sequence[str], root: Path | None, where: str, published: str, ctx: EvalContext
) -> np.ndarray:
    """A mask of the images that exist under ``root``; one warning line names the missing ones."""
    if root is None:
        mask = np.zeros(len(names), bool)
    else:
        mask = np.array([(root / n).is_file() for n in names], bool)
    missing = int((~mask).sum())
    if missing:
        first = next(n for n, ok in zip(names, mask, strict=True) if not ok)
        expected = f"{root / first}" if root is not None else first
        ctx.note(
            f"warning: {where}: {missing} of {len(names)} images missing (e.g. {expected}); "
            f"pass --image-root with {published}; scoring the rest"
        )
    return mask


def refs(names: Sequence[str], root: Path) -> list[ImageRef]:
    return [ImageRef(root / n) for n in names]
