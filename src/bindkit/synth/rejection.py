"""What every synth rule returns: a :class:`Rejection` names its rule and says what is wrong.

The rules of examples (:mod:`bindkit.synth.example_rules`), of triplet rows
(:mod:`bindkit.synth.rowkinds`), of whole files (:mod:`bindkit.synth.validate`) and of a run's
split set (:mod:`bindkit.synth.splitset`) all report in this one currency.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Rejection:
    rule: str
    message: str


Failure = tuple[str, str, Rejection]  # (file:line, example id, rejection)


def count_rules(rejections: Iterable[Rejection]) -> Counter[str]:
    return Counter(r.rule for r in rejections)
