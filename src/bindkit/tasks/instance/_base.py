"""What the instance-retrieval tasks share: the query crop, the top of each ranking kept for the
per-query comparison, and the rule that mAP needs every image.

mAP over a database with holes would be a different benchmark, so a task whose images are not all
there scores nothing (after :func:`bindkit.tasks._images.present` has named the missing ones).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.tasks import _images
from bindkit.tasks.base import EvalContext, Task, TaskMetadata
from bindkit.tasks.instance._boxes import check_box, clip_box

TOP = 5  # candidates kept per query for the per-query comparison


def crop(path: Path, bbx: Any, where: str) -> Any:
    """The query image cropped to its box, as revisitop's examples do (PIL ``crop`` of the
    stored pixels: the box is in their coordinates, so no EXIF rotation first), the box clipped
    to the image (:mod:`bindkit.tasks.instance._boxes`); ``where`` names the query in an error."""
    from bindkit.embed.images import ImagePolicy, load_image

    picture = load_image(path, ImagePolicy(exif=False))
    return picture.crop(clip_box(check_box(np.ravel(bbx), where), picture.size, where))


def top(order: Sequence[Sequence[int]] | np.ndarray, names: Sequence[str]) -> list[list[str]]:
    """The names of the first :data:`TOP` candidates of each ranked row of database indices."""
    return [[names[i] for i in row[:TOP]] for row in order]


class InstanceTask(Task):
    """An instance-retrieval benchmark: image queries against an image database, scored by mAP
    (or a relative) only when every image is there."""

    metadata = TaskMetadata(name="_instance", description="", main_score="map")

    def all_present(
        self,
        names: Sequence[str],
        root: Path | None,
        where: str,
        ctx: EvalContext,
        fix: str | None = None,
    ) -> bool:
        """Whether every image in ``names`` is under ``root``; the missing ones are named (or,
        with ``--allow-missing-images``, noted) and then nothing is scored."""
        mask = _images.present(names, root, where, self.metadata.published, ctx, fix)
        if not mask.all():
            nothing_scored(where, ctx)
            return False
        return True


def nothing_scored(where: str, ctx: EvalContext) -> None:
    """The note of a task that needs every image and found some missing."""
    ctx.note(f"warning: {where}: mAP needs every image; nothing scored")
