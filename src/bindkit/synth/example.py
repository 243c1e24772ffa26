"""One synthetic example and its JSON form (a line of ``examples.jsonl``)::

    {"id", "type", "bindings": [[attribute, object], ...], "slots": {attribute: slot} | null,
     "distractors": [[attribute, object], ...], "positive", "query",
     "negatives": {"attribute": str, "object": str},
     "intended": {"attribute": [[a, o], ...], "object": [[a, o], ...]},
     "targets": {"length_band": [lo, hi], "distance_window": [lo, hi], "context", "register",
                 "opener", "order"},
     "source": {"backend", "attempt"}}

``bindings`` are the queried attribute-object pairs (attr_bundle: two per object, with ``slots``);
``intended`` holds the bindings each negative must express.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from bindkit.errors import DataFormatError
from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.text import permute_words, render_query

Pair = tuple[str, str]


@dataclass
class Example:
    id: str
    type: str
    bindings: list[Pair]
    positive: str
    query: str = ""
    negatives: dict[str, str] = field(default_factory=dict)
    intended: dict[str, list[Pair]] = field(default_factory=dict)
    slots: dict[str, str] | None = None
    distractors: list[Pair] = field(default_factory=list)
    targets: dict[str, Any] = field(default_factory=dict)
    source: dict[str, Any] = field(default_factory=dict)

    @property
    def objects(self) -> list[str]:
        return list(dict.fromkeys(o for _, o in self.bindings))

    @property
    def attributes(self) -> list[str]:
        return [a for a, _ in self.bindings]

    def attributes_of(self, obj: str) -> list[str]:
        return [a for a, o in self.bindings if o == obj]

    def vocabulary(self) -> set[str]:
        return set(self.objects) | set(self.attributes)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "bindings": [list(p) for p in self.bindings],
            "slots": self.slots,
            "distractors": [list(p) for p in self.distractors],
            "positive": self.positive,
            "query": self.query,
            "negatives": self.negatives,
            "intended": {k: [list(p) for p in v] for k, v in self.intended.items()},
            "targets": self.targets,
            "source": self.source,
        }

    @classmethod
    def from_json(cls, obj: Any, where: str) -> Example:
        """Parse one line; every key is checked (an unknown key is an error, not ignored)."""
        if not isinstance(obj, dict):
            raise DataFormatError(f"{where}: an example must be a JSON object")
        _known_keys(obj, FIELDS, where, "an example")
        for key, kind in (("id", str), ("type", str), ("positive", str), ("query", str)):
            if not isinstance(obj.get(key), kind):
                raise DataFormatError(f"{where}: field {key!r} must be a string")
        if obj["type"] not in CONSTRUCTIONS:
            raise DataFormatError(
                f"{where}: unknown type {obj['type']!r}; use one of {', '.join(CONSTRUCTIONS)}"
            )
        negatives = obj.get("negatives")
        if (
            not isinstance(negatives, dict)
            or set(negatives) != {"attribute", "object"}
            or not all(isinstance(negatives.get(k), str) for k in ("attribute", "object"))
        ):
            raise DataFormatError(
                f'{where}: \'negatives\' must be {{"attribute": str, "object": str}}'
            )
        intended = obj.get("intended") or {}
        if not isinstance(intended, dict) or set(intended) - {"attribute", "object"}:
            raise DataFormatError(
                f'{where}: \'intended\' must be {{"attribute": pairs, "object": pairs}}'
            )
        slots = obj.get("slots")
        if slots is not None and not (
            isinstance(slots, dict) and all(isinstance(v, str) for v in slots.values())
        ):
            raise DataFormatError(f"{where}: 'slots' must be null or {{attribute: slot name}}")
        targets = obj.get("targets") or {}
        if not isinstance(targets, dict):
            raise DataFormatError(f"{where}: 'targets' must be a JSON object")
        _known_keys(targets, TARGETS, where, "'targets'")
        for key in ("length_band", "distance_window"):
            value = targets.get(key)
            if value is not None and not (
                isinstance(value, list)
                and len(value) == 2
                and all(isinstance(x, int) and not isinstance(x, bool) for x in value)
            ):
                raise DataFormatError(f"{where}: 'targets.{key}' must be [low, high] integers")
        source = obj.get("source") or {}
        if not isinstance(source, dict):
            raise DataFormatError(f"{where}: 'source' must be a JSON object")
        return cls(
            id=obj["id"],
            type=obj["type"],
            bindings=_pairs(obj.get("bindings"), where, "bindings"),
            positive=obj["positive"],
            query=obj["query"],
            negatives={"attribute": negatives["attribute"], "object": negatives["object"]},
            intended={k: _pairs(v, where, f"intended.{k}") for k, v in intended.items()},
            slots=slots,
            distractors=_pairs(obj.get("distractors") or [], where, "distractors"),
            targets=targets,
            source=source,
        )


FIELDS = (
    "id",
    "type",
    "bindings",
    "slots",
    "distractors",
    "positive",
    "query",
    "negatives",
    "intended",
    "targets",
    "source",
)
TARGETS = (
    "length_band",
    "distance_window",
    "distractors",
    "context",
    "register",
    "opener",
    "order",
    "kept",
)


def _known_keys(obj: dict[str, Any], known: tuple[str, ...], where: str, what: str) -> None:
    unknown = sorted(set(obj) - set(known))
    if unknown:
        raise DataFormatError(
            f"{where}: unknown key {unknown[0]!r} in {what}; the keys are {', '.join(known)}"
        )


def _pairs(value: Any, where: str, name: str) -> list[Pair]:
    if not isinstance(value, list) or not all(
        isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) for x in p) for p in value
    ):
        raise DataFormatError(f"{where}: {name!r} must be a list of [attribute, object] pairs")
    return [(p[0], p[1]) for p in value]


def complete(example: Example, rng: random.Random) -> Example:
    """Derive the query, both negatives and their intended bindings from bindings + positive.

    The negatives are word-level permutations of the positive: attribute words (or object words)
    trade places according to the construction, then articles are repaired.
    """
    kind = example.type
    objects = example.objects
    if kind == "attr_bundle":
        slot_of = example.slots or {}
        slot = rng.choice(sorted({slot_of[a] for a in example.attributes}))
        first, second = objects
        a1 = next(a for a in example.attributes_of(first) if slot_of.get(a) == slot)
        a2 = next(a for a in example.attributes_of(second) if slot_of.get(a) == slot)
        attribute_map = {a1: a2, a2: a1}
        object_map = {first: second, second: first}
    elif kind == "triple_bind_cycle":
        order = sorted(objects, key=lambda o: _position(example.positive, o))
        step = rng.choice((1, 2))
        attrs = [example.attributes_of(o)[0] for o in order]
        attribute_map = {attrs[i]: attrs[(i + step) % 3] for i in range(3)}
        object_map = {order[i]: order[(i + step) % 3] for i in range(3)}
    elif kind == "triple_bind_swap":
        kept = example.targets.get("kept") or rng.choice(objects)
        example.targets["kept"] = kept
        x, y = [o for o in objects if o != kept]
        ax, ay = example.attributes_of(x)[0], example.attributes_of(y)[0]
        attribute_map = {ax: ay, ay: ax}
        object_map = {x: y, y: x}
    else:
        x, y = objects
        ax, ay = example.attributes_of(x)[0], example.attributes_of(y)[0]
        attribute_map = {ax: ay, ay: ax}
        object_map = {x: y, y: x}
    example.negatives = {
        "attribute": permute_words(example.positive, attribute_map),
        "object": permute_words(example.positive, object_map),
    }
    example.intended = {
        # the attribute that now sits where a stood is attribute_map[a], next to a's object
        "attribute": sorted((attribute_map.get(a, a), o) for a, o in example.bindings),
        # the object now where o stood receives o's attributes
        "object": sorted((a, object_map.get(o, o)) for a, o in example.bindings),
    }
    groups = [(example.attributes_of(o), o) for o in objects]
    rng.shuffle(groups)
    example.query = render_query(groups)
    return example


def _position(text: str, word: str) -> int:
    from bindkit.synth.text import words

    tokens = words(text)
    return tokens.index(word) if word in tokens else len(tokens)
