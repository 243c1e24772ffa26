"""The diversity controls' static part: bands, windows, mix, caps, and the data files."""

from __future__ import annotations

import re
import tomllib
from functools import cache
from importlib.resources import files
from typing import Any

from bindkit.synth.constructions import Construction


def _data(name: str) -> str:
    return files("bindkit.synth").joinpath(f"data/{name}").read_text("utf-8")


def read_lines(name: str) -> list[str]:
    return [
        line.strip()
        for line in _data(name).splitlines()
        if line.strip() and not line.startswith("#")
    ]


@cache
def controls() -> dict[str, Any]:
    return tomllib.loads(_data("controls.toml"))


@cache
def adjective_families() -> dict[str, list[str]]:
    families: dict[str, list[str]] = {}
    current = None
    for line in read_lines("adjectives.txt"):
        match = re.fullmatch(r"\[(.+)\]", line)
        if match:
            current = match.group(1)
            families[current] = []
        elif current is not None:
            families[current] += line.split()
    return families


def windows(construction: Construction) -> list[tuple[int, int]]:
    distance = controls()["distance"]
    key = {
        "adjacent": "adjacent_three" if construction.objects == 3 else "adjacent_two",
        "bundle": "adjacent_two",
        "predicative": "predicative",
        "deferred": "deferred",
    }[construction.family]
    return [(int(w[0]), int(w[1])) for w in distance[key]]


def bands(construction: Construction) -> list[tuple[int, int]]:
    length = controls()["length"]
    all_bands = [(int(b[0]), int(b[1])) for b in length["bands"]]
    if construction.family == "deferred":
        all_bands = all_bands[length["deferred_min_band"] :]
    return all_bands


def minimum_words(construction: Construction, window: tuple[int, int]) -> int:
    """Fewest words a caption needs for its core phrases and connecting words at the window's
    lower end (the length bands a plan may use must allow at least this)."""
    lo, k = window[0], construction.objects
    if construction.family in ("adjacent", "bundle"):
        per_object = 1 + construction.attributes_per_object
        return 1 + k * per_object + (k - 1) * max(lo, 1) + 1  # article ... verb
    if construction.family == "predicative":
        return k * (3 + lo) + (k - 1)
    return 16 + lo


@cache
def _tolerance() -> tuple[int, int]:
    length = controls()["length"]
    return int(length["tolerance_below"]), int(length["tolerance_above"])


def length_ok(count: int, band: tuple[int, int]) -> bool:
    """Whether a caption of ``count`` words fits ``band`` (with the validation tolerance)."""
    below, above = _tolerance()
    return band[0] - below <= count <= band[1] + above
