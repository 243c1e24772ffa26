"""Koishigarina et al.'s binding protocol (ICLR 2026, "CLIP behaves like a bag-of-words model
cross-modally but not uni-modally"; github.com/kdariina/CLIP-not-BoW-unimodally), shared by
CLEVR-binding and PUG:SPARE.

A scene holds two objects, each with one attribute: the binding ``(a1, o1, a2, o2)``. Its caption
is ``"{a1} {o1} and {a2} {o2}"``; the hard negative exchanges the attributes,
``(a2, o1, a1, o2)``. The publisher writes each caption once, in the order its ``pair_label``
dictionary lists it (a binding or, if absent, the same scene named the other way round,
``(a2, o2, a1, o1)``): :func:`canonical`. An image is correct when its positive caption scores
above the negative one (``get_accuracy`` in ``alignment/{clevr,pug}_alignment_utils.py``).

Both benchmarks come with the publisher's train/val/test split of the scenes (seeded
``random.seed(42)``; :func:`clevr_split`, :func:`pug_split`): bindkit reproduces it, so the
``test`` subset is the one its LABCLIP results are reported on.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Sequence

Binding = tuple[str, str, str, str]  # (attribute 1, object 1, attribute 2, object 2)
SPLITS = ("test", "val", "train")
SEED = 42  # the publisher's random.seed
RATIO = 0.1  # of the scenes, for each of test and val


def caption(binding: Binding) -> str:
    """``"red cube and blue sphere"``: the publisher's caption of a binding."""
    return f"{binding[0]} {binding[1]} and {binding[2]} {binding[3]}"


def attributes_swapped(binding: Binding) -> Binding:
    """The hard negative: each object takes the other's attribute."""
    return (binding[2], binding[1], binding[0], binding[3])


def other_order(binding: Binding) -> Binding:
    """The same scene, its objects named the other way round."""
    return (binding[2], binding[3], binding[0], binding[1])


def canonical(binding: Binding, known: frozenset[Binding]) -> Binding | None:
    """The binding as the publisher's caption list holds it (itself, or in the other order);
    None when it holds neither (the publisher's ``ValueError``)."""
    if binding in known:
        return binding
    flipped = other_order(binding)
    return flipped if flipped in known else None


def scene_key(binding: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """A scene up to the order its objects are named in: the publisher's attribute × object
    count matrix (``tuple_to_matrix``), as a sorted tuple of (attribute, object) pairs."""
    return tuple(sorted((binding[i], binding[i + 1]) for i in range(0, len(binding), 2)))


def clevr_split(labels: Sequence[Binding]) -> dict[str, list[int]]:
    """The item indices of each split, as ``train_val_test_split`` in the publisher's
    ``data_loading/clevr.py`` draws them: the distinct scenes in sorted order, then scenes drawn
    one at a time (``random.sample(scenes, 1)``) until each of test and val holds a tenth of
    them, each drawn scene together with its attribute-swapped twin; every item goes to the
    split holding its scene."""
    rng = random.Random(SEED)
    scenes: list[Binding] = []
    seen: set[tuple[tuple[str, str], ...]] = set()
    for label in sorted(set(labels)):
        if scene_key(label) not in seen:
            seen.add(scene_key(label))
            scenes.append(label)
    target = int(RATIO * len(scenes))
    drawn: dict[str, set[tuple[tuple[str, str], ...]]] = {"test": set(), "val": set()}
    for split, taken in (("test", set()), ("val", drawn["test"])):
        chosen = drawn[split]
        while len(chosen) < target:
            sample = rng.sample(scenes, 1)[0]
            key = scene_key(sample)
            if key in chosen or key in taken:
                continue
            chosen.add(key)
            twin = scene_key(attributes_swapped(sample))
            if twin in chosen or twin in taken:
                continue
            chosen.add(twin)
    out: dict[str, list[int]] = {s: [] for s in SPLITS}
    for i, label in enumerate(labels):
        key = scene_key(label)
        split = "test" if key in drawn["test"] else "val" if key in drawn["val"] else "train"
        out[split].append(i)
    return out


def pug_caption_list(attributes: Sequence[str], objects: Sequence[str]) -> list[Binding]:
    """PUG:SPARE's caption list (``PUGSPARELoader.get_pair_labels``): every binding of two
    different attributes to two different objects, in the order attributes and objects first
    appear in the labels file."""
    return [
        (a1, o1, a2, o2)
        for a1 in attributes
        for o1 in objects
        for a2 in attributes
        for o2 in objects
        if o1 != o2 and a1 != a2
    ]


def pug_split(labels: Sequence[Binding], caption_list: Sequence[Binding]) -> dict[str, list[int]]:
    """The row indices of each split, as ``train_val_test_split`` in the publisher's
    ``alignment/pug_alignment_utils.py`` draws them: of the caption list, bindings whose
    object-swapped or attribute-swapped twin came earlier are dropped; a tenth of the rest is
    drawn for test (``random.sample``), a tenth of the remainder for val; each drawn binding
    takes every row of its scene in either naming order, with its attributes either way round
    (``extend_test_indices``: in that order, so a row can be listed, and scored, twice);
    train is every other row, once."""
    unique: list[Binding] = []
    kept: set[Binding] = set()
    for a1, o1, a2, o2 in caption_list:
        if (a1, o2, a2, o1) in kept or (a2, o1, a1, o2) in kept:
            continue
        unique.append((a1, o1, a2, o2))
        kept.add((a1, o1, a2, o2))
    rows: dict[Binding, list[int]] = {}
    for i, label in enumerate(labels):
        rows.setdefault(label, []).append(i)

    def extend(drawn: Iterable[Binding]) -> list[int]:
        out: list[int] = []
        for a1, o1, a2, o2 in drawn:
            for variant in ((a1, o1, a2, o2), (a2, o2, a1, o1), (a2, o1, a1, o2), (a1, o2, a2, o1)):
                out += rows.get(variant, [])
        return out

    rng = random.Random(SEED)
    count = int(RATIO * len(unique))
    test = rng.sample(unique, count)
    chosen = set(test)
    val = rng.sample([c for c in unique if c not in chosen], count)
    split = {"test": extend(test), "val": extend(val)}
    used = set(split["test"]) | set(split["val"])
    split["train"] = [i for i in range(len(labels)) if i not in used]
    return split


def repeats(indices: Sequence[int]) -> int:
    """How many entries of ``indices`` repeat an earlier one (rows scored more than once)."""
    return sum(n - 1 for n in Counter(indices).values())
