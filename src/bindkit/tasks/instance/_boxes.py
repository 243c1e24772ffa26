"""Query boxes of the instance-retrieval tasks (Oxford5K, Paris6K, Sculptures6k, the revisited
sets, INSTRE, ILIAS): checked when the ground truth is read, before any model loads, and clipped
to the image when cut.

A box is ``(x1, y1, x2, y2)`` in the stored pixels, cut with PIL's ``crop`` as revisitop's
``example_process_images.py`` does (its corners rounded to whole pixels, the right and bottom
edges excluded). Where a box reaches past the image, revisitop's Python example lets PIL pad it
with black, while its MATLAB ``crop_qim.m`` and ILIAS' ``_crop_resize`` (numpy slicing) stop at
the edge; the box is clipped to the image here, as those two do, so no black band is embedded.
Inside the image the pixels are PIL's. A box that is not four finite numbers, is inverted
(``x1 > x2`` or ``y1 > y2``), holds no pixel, or lies wholly outside its image is refused in one
line naming the query: there is nothing to embed, and a black or empty crop scored as a query
would be a silent wrong result.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from bindkit.errors import DataFormatError

Box = tuple[float, float, float, float]
EXIF_SWAPS = {5, 6, 7, 8}  # EXIF orientations that turn the picture a quarter
FIX = "fix that box or download the ground truth again"


def _show(box: Sequence[float]) -> str:
    return " ".join(f"{v:g}" for v in box)


def check_box(box: Iterable[Any], where: str) -> Box:
    """``box`` as four floats if it can hold a pixel of some image, else a one-line error.

    ``where`` names the query and its file, e.g. ``gt/all_souls_1_query.txt: query
    all_souls_1``; the error says what to do about the box."""
    try:
        values = [float(v) for v in box]
    except (TypeError, ValueError):
        values = []
    if len(values) != 4:
        raise DataFormatError(
            f"{where}: the box is not four numbers x1 y1 x2 y2; download the ground truth again"
        )
    x1, y1, x2, y2 = values
    if not all(math.isfinite(v) for v in values):
        raise DataFormatError(f"{where}: box {_show(values)} is not finite; {FIX}")
    if x2 < x1 or y2 < y1:
        raise DataFormatError(
            f"{where}: box {_show(values)} is inverted (x1 > x2 or y1 > y2); {FIX}"
        )
    if round(x2) <= round(x1) or round(y2) <= round(y1):
        raise DataFormatError(f"{where}: box {_show(values)} holds no pixel; {FIX}")
    if round(x2) <= 0 or round(y2) <= 0:
        raise DataFormatError(
            f"{where}: box {_show(values)} lies wholly outside the image (left of or above it); "
            f"{FIX}"
        )
    return x1, y1, x2, y2


def clip_box(box: Box, size: tuple[int, int], where: str, fix: str = FIX) -> Box:
    """``box`` clipped to an image of ``size`` (width, height), as revisitop's ``crop_qim.m`` and
    ILIAS' slicing stop at the edge; a one-line error when nothing of it is inside."""
    width, height = size
    x1, y1, x2, y2 = box
    clipped = (max(x1, 0.0), max(y1, 0.0), min(x2, float(width)), min(y2, float(height)))
    if round(clipped[2]) <= round(clipped[0]) or round(clipped[3]) <= round(clipped[1]):
        raise DataFormatError(
            f"{where}: box {_show(box)} lies wholly outside its {width}x{height} image; {fix}"
        )
    return clipped


def image_size(path: Path, exif: bool) -> tuple[int, int] | None:
    """(width, height) from the file's header (after the EXIF orientation when ``exif``), or
    None when it is missing or unreadable: the tasks' own checks name those files."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as handle:
            width, height = handle.size
            turned = exif and handle.getexif().get(0x0112) in EXIF_SWAPS
    except (UnidentifiedImageError, OSError, ValueError):
        return None
    return (height, width) if turned else (width, height)


def check_inside(box: Box, path: Path, exif: bool, where: str, fix: str = FIX) -> None:
    """Refuse ``box`` now if it lies wholly outside the image at ``path`` (when readable)."""
    size = image_size(path, exif)
    if size is not None:
        clip_box(box, size, where, fix)
