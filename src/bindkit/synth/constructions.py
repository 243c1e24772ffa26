"""The seven construction types and how their hard negatives permute the positive caption."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Family = Literal["adjacent", "bundle", "predicative", "deferred"]


@dataclass(frozen=True)
class Construction:
    name: str
    objects: int
    attributes_per_object: int
    family: Family
    description: str

    @property
    def attributes(self) -> int:
        return self.objects * self.attributes_per_object

    @property
    def takes_distractors(self) -> bool:
        return self.name in (
            "pair_swap",
            "predicative",
            "deferred_bind_anaphoric",
            "deferred_bind_respective",
        )


CONSTRUCTIONS: dict[str, Construction] = {
    c.name: c
    for c in (
        Construction(
            "pair_swap", 2, 1, "adjacent", "two objects, each directly preceded by its attribute"
        ),
        Construction(
            "triple_bind_cycle",
            3,
            1,
            "adjacent",
            "three objects; negatives rotate all attributes / all nouns by one",
        ),
        Construction(
            "triple_bind_swap",
            3,
            1,
            "adjacent",
            "three objects; negatives transpose two pairs, one stays correctly bound",
        ),
        Construction(
            "attr_bundle",
            2,
            2,
            "bundle",
            "two objects with two attributes each from different slots; the attribute "
            "negative swaps one slot only",
        ),
        Construction(
            "predicative",
            2,
            1,
            "predicative",
            "attributes detached by a copula, change-of-state verb or relative clause",
        ),
        Construction(
            "deferred_bind_anaphoric",
            2,
            1,
            "deferred",
            "both nouns first, attributes assigned by back-reference (former/latter)",
        ),
        Construction(
            "deferred_bind_respective",
            2,
            1,
            "deferred",
            "both nouns first, attributes assigned jointly in noun order (respectively)",
        ),
    )
}
