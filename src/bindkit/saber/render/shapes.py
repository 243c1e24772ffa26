"""Geometry of the procedural renderer's objects: per-pixel coverage, surface normal and surface
coordinates of each shape on a square sprite, seen from slightly above.

Every shape is a pure function of the sprite size. Coordinates run over [-1, 1] with y pointing
down and z towards the viewer; ``u`` and ``v`` are surface coordinates in about [0, 1] that
materials use for stripes, checks, dots and grain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

SUPERSAMPLE = 3  # geometry is computed at 3x and box-filtered: smooth edges without a renderer


@dataclass(frozen=True)
class Geometry:
    """One shape on a ``size`` x ``size`` sprite (float32 arrays of that shape)."""

    alpha: np.ndarray  # coverage in [0, 1]
    normal: np.ndarray  # (3, size, size), unit length where covered
    u: np.ndarray
    v: np.ndarray


_Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
Builder = Callable[[np.ndarray, np.ndarray], _Arrays]  # X, Y -> mask, nx, ny, nz, u, v


def _normalize(nx: np.ndarray, ny: np.ndarray, nz: np.ndarray) -> tuple[np.ndarray, ...]:
    norm = np.sqrt(nx * nx + ny * ny + nz * nz) + 1e-9
    return nx / norm, ny / norm, nz / norm


def _empty(x: np.ndarray) -> _Arrays:
    z = np.zeros_like(x)
    return z.astype(bool), z.copy(), z.copy(), z.copy(), z.copy(), z.copy()


def _paint(out: _Arrays, mask: np.ndarray, normal: Sequence[Any], u: Any, v: Any) -> None:
    """Painter's algorithm: later faces overwrite earlier ones where ``mask`` holds."""
    fields = (*normal, u, v)
    out[0][mask] = True
    for target, value in zip(out[1:], fields, strict=True):
        target[mask] = np.broadcast_to(value, mask.shape)[mask]


def _face(
    x: np.ndarray,
    y: np.ndarray,
    origin: tuple[float, float],
    a: tuple[float, float],
    b: tuple[float, float],
    triangle: bool = False,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Parallelogram (or triangle) ``origin + s*a + t*b``: mask and (s, t) surface coordinates."""
    det = a[0] * b[1] - a[1] * b[0]
    px, py = x - origin[0], y - origin[1]
    s = (px * b[1] - py * b[0]) / det
    t = (a[0] * py - a[1] * px) / det
    mask = (s >= 0) & (t >= 0) & ((s + t <= 1) if triangle else ((s <= 1) & (t <= 1)))
    return mask, s, t


def _polygon_mask(
    x: np.ndarray, y: np.ndarray, points: Sequence[tuple[float, float]]
) -> np.ndarray:
    """Even-odd point-in-polygon test on the grid."""
    inside = np.zeros(x.shape, dtype=bool)
    n = len(points)
    for i in range(n):
        x1, y1 = points[i]
        x2, y2 = points[(i + 1) % n]
        if y1 == y2:
            continue
        crosses = (y1 > y) != (y2 > y)
        at = x1 + (y - y1) * (x2 - x1) / (y2 - y1)
        inside ^= crosses & (x < at)
    return inside


def _extruded(front: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Builder:
    """A flat 2D outline given thickness: a dark side band below-right of a lit front face."""

    def build(x: np.ndarray, y: np.ndarray) -> _Arrays:
        out = _empty(x)
        depth = 0.14
        steps = 6
        for k in range(steps, 0, -1):
            d = depth * k / steps
            side = front((x + 0.12 - d) / 0.88, (y + 0.12 - d) / 0.88)
            _paint(out, side, (0.55, 0.55, 0.35), (x + 1) / 2, (y + 1) / 2)
        face = front((x + 0.12) / 0.88, (y + 0.12) / 0.88)
        # a faint dome keeps the face from looking like a paper cut-out
        nx, ny, nz = _normalize(-0.12 * x, -0.12 * y, np.ones_like(x))
        _paint(out, face, (nx, ny, nz), (x + 1) / 2, (y + 1) / 2)
        return out

    return build


def _sphere(x: np.ndarray, y: np.ndarray) -> _Arrays:
    r = 0.92
    r2 = (x * x + y * y) / (r * r)
    mask = r2 < 1
    nz = np.sqrt(np.clip(1 - r2, 0, 1))
    nx, ny = x / r, y / r
    u = np.arctan2(nx, nz) / np.pi + 0.5
    v = np.arcsin(np.clip(ny, -1, 1)) / np.pi + 0.5
    out = _empty(x)
    _paint(out, mask, (nx, ny, nz), u, v)
    return out


def _cube(x: np.ndarray, y: np.ndarray) -> _Arrays:
    out = _empty(x)
    # front square, top and right faces in an oblique view from above-left
    depth = (0.42, -0.36)
    front = (-0.9, -0.5), (1.3, 0.0), (0.0, 1.35)
    m, s, t = _face(x, y, *front)
    _paint(out, m, _normalize(*np.array([-0.05, 0.05, 1.0])[:, None, None]), s, t)
    m, s, t = _face(x, y, (-0.9, -0.5), (1.3, 0.0), depth)
    _paint(out, m, _normalize(*np.array([0.0, -1.0, 0.35])[:, None, None]), s, t)
    m, s, t = _face(x, y, (0.4, -0.5), depth, (0.0, 1.35))
    _paint(out, m, _normalize(*np.array([1.0, 0.0, 0.25])[:, None, None]), s, t)
    return out


def _cylinder(x: np.ndarray, y: np.ndarray) -> _Arrays:
    out = _empty(x)
    rx, ry, top, bottom = 0.72, 0.24, -0.66, 0.68
    cx = np.clip(x / rx, -1, 1)
    body = (np.abs(x) <= rx) & (y >= top) & (y <= bottom + ry * np.sqrt(1 - cx * cx))
    nx, ny, nz = _normalize(cx, np.zeros_like(x), np.sqrt(1 - cx * cx))
    _paint(out, body, (nx, ny, nz), np.arcsin(cx) / np.pi + 0.5, (y - top) / (bottom - top))
    cap = (x / rx) ** 2 + ((y - top) / ry) ** 2 <= 1
    _paint(out, cap, _normalize(*np.array([0.0, -1.0, 0.3])[:, None, None]), (x + 1) / 2, y - top)
    return out


def _cone(x: np.ndarray, y: np.ndarray) -> _Arrays:
    out = _empty(x)
    apex, base, rx, ry = -0.92, 0.66, 0.78, 0.24
    frac = np.clip((y - apex) / (base - apex), 1e-3, 1)
    half = rx * frac
    cx = np.clip(x / half, -1, 1)
    body = ((np.abs(x) <= half) & (y >= apex) & (y <= base)) | (
        (y > base) & ((x / rx) ** 2 + ((y - base) / ry) ** 2 <= 1)
    )
    nx, ny, nz = _normalize(cx, np.full_like(x, -0.45), np.sqrt(1 - cx * cx))
    _paint(out, body, (nx, ny, nz), np.arcsin(cx) / np.pi + 0.5, frac)
    return out


def _pyramid(x: np.ndarray, y: np.ndarray) -> _Arrays:
    out = _empty(x)
    apex, left, front, right = (0.0, -0.95), (-0.92, 0.5), (-0.05, 0.85), (0.9, 0.42)
    for a, b, normal in (
        (left, front, (-0.35, -0.25, 1.0)),
        (front, right, (0.95, -0.2, 0.45)),
    ):
        m, s, t = _face(
            x, y, apex, (a[0] - apex[0], a[1] - apex[1]), (b[0] - apex[0], b[1] - apex[1]), True
        )
        _paint(out, m, _normalize(*np.array(normal)[:, None, None]), s + 0.5 * t, s + t)
    return out


def _ring_like(rx: float, ry: float, tube: float) -> Builder:
    def build(x: np.ndarray, y: np.ndarray) -> _Arrays:
        out = _empty(x)
        ex, ey = x / rx, y / ry
        rho = np.sqrt(ex * ex + ey * ey) + 1e-9
        d = (rho - 1) * min(rx, ry) / tube
        mask = np.abs(d) < 1
        dz = np.sqrt(np.clip(1 - d * d, 0, 1))
        nx, ny, nz = _normalize(d * ex / rho, d * ey / rho, dz)
        _paint(out, mask, (nx, ny, nz), np.arctan2(ey, ex) / (2 * np.pi) + 0.5, (d + 1) / 2)
        return out

    return build


def _capsule(x: np.ndarray, y: np.ndarray) -> _Arrays:
    out = _empty(x)
    # a pill lying diagonally: distance to a segment, shaded as a tube
    ax, ay, bx, by, r = -0.5, 0.35, 0.5, -0.35, 0.42
    dx, dy = bx - ax, by - ay
    t = np.clip(((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy), 0, 1)
    px, py = x - (ax + t * dx), y - (ay + t * dy)
    dist = np.sqrt(px * px + py * py)
    mask = dist < r
    nz = np.sqrt(np.clip(1 - (dist / r) ** 2, 0, 1))
    nx, ny, nz = _normalize(px / r, py / r, nz)
    _paint(out, mask, (nx, ny, nz), t, (px * -dy + py * dx) / (2 * r) + 0.5)
    return out


def _diamond(x: np.ndarray, y: np.ndarray) -> _Arrays:
    out = _empty(x)
    top, right, bottom, left, mid = (
        (0.0, -0.95),
        (0.72, -0.1),
        (0.0, 0.95),
        (-0.72, -0.1),
        (0.12, -0.05),
    )
    facets = (
        (top, left, (-0.6, -0.6, 0.55)),
        (top, right, (0.5, -0.7, 0.5)),
        (bottom, left, (-0.55, 0.35, 0.75)),
        (bottom, right, (0.7, 0.35, 0.6)),
    )
    for a, b, normal in facets:
        m, s, t = _face(
            x, y, mid, (a[0] - mid[0], a[1] - mid[1]), (b[0] - mid[0], b[1] - mid[1]), True
        )
        _paint(out, m, _normalize(*np.array(normal)[:, None, None]), s, t)
    return out


def _prism(x: np.ndarray, y: np.ndarray) -> _Arrays:
    """A standing hexagonal prism: three visible side faces and the top."""
    out = _empty(x)
    rx, ry, top, height = 0.78, 0.3, -0.6, 1.25
    angles = np.deg2rad([0, 60, 120, 180, 240, 300])
    corners = [(rx * np.cos(a), top + ry * np.sin(a)) for a in angles]
    for i in (0, 1, 2):  # the faces between corners 0-1, 1-2, 2-3 face the viewer
        a, b = corners[i], corners[i + 1]
        m, s, t = _face(x, y, a, (b[0] - a[0], b[1] - a[1]), (0.0, height))
        mid = (angles[i] + angles[i + 1]) / 2
        normal = np.array([np.cos(mid), 0.0, np.sin(mid) + 0.2])[:, None, None]
        _paint(out, m, _normalize(*normal), (i + s) / 3, t)
    cap = _polygon_mask(x, y, corners)
    _paint(
        out, cap, _normalize(*np.array([0.0, -1.0, 0.3])[:, None, None]), (x + 1) / 2, (y + 1) / 2
    )
    return out


def _star(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    points = []
    for k in range(10):
        radius = 0.95 if k % 2 == 0 else 0.4
        angle = -np.pi / 2 + k * np.pi / 5
        points.append((radius * np.cos(angle), radius * np.sin(angle) + 0.08))
    return _polygon_mask(x, y, points)


def _heart(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    hx, hy = x * 1.2, -(y * 1.2 - 0.15)
    return (hx * hx + hy * hy - 1) ** 3 - hx * hx * hy**3 <= 0


def _crescent(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    result: np.ndarray = (x * x + y * y < 0.9) & ((x - 0.42) ** 2 + (y + 0.18) ** 2 > 0.55)
    return result


def _cross(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    result: np.ndarray = ((np.abs(x) < 0.3) & (np.abs(y) < 0.92)) | (
        (np.abs(y + 0.15) < 0.3) & (np.abs(x) < 0.8)
    )
    return result


def _arrow(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return _polygon_mask(
        x,
        y,
        [
            (-0.92, -0.22),
            (0.15, -0.22),
            (0.15, -0.62),
            (0.95, 0.0),
            (0.15, 0.62),
            (0.15, 0.22),
            (-0.92, 0.22),
        ],
    )


SHAPES: dict[str, Builder] = {
    "cube": _cube,
    "sphere": _sphere,
    "cylinder": _cylinder,
    "cone": _cone,
    "torus": _ring_like(0.86, 0.5, 0.3),
    "pyramid": _pyramid,
    "star": _extruded(_star),
    "ring": _ring_like(0.5, 0.9, 0.13),
    "heart": _extruded(_heart),
    "capsule": _capsule,
    "diamond": _diamond,
    "crescent": _extruded(_crescent),
    "cross": _extruded(_cross),
    "prism": _prism,
    "arrow": _extruded(_arrow),
}


@lru_cache(maxsize=512)
def geometry(shape: str, size: int) -> Geometry:
    """The shape on a ``size`` x ``size`` sprite (cached: a scene reuses a handful of sizes)."""
    big = size * SUPERSAMPLE
    axis = (np.arange(big, dtype=np.float32) + 0.5) / big * 2 - 1
    x, y = np.meshgrid(axis, axis)
    mask, nx, ny, nz, u, v = SHAPES[shape](x, y)
    coverage = mask.astype(np.float32)

    def down(a: np.ndarray) -> np.ndarray:
        result: np.ndarray = a.reshape(size, SUPERSAMPLE, size, SUPERSAMPLE).mean(axis=(1, 3))
        return result

    alpha = down(coverage)
    weight = np.maximum(alpha, 1e-6)
    # average surface values over the covered subsamples only: edges keep the surface's shading
    fields = [down(a * coverage) / weight for a in (nx, ny, nz, u, v)]
    normal = np.stack(_normalize(*fields[:3])).astype(np.float32)
    return Geometry(
        alpha.astype(np.float32), normal, fields[3].astype(np.float32), fields[4].astype(np.float32)
    )
