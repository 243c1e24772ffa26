"""Everyday binding scenes (who does what to what, each with an attribute) and the triplets
built from them, so that binding is not learnt as a property of the template's style.

Without them a preserved adapter moves the template captions (1 − cos to the base model 0.31)
but natural captions hardly (0.07), since everyday sentences are what it was told to keep. The
words are data (``data/everyday.toml``, read once by :func:`everyday_words`); none is a SABER
vocabulary item. Beside the makers, the rule each everyday row kind satisfies
(:data:`EVERYDAY_CHECKS`, read from the row's texts alone), which
:func:`bindkit.synth.rowkinds.kind_problem` applies.
"""

from __future__ import annotations

import itertools
import random
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from bindkit.errors import BindkitError
from bindkit.synth.text import words as text_words

WORDS = "everyday.toml"
_ARTICLES = {"a", "an"}


@dataclass(frozen=True)
class EverydayWords:
    """The lists of ``data/everyday.toml``, each a tuple in file order (the seeded makers draw
    from them by position, so the order is part of the data)."""

    actors: tuple[str, ...]  # [generic]: generic_sentences' subjects
    generic_actions: tuple[str, ...]  # [generic] actions: what they do
    wheres: tuple[str, ...]  # [generic]: a place appended as it is ("" = none)
    colors: tuple[str, ...]
    big: tuple[str, ...]
    small: tuple[str, ...]
    states: tuple[tuple[str, str], ...]  # opposite states
    materials: tuple[str, ...]
    people: tuple[str, ...]
    wear: tuple[str, ...]
    animals: tuple[str, ...]
    things: tuple[str, ...]
    actions: tuple[tuple[str, str], ...]  # [scene]: (present participle, past participle)
    animal_actions: tuple[tuple[str, str], ...]  # those of ``actions`` an animal does too
    places: tuple[str, ...]

    @property
    def nouns(self) -> tuple[tuple[str, ...], ...]:
        """The noun groups a replaced noun stays within (:func:`with_object_replaced`)."""
        return (self.people, self.wear, self.animals, self.things)


@cache
def everyday_words() -> EverydayWords:
    """The packaged everyday word lists, read and checked once.

    Example:
        >>> everyday_words().animal_actions[0]
        ('watching', 'watched')
    """
    return read_words(files("bindkit.synth").joinpath(f"data/{WORDS}").read_text("utf-8"))


def read_words(text: str) -> EverydayWords:
    """The word lists of ``text`` (``everyday.toml``'s format); a list of the wrong shape is
    one line naming it."""
    data = tomllib.loads(text)
    generic, scene = data.get("generic", {}), data.get("scene", {})
    actions = _pairs(scene, "actions")
    by_doing = {doing: (doing, done) for doing, done in actions}
    animal = _words(scene, "animal_actions")
    if not set(animal) <= set(by_doing):
        raise BindkitError(f"{WORDS}: [scene] animal_actions must name [scene] actions")
    return EverydayWords(
        actors=_words(generic, "actors"),
        generic_actions=_words(generic, "actions"),
        wheres=_words(generic, "wheres", empty_ok=True),
        colors=_words(scene, "colors"),
        big=_words(scene, "big"),
        small=_words(scene, "small"),
        states=_pairs(scene, "states"),
        materials=_words(scene, "materials"),
        people=_words(scene, "people"),
        wear=_words(scene, "wear"),
        animals=_words(scene, "animals"),
        things=_words(scene, "things"),
        actions=actions,
        animal_actions=tuple(by_doing[doing] for doing in animal),
        places=_words(scene, "places"),
    )


def _words(table: dict[str, Any], key: str, empty_ok: bool = False) -> tuple[str, ...]:
    """``table[key]``, a non-empty list of (non-empty unless ``empty_ok``) strings, as a tuple."""
    value = table.get(key)
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(w, str) and (w or empty_ok) for w in value)
    ):
        raise BindkitError(f"{WORDS}: {key} must be a non-empty list of words")
    return tuple(value)


def _pairs(table: dict[str, Any], key: str) -> tuple[tuple[str, str], ...]:
    """``table[key]``, a non-empty list of two-word lists, as a tuple of pairs."""
    value = table.get(key)
    if (
        not isinstance(value, list)
        or not value
        or not all(
            isinstance(p, list) and len(p) == 2 and all(isinstance(w, str) and w for w in p)
            for p in value
        )
    ):
        raise BindkitError(f"{WORDS}: {key} must be a non-empty list of [word, word] pairs")
    return tuple((first, second) for first, second in value)


def everyday_attributes(rng: random.Random) -> tuple[str, str, bool]:
    """Two attributes that contradict each other (two colours, a large and a small size, two
    opposite states, two materials) and whether an animal may carry them (not materials)."""
    lists = everyday_words()
    roll = rng.random()
    if roll < 0.5:
        first, second = rng.sample(lists.colors, 2)
    elif roll < 0.7:
        first, second = rng.sample([rng.choice(lists.big), rng.choice(lists.small)], 2)
    elif roll < 0.9:
        first, second = rng.sample(rng.choice(lists.states), 2)
    else:
        first, second = rng.sample(lists.materials, 2)
        return first, second, False
    return first, second, True


def article(word: str) -> str:
    """ "a" or "an" before ``word``, by its first letter: the everyday words need no more."""
    return "an" if word[0] in "aeiou" else "a"


def everyday_scene(rng: random.Random) -> tuple[str, str, str]:
    """One everyday binding scene: (caption, a paraphrase of it, its attribute swap).

    The two attributes contradict each other, so the swap changes what is said ("A man in a
    white shirt is pushing a black cart in the park." / "In the park, a black cart is being
    pushed by a man wearing a white shirt." / "A man in a black shirt is pushing a white cart in
    the park."). A person's attribute is on what they wear, an animal's on itself ("a dog that
    is white" in the paraphrase). The paraphrase reorders the sentence (passive voice, the place
    first, the attribute after its noun): the caption's words, not their order.

    Example:
        >>> caption, para, swap = everyday_scene(random.Random(3))
        >>> sorted(caption.lower().split()) == sorted(swap.lower().split()) and caption != swap
        True
    """
    lists = everyday_words()
    first, second, animal_ok = everyday_attributes(rng)
    thing = rng.choice(lists.things)
    place = rng.choice(lists.places)
    if animal_ok and rng.random() < 0.4:
        animal = rng.choice(lists.animals)
        doing, done = rng.choice(lists.animal_actions)

        def subject(a: str) -> str:
            return f"{article(a)} {a} {animal}"

        subject_para = f"a {animal} that is {first}"
    else:
        person, wear = rng.choice(lists.people), rng.choice(lists.wear)
        doing, done = rng.choice(lists.actions)

        def subject(a: str) -> str:
            return f"a {person} in {article(a)} {a} {wear}"

        subject_para = f"a {person} wearing {article(first)} {first} {wear}"

    def caption(a: str, b: str) -> str:
        return f"{subject(a)} is {doing} {article(b)} {b} {thing} {place}"

    style = rng.randrange(3)
    if style == 0:
        para = f"{place}, {article(second)} {second} {thing} is being {done} by {subject_para}"
    elif style == 1:
        para = f"{article(second)} {second} {thing} is being {done} {place} by {subject_para}"
    else:
        para = f"{place}, {subject_para} is {doing} a {thing} that is {second}"
    texts = (caption(first, second), para, caption(second, first))
    return tuple(t[0].upper() + t[1:] + "." for t in texts)  # type: ignore[return-value]


def _attribute_slots(caption: str, swap: str) -> list[int]:
    """The word positions of the two attributes that ``swap`` trades in ``caption``."""
    return [
        i
        for i, (a, b) in enumerate(zip(caption.split(), swap.split(), strict=True))
        if a != b and a.lower() not in ("a", "an")
    ]


def _fit_article(words: list[str], i: int) -> None:
    """Make the article before ``words[i]`` (if any) "a" or "an" as ``words[i]`` needs."""
    if i > 0 and words[i - 1].lower() in ("a", "an"):
        fitted = article(words[i])
        words[i - 1] = fitted.capitalize() if words[i - 1][0].isupper() else fitted


def without_attribute(caption: str, swap: str, which: int) -> str:
    """``caption`` with one of the two attributes its ``swap`` trades dropped (``which`` 0: the
    first, 1: the second), its article fitted to the next word.

    Example:
        >>> without_attribute("A man in an orange shirt is pushing a gray cart.",
        ...                   "A man in a gray shirt is pushing an orange cart.", 0)
        'A man in a shirt is pushing a gray cart.'
    """
    words, slots = caption.split(), _attribute_slots(caption, swap)
    i = slots[which]
    del words[i]
    _fit_article(words, i)
    return " ".join(words)


def without_attributes(caption: str, swap: str) -> str:
    """``caption`` with both attributes its ``swap`` trades dropped, the articles fitted: the
    bare scene, which SICK rates close to the described one ("An elderly man is sitting on a
    bench" / "… wearing a gray jacket and black pants": 4.5 of 5).

    Example:
        >>> without_attributes("A man in an orange shirt is pushing a gray cart.",
        ...                    "A man in a gray shirt is pushing an orange cart.")
        'A man in a shirt is pushing a cart.'
    """
    words = caption.split()
    for i in sorted(_attribute_slots(caption, swap), reverse=True):
        del words[i]
        _fit_article(words, i)
    return " ".join(words)


def with_object_replaced(caption: str, rng: random.Random) -> str:
    """``caption`` with one of its nouns (a person, what they wear, an animal, a thing) replaced
    by another of its group that the caption does not name, its article fitted: SugarCrepe++'s
    replace_obj in everyday words.

    Example:
        >>> with_object_replaced("A dog is chasing a white ball in the park.", random.Random(1))
        'A horse is chasing a white ball in the park.'
    """
    lists = everyday_words()
    words = caption.split()
    present = {w.strip(".,").lower() for w in words}
    slots = [
        (i, group)
        for i, w in enumerate(words)
        for group in lists.nouns
        if w.strip(".,").lower() in group
    ]
    i, group = rng.choice(slots)
    word = words[i].strip(".,")
    new = rng.choice([w for w in group if w not in present])
    words[i] = words[i].replace(word, new.capitalize() if word[0].isupper() else new)
    _fit_article(words, i)
    return " ".join(words)


def _contradicting(word: str, other: str, rng: random.Random) -> str:
    """An attribute that contradicts ``word``, from its group (:func:`everyday_attributes`):
    another colour or material than ``word`` and ``other``, a size of the opposite kind, the
    opposite state."""
    lists = everyday_words()
    for group in (lists.colors, lists.materials):
        if word in group:
            return rng.choice([w for w in group if w not in (word, other)])
    if word in lists.big or word in lists.small:
        opposite = lists.small if word in lists.big else lists.big
        return rng.choice([w for w in opposite if w != other] or list(opposite))
    return next(b if a == word else a for a, b in lists.states if word in (a, b))


def with_attribute_replaced(caption: str, swap: str, which: int, rng: random.Random) -> str:
    """``caption`` with one of the two attributes its ``swap`` trades (``which`` 0: the first,
    1: the second) replaced by one that contradicts it (:func:`_contradicting`), its article
    fitted: SugarCrepe++'s replace_att in everyday words.

    Example:
        >>> with_attribute_replaced("A man in an old shirt is pushing a new cart.",
        ...                         "A man in a new shirt is pushing an old cart.", 1,
        ...                         random.Random(0))
        'A man in an old shirt is pushing an old cart.'
    """
    words, slots = caption.split(), _attribute_slots(caption, swap)
    i = slots[which]
    words[i] = _contradicting(words[i], words[slots[1 - which]], rng)
    _fit_article(words, i)
    return " ".join(words)


def everyday_triplets(
    count: int,
    seed: int = 0,
    omit: bool = False,
    replace: bool = False,
    bare: bool = False,
    replace_object: bool = False,
) -> list[dict[str, Any]]:
    """``2 · count`` triplets from ``count`` distinct everyday scenes (:func:`everyday_scene`),
    SugarCrepe++'s text-only test in both directions: the caption → its paraphrase vs its
    attribute swap, and the paraphrase → the caption vs the swap. ``omit`` adds a third per
    scene: the caption → the caption with one attribute dropped (:func:`without_attribute`)
    vs the swap, so that a detail left out moves a sentence less than a binding changed.
    ``replace`` adds another: the caption → its paraphrase vs the caption with one attribute
    replaced by a contradicting one (:func:`with_attribute_replaced`). ``bare`` adds the caption
    → the caption with both attributes dropped (:func:`without_attributes`) vs the swap, and
    ``replace_object`` the caption → its paraphrase vs the caption with one noun replaced
    (:func:`with_object_replaced`).

    Example:
        >>> rows = everyday_triplets(3)
        >>> len(rows), rows[0]["negative_kind"], len(everyday_triplets(3, omit=True))
        (6, 'everyday', 9)
    """
    rng = random.Random(f"{seed}/everyday-triplets")
    drops = random.Random(f"{seed}/everyday-omit")
    changes = random.Random(f"{seed}/everyday-replace")
    nouns = random.Random(f"{seed}/everyday-replace-object")
    seen: dict[str, tuple[str, str]] = {}
    while len(seen) < count:
        caption, para, swap = everyday_scene(rng)
        seen.setdefault(caption, (para, swap))
    rows = []
    for caption, (para, swap) in seen.items():
        triples = [("everyday", caption, para, swap), ("everyday_back", para, caption, swap)]
        if omit:
            dropped = without_attribute(caption, swap, drops.randrange(2))
            triples.append(("everyday_omission", caption, dropped, swap))
        if replace:
            changed = with_attribute_replaced(caption, swap, changes.randrange(2), changes)
            triples.append(("everyday_replacement", caption, para, changed))
        if bare:
            triples.append(("everyday_bare", caption, without_attributes(caption, swap), swap))
        if replace_object:
            triples.append(("everyday_noun", caption, para, with_object_replaced(caption, nouns)))
        for row_kind, query, positive, negative in triples:
            rows.append(
                {
                    "query": query,
                    "positive": positive,
                    "negative": negative,
                    "type": "everyday",
                    "negative_kind": "everyday",
                    "row_kind": row_kind,
                }
            )
    return rows


# -- the rule of each everyday row kind (bindkit.synth.rowkinds.ROW_KINDS) ---------------------
@cache
def _everyday_lexicon() -> tuple[dict[str, str], frozenset[str]]:
    """Each everyday attribute's group (a colour, a material, a state pair, "big"/"small"), and
    the action participles a paraphrase may add."""
    lists = everyday_words()
    group = {w: "colors" for w in lists.colors} | {w: "materials" for w in lists.materials}
    group |= {w: "big" for w in lists.big} | {w: "small" for w in lists.small}
    group |= {w: f"state {a}/{b}" for a, b in lists.states for w in (a, b)}
    return group, frozenset(done for _, done in lists.actions)


def _attributes(tokens: list[str]) -> list[int] | str:
    """The positions of an everyday caption's two attributes (each before its noun)."""
    group, _ = _everyday_lexicon()
    slots = [i for i, w in enumerate(tokens[:-1]) if w in group]
    return slots if len(slots) == 2 else f"{len(slots)} everyday attributes, not 2"


def _same_but(a: list[str], b: list[str]) -> list[int] | None:
    """The positions where two equally long token lists differ, a = an; None if their lengths
    differ."""
    if len(a) != len(b):
        return None
    return [i for i, (x, y) in enumerate(zip(a, b, strict=True)) if x != y and {x, y} != _ARTICLES]


def _everyday_swap(caption: list[str], swap: list[str], name: str) -> str | None:
    slots = _attributes(caption)
    if isinstance(slots, str):
        return f"the {name}: {slots}"
    i, j = slots
    changed = _same_but(caption, swap)
    if changed != [i, j] or (swap[i], swap[j]) != (caption[j], caption[i]):
        return f"the negative is not the {name} with its two attributes traded"
    return None


def _everyday_paraphrase(caption: list[str], para: list[str], name: str) -> str | None:
    """Why ``para`` is no paraphrase of ``caption`` binding its attributes to the same nouns."""
    slots = _attributes(caption)
    if isinstance(slots, str):
        return f"the {'query' if name == 'positive' else 'positive'}: {slots}"
    _, participles = _everyday_lexicon()
    extra = {"a", "an", "is", "being", "by", "wearing", "that", *participles}
    new = [w for w in para if w not in set(caption) | extra]
    if new:
        return f"the {name} says {new[0]!r}, which the caption does not"
    if para == caption:
        return f"the {name} equals the caption"
    pairs = set(itertools.pairwise(para))
    triples = set(zip(para, para[1:], para[2:], para[3:], strict=False))
    for i in slots:
        attribute, noun = caption[i], caption[i + 1]
        if (attribute, noun) not in pairs and (noun, "that", "is", attribute) not in triples:
            return f"the {name} does not bind {attribute!r} to {noun!r} as the caption does"
    return None


def _everyday(back: bool = False) -> Callable[[str, str, str], str | None]:
    def check(query: str, positive: str, negative: str) -> str | None:
        q, p, n = text_words(query), text_words(positive), text_words(negative)
        if back:
            return _everyday_swap(p, n, "positive") or _everyday_paraphrase(p, q, "query")
        return _everyday_swap(q, n, "query") or _everyday_paraphrase(q, p, "positive")

    return check


def _everyday_dropped(both: bool) -> Callable[[str, str, str], str | None]:
    def check(query: str, positive: str, negative: str) -> str | None:
        q, p = text_words(query), text_words(positive)
        problem = _everyday_swap(q, text_words(negative), "query")
        if problem:
            return problem
        slots = _attributes(q)
        assert not isinstance(slots, str)
        drops = [slots] if both else [[i] for i in slots]
        for drop in drops:
            if _same_but([w for k, w in enumerate(q) if k not in drop], p) == []:
                return None
        which = "both attributes" if both else "one of its attributes"
        return f"the positive is not the query without {which}"

    return check


def _everyday_replaced(noun: bool) -> Callable[[str, str, str], str | None]:
    def check(query: str, positive: str, negative: str) -> str | None:
        q, n = text_words(query), text_words(negative)
        problem = _everyday_paraphrase(q, text_words(positive), "positive")
        if problem:
            return problem
        changed = _same_but(q, n)
        if changed is None or len(changed) != 1:
            return "the negative is not the query with exactly one word replaced"
        old, new = q[changed[0]], n[changed[0]]
        if noun:
            if new in q or not any({old, new} <= set(g) for g in everyday_words().nouns):
                return f"the negative's {new!r} is no other noun of {old!r}'s group"
            return None
        slots = _attributes(q)
        assert not isinstance(slots, str)
        if changed[0] not in slots:
            return f"the negative replaces {old!r}, which is no attribute of the query"
        other = q[slots[0]] if changed[0] == slots[1] else q[slots[1]]
        if not _contradicts(old, new, other):
            return f"the negative's {new!r} does not contradict {old!r}"
        return None

    return check


def _contradicts(old: str, new: str, other: str) -> bool:
    """Whether ``new`` contradicts the everyday attribute ``old`` (``other``: the caption's
    other attribute): another colour or material than both, a size of the opposite kind (not
    ``other``), the opposite state (which may be ``other``)."""
    group, _ = _everyday_lexicon()
    was, now = group.get(old), group.get(new)
    if was in ("colors", "materials"):
        return now == was and new not in (old, other)
    if {was, now} == {"big", "small"}:
        return new != other
    return was is not None and was.startswith("state") and now == was and new != old


EVERYDAY_CHECKS: dict[str, Callable[[str, str, str], str | None]] = {
    "everyday": _everyday(),
    "everyday_back": _everyday(back=True),
    "everyday_omission": _everyday_dropped(both=False),
    "everyday_bare": _everyday_dropped(both=True),
    "everyday_replacement": _everyday_replaced(noun=False),
    "everyday_noun": _everyday_replaced(noun=True),
}
