"""benchmarks/_alternate.py: the order flips every round; best, spread and ratio by hand."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def _module() -> ModuleType:
    path = Path(__file__).parents[1] / "benchmarks" / "_alternate.py"
    spec = importlib.util.spec_from_file_location("_alternate", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_order_flips_every_round_and_the_numbers_are_right() -> None:
    alt = _module()
    calls: list[str] = []
    seconds = {"a": iter([2.0, 3.0, 2.5]), "b": iter([4.0, 5.0, 6.0])}

    def contender(name: str) -> float:
        calls.append(name)
        return next(seconds[name])

    timings = alt.alternate({"a": lambda: contender("a"), "b": lambda: contender("b")}, 3)
    assert calls == ["a", "b", "b", "a", "a", "b"]
    a, b = timings["a"], timings["b"]
    assert a.seconds == (2.0, 3.0, 2.5) and a.best == 2.0 and a.spread == 0.5
    assert alt.ratio_spread(b, a) == (2.0, 5.0 / 3.0, 2.4)
