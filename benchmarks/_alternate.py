"""Timing two or more contenders on a shared, noisy machine.

Each round runs every contender once, and the order flips from one round to the next (A B, B A,
A B, ...), so a load that rises or falls during the benchmark hits every contender alike. The best
of the rounds is the least disturbed run; the spread says how much the rounds disagreed, so a
ratio smaller than the spread is noise, not a result.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Timings:
    """Seconds per round of one contender."""

    seconds: tuple[float, ...]

    @property
    def best(self) -> float:
        return min(self.seconds)

    @property
    def spread(self) -> float:
        """(slowest - fastest) / fastest: 0.10 means the rounds differed by 10 %."""
        return (max(self.seconds) - self.best) / self.best

    def row(self) -> str:
        rounds = ", ".join(f"{s:.2f}" for s in self.seconds)
        return f"best {self.best:.2f} s of [{rounds}], spread {100 * self.spread:.0f} %"


def alternate(contenders: Mapping[str, Callable[[], float]], rounds: int) -> dict[str, Timings]:
    """Run each contender ``rounds`` times, the order reversed every other round.

    A contender returns the seconds its timed part took (it times itself, so set-up such as
    loading a model stays out). The load average before each round is printed, as a record of
    how busy the machine was.
    """
    names = list(contenders)
    seconds: dict[str, list[float]] = {name: [] for name in names}
    for index in range(rounds):
        order = names if index % 2 == 0 else names[::-1]
        for name in order:
            seconds[name].append(contenders[name]())
        done = ", ".join(f"{name} {seconds[name][-1]:.2f} s" for name in order)
        print(f"round {index + 1}/{rounds} (load {os.getloadavg()[0]:.1f}): {done}", flush=True)
    return {name: Timings(tuple(values)) for name, values in seconds.items()}


def ratio_spread(top: Timings, bottom: Timings) -> tuple[float, float, float]:
    """``top.best / bottom.best``, and the lowest and highest ratio of one round's two runs."""
    paired = [t / b for t, b in zip(top.seconds, bottom.seconds, strict=True)]
    return top.best / bottom.best, min(paired), max(paired)
