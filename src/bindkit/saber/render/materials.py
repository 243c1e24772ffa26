"""Surface appearance of the procedural renderer: one realised attribute → colours per pixel.

A material maps a shape's geometry (coverage, normals, surface coordinates) to a sprite: RGB,
opacity and an additive glow. Attributes are looked up by name (the shapes vocabulary's
attribute names) and read their realised slots (colours, variants).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from bindkit.saber.render.shapes import Geometry

#: Linear RGB in [0, 1] of every palette colour and variant the shapes vocabulary uses.
COLORS: dict[str, tuple[float, float, float]] = {
    "red": (0.86, 0.1, 0.1),
    "orange": (1.0, 0.5, 0.05),
    "yellow": (0.98, 0.86, 0.1),
    "green": (0.13, 0.62, 0.2),
    "blue": (0.1, 0.3, 0.92),
    "purple": (0.55, 0.18, 0.78),
    "pink": (1.0, 0.52, 0.72),
    "white": (0.95, 0.95, 0.95),
    "black": (0.07, 0.07, 0.08),
    "gold": (1.0, 0.76, 0.2),
    "silver": (0.82, 0.83, 0.86),
    "bronze": (0.72, 0.46, 0.2),
    "copper": (0.85, 0.42, 0.26),
    "gunmetal": (0.36, 0.38, 0.42),
    "light-brown": (0.78, 0.56, 0.32),
    "dark-brown": (0.42, 0.25, 0.12),
}
_LIGHT = np.array([-0.45, -0.65, 0.62], dtype=np.float32) / np.float32(
    np.linalg.norm([-0.45, -0.65, 0.62])
)
_HALF = (_LIGHT + np.array([0, 0, 1], dtype=np.float32)) / np.float32(
    np.linalg.norm(_LIGHT + np.array([0, 0, 1]))
)


@dataclass(frozen=True)
class Sprite:
    """A drawn object: premultiplied RGB, opacity, and additive glow (all float32)."""

    rgb: np.ndarray  # (size, size, 3), premultiplied by alpha
    alpha: np.ndarray  # (size, size)
    glow: np.ndarray | None = None  # (size, size, 3) added around the object


class _Surface:
    """Lighting terms of one geometry, computed once per sprite."""

    def __init__(self, g: Geometry) -> None:
        self.g = g
        n = g.normal
        self.diffuse = np.clip(np.tensordot(_LIGHT, n, axes=1), 0, 1)
        self.specular = np.clip(np.tensordot(_HALF, n, axes=1), 0, 1)
        # a studio environment for reflections: bright above the horizon, dark floor below
        self.environment = 1 / (1 + np.exp(8 * (n[1] + 0.1)))

    def plastic(self, base: np.ndarray, shine: float = 0.45, power: float = 40) -> np.ndarray:
        light = 0.32 + 0.78 * self.diffuse
        return base * light[..., None] + shine * (self.specular**power)[..., None]

    def metal(self, base: np.ndarray, contrast: float = 0.8) -> np.ndarray:
        env = 0.25 + contrast * self.environment + 0.35 * self.diffuse
        result: np.ndarray = base * env[..., None] + 0.8 * (self.specular**60)[..., None]
        return result


def _rgb(name: str) -> np.ndarray:
    return np.array(COLORS[name], dtype=np.float32)


def _mix(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    result: np.ndarray = a * (1 - t[..., None]) + b * t[..., None]
    return result


def _noise(size: int, seed: int) -> np.ndarray:
    """Smooth value noise (deterministic): bilinearly upsampled random lattice."""
    lattice = np.random.default_rng(seed).random((7, 7)).astype(np.float32)
    pos = np.linspace(0, 5.999, size, dtype=np.float32)
    i = pos.astype(int)
    f = pos - i
    rows = lattice[i] * (1 - f)[:, None] + lattice[i + 1] * f[:, None]
    result: np.ndarray = rows[:, i] * (1 - f)[None, :] + rows[:, i + 1] * f[None, :]
    return result


Paint = Callable[[_Surface, Mapping[str, str], str], tuple[np.ndarray, np.ndarray | None, float]]


def _solid(color: str, shine: float = 0.45) -> Paint:
    def paint(s: _Surface, slots: Mapping[str, str], name: str) -> tuple[np.ndarray, None, float]:
        return s.plastic(np.broadcast_to(_rgb(color), (*s.g.u.shape, 3)), shine), None, 1.0

    return paint


def _matte(s: _Surface, slots: Mapping[str, str], name: str) -> tuple[np.ndarray, None, float]:
    base = np.broadcast_to(_rgb(slots["color"]), (*s.g.u.shape, 3))
    return base * (0.38 + 0.7 * s.diffuse)[..., None], None, 1.0


def _metal(color: str | None = None, contrast: float = 0.8) -> Paint:
    def paint(s: _Surface, slots: Mapping[str, str], name: str) -> tuple[np.ndarray, None, float]:
        tone = _rgb(color or slots["variant"])
        return s.metal(np.broadcast_to(tone, (*s.g.u.shape, 3)), contrast), None, 1.0

    return paint


def _chrome(s: _Surface, slots: Mapping[str, str], name: str) -> tuple[np.ndarray, None, float]:
    # a mirror shows the environment with hard edges: sky, horizon line, dark floor
    horizon = 0.9 * s.g.normal[1] + 0.8 * (s.g.v - 0.45)
    env = np.where(horizon < 0, 0.95, 0.2) * (0.7 + 0.3 * s.diffuse)
    rgb = np.repeat(env[..., None], 3, axis=2) * np.array([0.92, 0.95, 1.0], dtype=np.float32)
    return rgb + 0.9 * (s.specular**80)[..., None], None, 1.0


def _wooden(s: _Surface, slots: Mapping[str, str], name: str) -> tuple[np.ndarray, None, float]:
    base = _rgb(slots["variant"])
    warp = _noise(s.g.u.shape[0], 11)
    grain = 0.5 + 0.5 * np.sin(2 * np.pi * (7 * s.g.u + 1.8 * warp))
    tone = _mix(np.broadcast_to(base, (*s.g.u.shape, 3)), base * 0.62, grain**3)
    return s.plastic(tone, 0.18), None, 1.0


def _marble(s: _Surface, slots: Mapping[str, str], name: str) -> tuple[np.ndarray, None, float]:
    white = slots["variant"] == "white"
    base, vein = (_rgb("white"), np.float32(0.45)) if white else (_rgb("black") + 0.05, 0.85)
    warp = _noise(s.g.u.shape[0], 5)
    veins = np.abs(np.sin(3 * np.pi * (s.g.u + s.g.v + 1.5 * warp))) < 0.16
    tone = np.where(veins[..., None], np.float32(vein), np.broadcast_to(base, (*s.g.u.shape, 3)))
    return s.plastic(tone.astype(np.float32), 0.55), None, 1.0


def _two_color(pattern: str) -> Paint:
    def paint(s: _Surface, slots: Mapping[str, str], name: str) -> tuple[np.ndarray, None, float]:
        a, b = _rgb(slots["color1"]), _rgb(slots["color2"])
        u, v = s.g.u, s.g.v
        if pattern == "striped":
            t = (np.floor((u + v) * 4.5) % 2).astype(np.float32)
        elif pattern == "checkered":
            t = ((np.floor(u * 4) + np.floor(v * 4)) % 2).astype(np.float32)
        elif pattern == "polka-dot":
            fu, fv = (u * 4) % 1 - 0.5, (v * 4) % 1 - 0.5
            t = (fu * fu + fv * fv < 0.09).astype(np.float32)
        else:  # gradient, top to bottom
            t = np.clip((v - v.min()) / max(float(np.ptp(v)), 1e-6), 0, 1)
        return s.plastic(_mix(np.broadcast_to(a, (*u.shape, 3)), b, t)), None, 1.0

    return paint


_RAINBOW = np.array(
    [COLORS[c] for c in ("red", "orange", "yellow", "green", "blue", "purple")], dtype=np.float32
)


def _rainbow(s: _Surface, slots: Mapping[str, str], name: str) -> tuple[np.ndarray, None, float]:
    band = np.clip((s.g.v * 6).astype(int), 0, 5)
    return s.plastic(_RAINBOW[band]), None, 1.0


def _glowing(
    s: _Surface, slots: Mapping[str, str], name: str
) -> tuple[np.ndarray, np.ndarray, float]:
    color = _rgb(slots["variant"])
    core = 0.55 + 0.45 * s.g.normal[2]  # hot centre, saturated rim
    # shaded body (the shape stays readable even for a white glow), a hot centre, a halo
    body = color * (0.45 + 0.55 * s.diffuse)[..., None]
    rgb = _mix(body, np.ones(3, dtype=np.float32), 0.35 * core**2)
    return rgb, color, 1.0


def _transparent(
    s: _Surface, slots: Mapping[str, str], name: str
) -> tuple[np.ndarray, None, float]:
    tint = np.array([0.8, 0.92, 1.0], dtype=np.float32)
    rgb = np.broadcast_to(tint, (*s.g.u.shape, 3)) * (0.8 + 0.2 * s.diffuse)[..., None]
    return rgb + 0.9 * (s.specular**50)[..., None], None, 0.0


PAINTS: dict[str, Paint] = {
    **{c: _solid(c) for c in ("red", "blue", "green", "yellow", "purple", "pink")},
    "golden": _metal("gold"),
    "silver": _metal("silver", 0.9),
    "metallic": _metal(),
    "wooden": _wooden,
    "marble": _marble,
    "matte": _matte,
    "striped": _two_color("striped"),
    "checkered": _two_color("checkered"),
    "polka-dot": _two_color("polka-dot"),
    "gradient": _two_color("gradient"),
    "rainbow": _rainbow,
    "glowing": _glowing,
    "transparent": _transparent,
    "mirrored": _chrome,
}


def paint(geometry: Geometry, attribute: str, slots: Mapping[str, str]) -> Sprite:
    """Draw ``attribute`` (realised with ``slots``) on ``geometry``."""
    surface = _Surface(geometry)
    rgb, glow_color, opacity = PAINTS[attribute](surface, slots, attribute)
    alpha = geometry.alpha
    if opacity < 1:  # see-through body: opaque rim and highlight, clear centre
        rim = 1 - np.clip(geometry.normal[2], 0, 1)
        alpha = alpha * np.clip(0.1 + 0.8 * rim**1.5 + 0.8 * surface.specular**50, 0, 1)
    premultiplied = np.clip(rgb, 0, 1) * alpha[..., None]
    glow = None
    if glow_color is not None:
        glow = glow_color.astype(np.float32)
    return Sprite(premultiplied.astype(np.float32), alpha.astype(np.float32), glow)
