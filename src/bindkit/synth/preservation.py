"""Preservation sets: sentences whose base-model embeddings a binding training distils into
each batch, so that what binding must not change (actions, relations, topics, how a detail
moves a sentence) stays where it was.

None of them holds an attribute–object binding to swap, so keeping their embeddings keeps no
bag-of-words binding: the scene contexts of the training captions, everyday sentences without
adjectives and everyday sentences that describe one thing (words: ``data/everyday.toml``).
"""

from __future__ import annotations

import random
from typing import Any

from bindkit.errors import BindkitError
from bindkit.synth.everyday import article, everyday_attributes, everyday_words


def context_sentences(examples: list[Any]) -> list[str]:
    """The distinct scene contexts of the examples' captions, each as a sentence.

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [], "...", targets={"context": "a garage at dawn"})
        >>> context_sentences([ex, ex])
        ['A garage at dawn.']
    """
    seen: dict[str, None] = {}
    for example in examples:
        context = (example.targets or {}).get("context")
        if context:
            seen.setdefault(context[0].upper() + context[1:].rstrip(".") + ".", None)
    return list(seen)


def generic_sentences(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct everyday sentences without adjectives ("Two women are cooking dinner
    in the kitchen."), some negated or joined by "while", in a seeded random order.

    Example:
        >>> len(set(generic_sentences(50))) == 50
        True
    """
    lists = everyday_words()
    rng = random.Random(f"{seed}/generic-sentences")
    seen: dict[str, None] = {}
    while len(seen) < count:
        actor = rng.choice(lists.actors)
        verb = _be(actor)
        action = rng.choice(lists.generic_actions)
        roll = rng.random()
        if roll < 0.1:
            clause = f"{actor} {verb} not {action}"
        elif roll < 0.25:
            other = rng.choice([a for a in lists.actors if a != actor])
            doing = rng.choice(lists.generic_actions)
            clause = f"{actor} {verb} {action} while {other} {_be(other)} {doing}"
        else:
            clause = f"{actor} {verb} {action}{rng.choice(lists.wheres)}"
        seen.setdefault(clause[0].upper() + clause[1:] + ".", None)
    return list(seen)


def described_sentences(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct everyday sentences that describe one thing ("A man in a black shirt is
    reading a book in the park.", "A wet dog is not chasing a ball."): one attribute, so no
    binding to swap, and keeping their embeddings keeps how a detail moves a sentence (what
    SICK rates) without keeping any bag-of-words binding. Some negated, in a seeded order.

    Example:
        >>> len(set(described_sentences(50))) == 50
        True
    """
    lists = everyday_words()
    rng = random.Random(f"{seed}/described-sentences")
    seen: dict[str, None] = {}
    while len(seen) < count:
        attribute, _, animal_ok = everyday_attributes(rng)
        if animal_ok and rng.random() < 0.3:
            actor = f"{article(attribute)} {attribute} {rng.choice(lists.animals)}"
        else:
            wear = rng.choice(lists.wear)
            actor = f"a {rng.choice(lists.people)} in {article(attribute)} {attribute} {wear}"
        action = rng.choice(lists.generic_actions)
        negated = "not " if rng.random() < 0.1 else ""  # drawn before the place, as always
        clause = f"{actor} is {negated}{action}{rng.choice(lists.wheres)}"
        seen.setdefault(clause[0].upper() + clause[1:] + ".", None)
    return list(seen)


def _be(actor: str) -> str:
    """ "is" or "are" after an actor of :func:`generic_sentences` (``[generic] actors``)."""
    return "are" if actor.startswith(("two ", "some ", "the children")) else "is"


PRESERVATION_SETS = ("contexts", "ctxgen", "generic", "ctxgenD", "ctxgenD2")
PRESERVATION_TEXT = {
    "contexts": "the scene contexts of the training captions",
    "ctxgen": "the scene contexts of the training captions and as many everyday sentences "
    "without adjectives (`generic_sentences`: who does what where, some negated), shuffled",
    "generic": "everyday sentences without adjectives (`generic_sentences`)",
    "ctxgenD": "the scene contexts of the training captions and as many everyday sentences "
    "without adjectives (`generic_sentences`) and with one (`described_sentences`: one thing "
    "described, no binding to swap), shuffled",
    "ctxgenD2": "the scene contexts of the training captions, as many everyday sentences "
    "without adjectives (`generic_sentences`) and half as many with one (`described_sentences`:"
    " one thing described, no binding to swap), shuffled",
}


def preservation_sentences(examples: list[Any], kind: str = "ctxgen", seed: int = 0) -> list[str]:
    """A preservation set: the scene contexts of the examples' captions (``contexts``,
    :func:`context_sentences`), as many everyday sentences (``generic``:
    :func:`generic_sentences`, twice as many), or both shuffled together (``ctxgen``), and as
    many one-attribute sentences too (``ctxgenD``, :func:`described_sentences`; half as many:
    ``ctxgenD2``).

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [], "...", targets={"context": "a garage at dawn"})
        >>> len(preservation_sentences([ex], "ctxgen"))
        2
    """
    if kind not in PRESERVATION_SETS:
        raise BindkitError(f"preservation set {kind!r}: use one of {', '.join(PRESERVATION_SETS)}")
    contexts = context_sentences(examples)
    if kind == "contexts":
        return contexts
    if kind == "generic":
        return generic_sentences(2 * len(contexts), seed)
    mixed = contexts + generic_sentences(len(contexts), seed)
    if kind.startswith("ctxgenD"):  # D: as many described sentences; D2: half as many
        mixed += described_sentences(len(contexts) // (2 if kind == "ctxgenD2" else 1), seed)
    random.Random(f"{seed}/ctxgen").shuffle(mixed)
    return mixed
