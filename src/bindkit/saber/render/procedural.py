"""The procedural renderer: CLEVR-like scenes drawn with numpy, bindings correct by construction.

Objects of the shapes vocabulary (``--vocab shapes``) are scattered without overlap on a neutral
gray floor (a jittered grid: one object per randomly chosen cell), each with a soft contact
shadow, simple shading, and the surface of its realised attribute. A scene depends only on the
item (its bindings, realisations and id) and the seed, so renders are reproducible anywhere.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from bindkit.errors import BindkitError
from bindkit.saber.io import MCQ, Item
from bindkit.saber.render import materials, shapes

_SIZE_STEPS = 4  # object sizes are quantised so sprites can be cached


@lru_cache(maxsize=8)
def _background(width: int, height: int) -> np.ndarray:
    """Neutral gray studio floor: lighter at the back, a soft vignette."""
    y = np.linspace(0, 1, height, dtype=np.float32)[:, None]
    x = np.linspace(-1, 1, width, dtype=np.float32)[None, :]
    tone = 0.6 - 0.13 * y - 0.05 * x * x
    return np.repeat(np.broadcast_to(tone, (height, width))[..., None], 3, axis=2).copy()


@lru_cache(maxsize=64)
def _blurred_disc(width: int, height: int, blur: float) -> np.ndarray:
    """A soft elliptical blob (shadows and glows), peak 1."""
    from PIL import Image, ImageDraw, ImageFilter

    pad = math.ceil(blur * 2)
    canvas = Image.new("L", (width + 2 * pad, height + 2 * pad), 0)
    ImageDraw.Draw(canvas).ellipse((pad, pad, pad + width, pad + height), fill=255)
    soft = canvas.filter(ImageFilter.GaussianBlur(blur))
    return np.asarray(soft, dtype=np.float32) / 255.0


@lru_cache(maxsize=2048)
def _sprite(shape: str, size: int, attribute: str, slots: tuple[tuple[str, str], ...]) -> Any:
    return materials.paint(shapes.geometry(shape, size), attribute, dict(slots))


def _add(canvas: np.ndarray, layer: np.ndarray, top: int, left: int, op: str) -> None:
    """Blend ``layer`` into ``canvas`` at (top, left), clipped at the borders."""
    h, w = layer.shape[:2]
    y0, x0 = max(top, 0), max(left, 0)
    y1, x1 = min(top + h, canvas.shape[0]), min(left + w, canvas.shape[1])
    if y0 >= y1 or x0 >= x1:
        return
    part = layer[y0 - top : y1 - top, x0 - left : x1 - left]
    region = canvas[y0:y1, x0:x1]
    if op == "shadow":
        region *= 1 - part[..., None]
    else:
        region += part


@dataclass(frozen=True)
class Placement:
    shape: str
    attribute: str
    slots: tuple[tuple[str, str], ...]
    left: int
    top: int
    size: int


def layout(
    objects: Sequence[tuple[str, str, Mapping[str, str]]],
    width: int,
    height: int,
    rng: np.random.Generator,
) -> list[Placement]:
    """Scatter (shape, attribute, slots) triples without overlap: each object gets its own cell
    of a grid with at least as many cells as objects, jittered inside it."""
    n = len(objects)
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    if rows * cols < n + 1 and n > 1:
        rows += 1  # a spare cell keeps the layout from filling a fixed pattern
    floor_top = int(height * 0.1)
    cell_w, cell_h = width / cols, (height - floor_top) / rows
    full = min(cell_w, cell_h) * 0.86
    full = min(full, width * 0.34)
    cells = rng.choice(rows * cols, size=n, replace=False)
    out = []
    for (shape, attribute, slots), cell in zip(objects, cells, strict=True):
        row, col = divmod(int(cell), cols)
        # objects further back are smaller: a hint of depth
        depth = 0.84 + 0.16 * (row + 0.5) / rows
        step = round(depth * _SIZE_STEPS) / _SIZE_STEPS
        size = max(12, int(full * step))
        slack_x, slack_y = max(cell_w - size, 0), max(cell_h - size, 0)
        left = int(col * cell_w + rng.random() * slack_x)
        top = int(floor_top + row * cell_h + rng.random() * slack_y)
        out.append(Placement(shape, attribute, tuple(sorted(slots.items())), left, top, size))
    return out


def draw_scene(placements: Sequence[Placement], width: int, height: int) -> np.ndarray:
    """Composite placements (back to front) into an RGB uint8 array."""
    canvas = _background(width, height).copy()
    ordered = sorted(placements, key=lambda p: p.top + p.size)
    for p in ordered:  # shadows first: they lie on the floor under everything
        blob = _blurred_disc(int(p.size * 0.95), max(4, int(p.size * 0.3)), p.size * 0.06)
        pad = (blob.shape[1] - int(p.size * 0.95)) // 2
        _add(
            canvas,
            blob * 0.5,
            p.top + int(p.size * 0.8) - pad,
            p.left + int(p.size * 0.12) - pad,
            "shadow",
        )
    for p in ordered:
        sprite = _sprite(p.shape, p.size, p.attribute, p.slots)
        if sprite.glow is not None:
            halo = _blurred_disc(int(p.size * 1.2), int(p.size * 1.2), p.size * 0.14)
            offset = (halo.shape[0] - p.size) // 2
            _add(
                canvas, halo[..., None] * sprite.glow * 0.4, p.top - offset, p.left - offset, "add"
            )
        h, w = sprite.alpha.shape
        region = canvas[p.top : p.top + h, p.left : p.left + w]
        a = sprite.alpha[: region.shape[0], : region.shape[1], None]
        region *= 1 - a
        region += sprite.rgb[: region.shape[0], : region.shape[1]]
    result: np.ndarray = (np.clip(canvas, 0, 1) * 255 + 0.5).astype(np.uint8)
    return result


def item_seed_key(seed: int, item_id: str, variant: int = 0) -> bytes:
    """What a backend seeds an item's draw with: the seed, the item and its redo counter (a
    first draw keeps the key of renders made before the counter existed)."""
    key = f"{seed}/{item_id}" if variant == 0 else f"{seed}/{item_id}/redo-{variant}"
    return hashlib.sha256(key.encode()).digest()


def _item_rng(seed: int, item_id: str, variant: int = 0) -> np.random.Generator:
    digest = item_seed_key(seed, item_id, variant)
    return np.random.default_rng(int.from_bytes(digest[:8], "little"))


@dataclass(frozen=True)
class ProceduralBackend:
    """Deterministic CPU renderer for the shapes vocabulary (no model, PIL + numpy).

    Attributes:
        size: Width and height in pixels.
        seed: Seed of the layout; equal seeds give identical pixels.
    """

    size: int = 256
    seed: int = 0
    name: str = "procedural"
    parallel: str = "process"

    def __post_init__(self) -> None:
        if not 64 <= self.size <= 4096:
            raise BindkitError(f"--size {self.size}: the procedural renderer needs 64..4096 pixels")

    def describe(self) -> dict[str, Any]:
        return {
            "backend": self.name,
            "model": None,
            "options": {"size": self.size, "seed": self.seed},
        }

    def check(self, mcqs: Sequence[MCQ]) -> None:
        """Raise a one-line error unless every object and attribute can be drawn."""
        import importlib.util

        if importlib.util.find_spec("PIL") is None:
            raise BindkitError("--backend procedural needs Pillow; pip install 'bindkit[render]'")
        for mcq in mcqs:
            for item in mcq.items:
                for attribute, obj in item.bindings:
                    if obj not in shapes.SHAPES:
                        raise BindkitError(
                            f"{item.id}: object {obj!r} cannot be drawn procedurally; generate "
                            "the set with `bindkit saber generate --vocab shapes` or use "
                            "--backend diffusers/openai"
                        )
                    if attribute not in materials.PAINTS:
                        raise BindkitError(
                            f"{item.id}: attribute {attribute!r} cannot be drawn procedurally; "
                            "generate the set with `bindkit saber generate --vocab shapes`"
                        )

    def render(self, item: Item, mcq: MCQ, variant: int = 0) -> Any:
        """The item's scene as a PIL image (not yet flipped); ``variant`` > 0 (a redo) draws
        another layout of the same scene."""
        from PIL import Image

        objects = [(obj, attr, mcq.realizations[attr].slots) for attr, obj in item.bindings]
        rng = _item_rng(self.seed, item.id, variant)
        placements = layout(objects, self.size, self.size, rng)
        return Image.fromarray(draw_scene(placements, self.size, self.size), "RGB")
