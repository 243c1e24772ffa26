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

REFRESH = 50


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

    def candidate(
        self,
        backend: str,
        bindings: list[tuple[str, str]],
        positive: str,
        *,
        slots: dict[str, str] | None = None,
        distractors: list[tuple[str, str]] | None = None,
    ) -> Example:
        """A backend's answer to this plan as a candidate example (negatives come later)."""
        return Example(
            id=f"ex-{self.attempt:08d}",
            type=self.type,
            bindings=bindings,
            positive=positive,
            slots=slots,
            distractors=distractors or [],
            targets=self.targets(),
            source={"backend": backend, "attempt": self.attempt},
        )

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
    recent: deque[str] = field(
        default_factory=lambda: deque(maxlen=controls()["vocabulary"]["avoid_recent"])
    )
    seen_sets: dict[str, set[frozenset[str]]] = field(default_factory=dict)
    accepted: int = 0
    by_type: Counter[str] = field(default_factory=Counter)
    objects: set[str] = field(default_factory=set)
    orders: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        total = sum(self.mix.values())
        if abs(total - 1) > 1e-6 or set(self.mix) - set(CONSTRUCTIONS):
            raise ValueError(
                f"the construction mix must cover known types and sum to 1: {self.mix}"
            )
        self.scenes = read_lines("scenes.txt")
        self.times = read_lines("times.txt")
        self.weather = read_lines("weather.txt")
        self.registers = read_lines("registers.txt")
        self.openers = read_lines("openers.txt")
        self.families = adjective_families()
        self._cache: dict[tuple[Any, ...], list[str]] = {}
        self._sorted: dict[tuple[str, int], list[str]] = {}
        # words of each family bucketed by use count: least-used lookups without a full sort
        self.family_of = {w: f for f, ws in self.families.items() for w in ws}
        self.levels: dict[str, dict[int, set[str]]] = {
            f: {0: set(ws)} for f, ws in self.families.items()
        }
        for word, count in self.counts.items():
            self._move(word, 0, count)
        self._freeze()

    def _freeze(self) -> None:
        """Take the counts the banned and avoid lists read until the next REFRESH boundary.

        The lists are a function of this snapshot alone, not of when a plan first asks for them:
        a run resumed mid-block rebuilds the same snapshot from ``examples.jsonl`` and plans the
        same examples as a run that was never stopped.
        """
        self._frozen: tuple[int, dict[str, int]] = (self.accepted, dict(self.counts))
        self._cache = {}

    def _move(self, word: str, old: int, new: int) -> None:
        family = self.family_of.get(word)
        if family is None:
            return
        levels = self.levels[family]
        self._sorted.pop((family, old), None)
        self._sorted.pop((family, new), None)
        levels[old].discard(word)
        if not levels[old]:
            del levels[old]
        levels.setdefault(new, set()).add(word)

    # -- caps ---------------------------------------------------------------------------
    def cap(self, n_attributes: int) -> float:
        v = controls()["vocabulary"]
        fraction = v["cap_fraction"][str(min(4, max(2, n_attributes)))]
        return max(float(v["min_cap"]), float(fraction) * self.accepted)

    def banned(self, n_attributes: int) -> list[str]:
        """Words at their cap at the last REFRESH boundary of accepted examples (a word that
        reaches its cap in between is still stopped by :meth:`admit`)."""
        key = ("banned", n_attributes)
        if key not in self._cache:
            accepted, counts = self._frozen
            v = controls()["vocabulary"]
            fraction = v["cap_fraction"][str(min(4, max(2, n_attributes)))]
            cap = max(float(v["min_cap"]), float(fraction) * accepted)
            self._cache[key] = sorted(w for w, c in counts.items() if c >= cap)
        return self._cache[key]

    def avoid(self) -> list[str]:
        """The most recently used words, then the most frequent ones at the last REFRESH
        boundary of accepted examples."""
        key = ("frequent",)
        if key not in self._cache:
            top = controls()["vocabulary"]["avoid_frequent"]
            # ties broken by the word, not by insertion order (which follows set iteration
            # order, i.e. PYTHONHASHSEED)
            ranked = sorted(self._frozen[1].items(), key=lambda item: (-item[1], item[0]))
            self._cache[key] = [w for w, _ in ranked[:top]]
        return list(dict.fromkeys([*reversed(self.recent), *self._cache[key]]))

    def suggestions(self, rng: random.Random, n_attributes: int) -> dict[str, list[str]]:
        """The least-used uncapped adjectives of each family (ties broken at random)."""
        cap = self.cap(n_attributes)
        per_family = controls()["vocabulary"]["suggestions_per_family"]
        out = {}
        for family, levels in self.levels.items():
            chosen: list[str] = []
            for level in sorted(levels):
                if level >= cap or len(chosen) >= per_family:
                    break
                bucket = self._sorted.get((family, level))
                if bucket is None:
                    bucket = self._sorted[(family, level)] = sorted(levels[level])
                chosen += rng.sample(bucket, min(per_family - len(chosen), len(bucket)))
            out[family] = chosen
        return out

    # -- planning -----------------------------------------------------------------------
    def plan(self, attempt: int, seed: int, kind: str | None = None) -> Plan:
        """The plan of one attempt (``kind`` forces a construction type)."""
        rng = random.Random(f"{seed}/plan/{attempt}")
        # the type furthest below its share of the accepted examples: the mix is met exactly
        # (100,000 examples with the default mix give 16,000 of each of five types and 10,000
        # of each deferred_bind type), and rejections of one type do not shift the mix
        target = self.accepted + 1
        if kind is None:
            kind = max(self.mix, key=lambda t: self.mix[t] * target - self.by_type[t])
        c = CONSTRUCTIONS[kind]
        window = rng.choice(windows(c))
        shift = rng.randint(*controls()["length"]["three_object_shift"]) if c.objects == 3 else 0
        distractors = rng.randint(0, controls()["distractors"]["max"]) if c.takes_distractors else 0
        # a band must leave room for the core at the window's lower end and the distractors
        fitting = [
            (lo + shift, hi + shift)
            for lo, hi in bands(c)
            if hi + shift >= minimum_words(c, window) + 4 * distractors
        ]
        while not fitting and distractors:
            distractors -= 1
            fitting = [
                (lo + shift, hi + shift)
                for lo, hi in bands(c)
                if hi + shift >= minimum_words(c, window) + 4 * distractors
            ]
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
            order=self._order(rng) if kind == "deferred_bind_anaphoric" else None,
            avoid=self.avoid(),
            banned=self.banned(c.attributes),
            suggestions=self.suggestions(rng, c.attributes),
        )

    def _order(self, rng: random.Random) -> str:
        """The anaphoric order behind in the accepted examples (a coin flip on a tie): exactly
        half of them assign the second noun first, as the seed asks."""
        first, second = self.orders["first_first"], self.orders["second_first"]
        if first == second:
            return rng.choice(["first_first", "second_first"])
        return "first_first" if first < second else "second_first"

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
        words = sorted(ex.vocabulary())
        self.seen_sets.setdefault(ex.type, set()).add(frozenset(words))
        for word in words:
            self._move(word, self.counts[word], self.counts[word] + 1)
        self.counts.update(words)
        self.recent.extend(words)
        if ex.targets.get("order"):
            self.orders[ex.targets["order"]] += 1
        self.accepted += 1
        self.by_type[ex.type] += 1
        self.objects.update(ex.objects)
        if self.accepted % REFRESH == 0:
            self._freeze()
