"""Image files named by a benchmark's data, resolved lazily against an image root, and images
embedded in a parquet export, decoded."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.embed.images import ImageRef
from bindkit.errors import BindkitError, DataFormatError
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
    names: Sequence[str],
    root: Path | None,
    where: str,
    published: str,
    ctx: EvalContext,
    fix: str | None = None,
) -> np.ndarray:
    """A mask of the images that exist under ``root``; ``fix`` says how to get the missing ones
    (default: pass ``--image-root`` with where they are published).

    Raises:
        BindkitError: some are missing (the count and the first paths), unless
            ``ctx.allow_missing_images``: then one warning line names them and the task scores
            the rest (its result is marked partial), as the official scripts never do (they stop
            on a missing file).
    """
    if root is None:
        mask = np.zeros(len(names), bool)
    else:
        mask = np.array([(root / n).is_file() for n in names], bool)
    missing = int((~mask).sum())
    if missing:
        absent = [n for n, ok in zip(names, mask, strict=True) if not ok][:3]
        first = ", ".join(str(root / n) if root is not None else n for n in absent)
        if not ctx.allow_missing_images:
            raise BindkitError(
                f"{where}: {missing} of {len(names)} images missing (first: {first}); "
                f"{fix or f'pass --image-root with {published}'}, or pass "
                "--allow-missing-images to score the rest"
            )
        ctx.note(
            f"warning: {where}: {missing} of {len(names)} images missing (first: {first}); "
            "scoring the rest (--allow-missing-images): the result is marked partial"
        )
    return mask


def refs(names: Sequence[str], root: Path) -> list[ImageRef]:
    return [ImageRef(root / n) for n in names]


def decode_image(value: Any, where: str) -> Any:
    """A parquet image cell ({"bytes", "path"}) as a PIL image."""
    import io

    data = value.get("bytes") if isinstance(value, dict) else value
    if not isinstance(data, bytes | bytearray):
        raise DataFormatError(f"{where}: image cell holds no bytes; pass the file as published")
    from PIL import Image

    image = Image.open(io.BytesIO(data))
    image.load()
    return image
