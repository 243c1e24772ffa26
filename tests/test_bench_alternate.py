"""benchmarks/_alternate.py: the order flips every round; best, spread and ratio by hand."""

from __future__ import annotations

from types import ModuleType

from script_module import load_script


def _module() -> ModuleType:
    return load_script("benchmarks/_alternate.py")


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
