"""The running diversity controls: what each new example is asked to be, and whether an
accepted-looking example is admitted (duplicate sets, frequency caps).

A :class:`Controller` is rebuilt from ``examples.jsonl`` on resume, so caps, avoid lists and
duplicate detection continue exactly where a killed run stopped.
"""

from __future__ import annotations

import random
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any

from bindkit.synth.constructions import CONSTRUCTIONS, Construction
from bindkit.synth.controls import (
    adjective_families,
    bands,
    controls,
    minimum_words,
    read_lines,
    windows,
)
from bindkit.synth.example import Example


@dataclass
class Plan:
    """What one generation request asks for (becomes the LLM prompt or the template's input)."""

    attempt: int
    type: str
    length_band: tuple[int, int]
    distance_window: tuple[int, int]
    distractors: int
    scene: str
    time: str | None
    weather: str | None
    register: str
    opener: str
    order: str | None  # deferred_bind_anaphoric: "first_first" or "second_first"
    avoid: list[str]
    banned: list[str]
    suggestions: dict[str, list[str]]

    @property
    def context(self) -> str:
        """The scene with its optional time-of-day and weather modifiers."""
        return " ".join(x for x in (self.scene, self.time, self.weather) if x)

    @property
    def construction(self) -> Construction:
        return CONSTRUCTIONS[self.type]

    def targets(self) -> dict[str, Any]:
        return {
            "length_band": list(self.length_band),
            "distance_window": list(self.distance_window),
            "distractors": self.distractors,
            "context": self.context,
            "register": self.register,
            "opener": self.opener,
            "order": self.order,
        }


@dataclass
class Controller:
    """Counts, caps and duplicate sets over the accepted examples."""

    mix: dict[str, float] = field(default_factory=lambda: dict(controls()["mix"]))
    counts: Counter[str] = field(default_factory=Counter)
    recent: deque[str] = field(default_factory=lambda: deque(maxlen=controls()["vocabulary"][
        "avoid_recent"]))
    seen_sets: dict[str, set[frozenset[str]]] = field(default_factory=dict)
    accepted: int = 0
    by_type: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        total = sum(self.mix.values())
        if abs(total - 1) > 1e-6 or set(self.mix) - set(CONSTRUCTIONS):
            raise ValueError(f"the construction mix must cover known types and sum to 1: {self.mix}")
        self.scenes = read_lines("scenes.txt")
        self.times = read_lines("times.txt")
        self.weather = read_lines("weather.txt")
        self.registers = read_lines("registers.txt")
        self.openers = read_lines("openers.txt")
        self.families = adjective_families()

    # -- caps ---------------------------------------------------------------------------
    def cap(self, n_attributes: int) -> float:
        v = controls()["vocabulary"]
        fraction = v["cap_fraction"][str(min(4, max(2, n_attributes)))]
        return max(v["min_cap"], fraction * self.accepted)

    def banned(self, n_attributes: int) -> list[str]:
        cap = self.cap(n_attributes)
        return sorted(w for w, c in self.counts.items() if c >= cap)

    def avoid(self) -> list[str]:
        frequent = [w for w, _ in self.counts.most_common(controls()["vocabulary"]["avoid_frequent"])]
        return list(dict.fromkeys([*reversed(self.recent), *frequent]))

    def suggestions(self, rng: random.Random, n_attributes: int) -> dict[str, list[str]]:
        """The least-used uncapped adjectives of each family (ties broken at random)."""
        cap = self.cap(n_attributes)
        per_family = controls()["vocabulary"]["suggestions_per_family"]
        out = {}
        for family, pool in self.families.items():
            open_words = [w for w in pool if self.counts[w] < cap]
            rng.shuffle(open_words)
            open_words.sort(key=lambda w: self.counts[w])
            out[family] = open_words[:per_family]
        return out

    # -- planning -----------------------------------------------------------------------
    def plan(self, attempt: int, seed: int) -> Plan:
        rng = random.Random(f"{seed}/plan/{attempt}")
        kind = rng.choices(list(self.mix), weights=list(self.mix.values()))[0]
        c = CONSTRUCTIONS[kind]
        window = rng.choice(windows(c))
        shift = rng.randint(*controls()["length"]["three_object_shift"]) if c.objects == 3 else 0
        distractors = rng.randint(0, controls()["distractors"]["max"]) if c.takes_distractors else 0
        # a band must leave room for the core at the window's lower end and the distractors
        fitting = [(lo + shift, hi + shift) for lo, hi in bands(c)
                   if hi + shift >= minimum_words(c, window) + 4 * distractors]
        while not fitting and distractors:
            distractors -= 1
            fitting = [(lo + shift, hi + shift) for lo, hi in bands(c)
                       if hi + shift >= minimum_words(c, window) + 4 * distractors]
        band = rng.choice(fitting or [(b[0] + shift, b[1] + shift) for b in bands(c)[-1:]])
        return Plan(
            attempt=attempt,
            type=kind,
            length_band=band,
            distance_window=window,
            distractors=distractors,
            scene=rng.choice(self.scenes),
            time=rng.choice([None, *self.times]),
            weather=rng.choice([None, *self.weather]),
            register=rng.choice(self.registers),
            opener=rng.choice(self.openers),
            order=rng.choice(["first_first", "second_first"])
            if kind == "deferred_bind_anaphoric" else None,
            avoid=self.avoid(),
            banned=self.banned(c.attributes),
            suggestions=self.suggestions(rng, c.attributes),
        )

    # -- admission ----------------------------------------------------------------------
    def admit(self, ex: Example) -> str | None:
        """None if ``ex`` may be accepted, else the rule that rejects it."""
        words = ex.vocabulary()
        if frozenset(words) in self.seen_sets.get(ex.type, set()):
            return "duplicate_set"
        cap = self.cap(len(ex.attributes))
        if any(self.counts[w] >= cap for w in words):
            return "frequency_cap"
        return None

    def record(self, ex: Example) -> None:
        words = ex.vocabulary()
        self.seen_sets.setdefault(ex.type, set()).add(frozenset(words))
        self.counts.update(words)
        self.recent.extend(sorted(words))
        self.accepted += 1
        self.by_type[ex.type] += 1
