"""Role binding scenes: who does what to whom ("a walrus tickles a lynx" is not "a lynx tickles
a walrus") and what lies on what ("an anvil is on a satchel" is not "a satchel is on an anvil"),
and the triplets built from them.

Attribute binding training leaves role binding where it was (SugarCrepe++ swap_obj, "a man riding
a horse" vs "a horse riding a man", moves 14 → 19 under binding-v1): its negatives trade
attributes, never the two ends of a relation. Each role scene says one relation between two
nouns three ways: actively ("A walrus tickles a lynx."), by its converse ("A lynx is tickled by a
walrus.", "A satchel is under an anvil.") and swapped ("A lynx tickles a walrus."). The swap has
the caption's words, the converse has the swap's word order: neither a bag of words nor word
order tells them apart, only who does what to whom.

The words are data (``data/roles.toml``, :func:`role_words`): nouns, verbs and traits that occur
in none of SugarCrepe, SugarCrepe++ and SICK, nor in the SABER vocabulary, so a gain there is
transfer (:func:`overlap` finds a word of the lexicon in other texts; the recipe's data step and
``bindkit synth mix --exclude-data`` refuse a role mix whose words a reported set contains).
"""

from __future__ import annotations

import random
import re
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any, TypeVar

from bindkit.errors import BindkitError
from bindkit.synth.everyday import article

T = TypeVar("T")
WORDS = "roles.toml"
ROLE_TYPE = "role"  # the ``type`` of every role row


@dataclass(frozen=True)
class RoleWords:
    """The lists of ``data/roles.toml``, in file order."""

    beings: tuple[str, ...]
    verbs: tuple[tuple[str, str], ...]  # (third person singular, past participle)
    traits: tuple[str, ...]
    things: tuple[str, ...]
    relations: tuple[tuple[str, str], ...]  # (relation, its converse)

    def lexicon(self) -> frozenset[str]:
        """Every content word a role row may hold (nouns, verb forms, traits)."""
        forms = [w for pair in self.verbs for w in pair]
        return frozenset((*self.beings, *forms, *self.traits, *self.things))


@cache
def role_words() -> RoleWords:
    """The packaged role word lists, read and checked once.

    Example:
        >>> role_words().verbs[0]
        ('tickles', 'tickled')
    """
    return read_role_words(files("bindkit.synth").joinpath(f"data/{WORDS}").read_text("utf-8"))


def read_role_words(text: str) -> RoleWords:
    """The lists of ``text`` (``roles.toml``'s format); a wrong shape is one line naming it."""
    data = tomllib.loads(text)

    def single(key: str) -> tuple[str, ...]:
        value = data.get(key)
        if not isinstance(value, list) or len(value) < 2:
            raise BindkitError(f"{WORDS}: {key} must list at least two words")
        if not all(isinstance(w, str) and re.fullmatch(r"[a-z]+", w) for w in value):
            raise BindkitError(f"{WORDS}: {key} must be single lower-case words")
        if len(set(value)) != len(value):
            raise BindkitError(f"{WORDS}: {key} names a word twice")
        return tuple(value)

    def pairs(key: str) -> tuple[tuple[str, str], ...]:
        value = data.get(key)
        if not isinstance(value, list) or not value:
            raise BindkitError(f"{WORDS}: {key} must be a non-empty list of [word, word] pairs")
        for pair in value:
            if not (
                isinstance(pair, list)
                and len(pair) == 2
                and all(isinstance(w, str) and re.fullmatch(r"[a-z]+( [a-z]+)*", w) for w in pair)
            ):
                raise BindkitError(f"{WORDS}: {key} must be a list of [word, word] pairs")
        return tuple((a, b) for a, b in value)

    words = RoleWords(
        beings=single("beings"),
        verbs=pairs("verbs"),
        traits=single("traits"),
        things=single("things"),
        relations=pairs("relations"),
    )
    if len(words.beings) < 2 or len(words.things) < 2:
        raise BindkitError(f"{WORDS}: beings and things need two words each")
    return words


def _cap(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def _np(noun: str, trait: str | None = None) -> str:
    """``a/an [trait] noun``."""
    head = noun if trait is None else f"{trait} {noun}"
    return f"{article(head)} {head}"


@dataclass(frozen=True)
class Action:
    """``agent`` does ``verb`` to ``patient``, each with an optional trait."""

    agent: str
    verb: tuple[str, str]
    patient: str
    agent_trait: str | None = None
    patient_trait: str | None = None

    def active(self) -> str:
        """ "A grumpy walrus tickles a timid lynx." """
        agent, patient = _np(self.agent, self.agent_trait), _np(self.patient, self.patient_trait)
        return _cap(f"{agent} {self.verb[0]} {patient}")

    def passive(self) -> str:
        """ "A timid lynx is tickled by a grumpy walrus." """
        agent, patient = _np(self.agent, self.agent_trait), _np(self.patient, self.patient_trait)
        return _cap(f"{patient} is {self.verb[1]} by {agent}")

    def roles_swapped(self) -> Action:
        """The patient does it to the agent; each keeps its trait."""
        return Action(self.patient, self.verb, self.agent, self.patient_trait, self.agent_trait)

    def traits_swapped(self) -> Action:
        """The same roles, the two traits traded."""
        return Action(self.agent, self.verb, self.patient, self.patient_trait, self.agent_trait)


@dataclass(frozen=True)
class Placement:
    """``first`` stands in ``relation`` (a :attr:`RoleWords.relations` pair) to ``second``."""

    first: str
    relation: tuple[str, str]
    second: str

    def stated(self) -> str:
        """ "An anvil is on a satchel." """
        return _cap(f"{_np(self.first)} is {self.relation[0]} {_np(self.second)}")

    def converse(self) -> str:
        """ "A satchel is under an anvil." """
        return _cap(f"{_np(self.second)} is {self.relation[1]} {_np(self.first)}")

    def swapped(self) -> Placement:
        return Placement(self.second, self.relation, self.first)


def _two(rng: random.Random, words: tuple[str, ...]) -> tuple[str, str]:
    first, second = rng.sample(words, 2)
    return first, second


def role_triplets(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """Triplets from ``count`` distinct scenes of each family (a family with fewer possible
    scenes, such as the placements' things² × relations, gives all of its own), in order:

    * ``role_verb``: the active caption → its passive vs the caption with agent and patient
      swapped ("A walrus tickles a lynx." → "A lynx is tickled by a walrus." vs "A lynx tickles
      a walrus."); ``role_verb_back``: the passive → the caption vs the same swap;
      ``role_verb_passive``: the caption → its passive vs the swap's passive (the positive's
      words, reordered);
    * ``role_relation``: a placement → its converse vs the placement swapped ("An anvil is on a
      satchel." → "A satchel is under an anvil." vs "A satchel is on an anvil.");
      ``role_relation_back``: the converse → the placement vs the swap;
    * ``role_trait``: an action with a trait on each end → its passive vs the traits traded
      ("A grumpy walrus tickles a timid lynx." → "A timid lynx is tickled by a grumpy walrus."
      vs "A timid walrus tickles a grumpy lynx."); ``role_trait_roles``: the same → its passive
      vs the roles swapped, each keeping its trait ("A timid lynx tickles a grumpy walrus.").

    Example:
        >>> rows = role_triplets(2)
        >>> len(rows), sorted({r["row_kind"] for r in rows})[:2]
        (14, ['role_relation', 'role_relation_back'])
    """
    if count < 1:
        raise BindkitError(f"role_triplets: count {count}: give at least 1")
    lists = role_words()
    beings, things, verbs = len(lists.beings), len(lists.things), len(lists.verbs)
    traits = len(lists.traits)

    def distinct(family: str, most: int, draw: Callable[[random.Random], T]) -> list[T]:
        """``count`` distinct scenes of a family (all of them when it has fewer), drawn in
        order by the family's own generator."""
        rng = random.Random(f"{seed}/role-{family}")
        seen: dict[Any, None] = {}
        while len(seen) < min(count, most):
            seen.setdefault(draw(rng))
        return list(seen)

    def draw_action(rng: random.Random) -> Action:
        agent, patient = _two(rng, lists.beings)
        return Action(agent, rng.choice(lists.verbs), patient)

    def draw_placement(rng: random.Random) -> Placement:
        first, second = _two(rng, lists.things)
        return Placement(first, rng.choice(lists.relations), second)

    def draw_traited(rng: random.Random) -> Action:
        agent, patient = _two(rng, lists.beings)
        verb = rng.choice(lists.verbs)
        one, other = _two(rng, lists.traits)
        return Action(agent, verb, patient, one, other)

    actions = distinct("actions", beings * (beings - 1) * verbs, draw_action)
    pairs = things * (things - 1) * len(lists.relations)
    placements = distinct("placements", pairs, draw_placement)
    combos = beings * (beings - 1) * verbs * traits * (traits - 1)
    traited = distinct("traits", combos, draw_traited)
    triples: list[tuple[str, str, str, str, str]] = []
    for action in actions:
        swap = action.roles_swapped()
        triples += [
            ("role_verb", "role", action.active(), action.passive(), swap.active()),
            ("role_verb_back", "role", action.passive(), action.active(), swap.active()),
            ("role_verb_passive", "role", action.active(), action.passive(), swap.passive()),
        ]
    for placement in placements:
        swapped = placement.swapped().stated()
        triples += [
            ("role_relation", "role", placement.stated(), placement.converse(), swapped),
            ("role_relation_back", "role", placement.converse(), placement.stated(), swapped),
        ]
    for action in traited:
        caption, passive = action.active(), action.passive()
        triples += [
            ("role_trait", "attribute", caption, passive, action.traits_swapped().active()),
            ("role_trait_roles", "role", caption, passive, action.roles_swapped().active()),
        ]
    return [
        {
            "query": query,
            "positive": positive,
            "negative": negative,
            "type": ROLE_TYPE,
            "negative_kind": negative_kind,
            "row_kind": kind,
        }
        for kind, negative_kind, query, positive, negative in triples
    ]


# -- reading a role sentence back (the validator's rules) --------------------------------------
@dataclass(frozen=True)
class Meaning:
    """What a role sentence says, however it is worded: (agent, trait), relation, (patient,
    trait); a placement's relation is its pair's first word, its ends ordered so."""

    agent: tuple[str, str | None]
    relation: str
    patient: tuple[str, str | None]
    voice: str  # "active", "passive", "stated" or "converse"

    def swapped(self) -> tuple[tuple[str, str | None], str, tuple[str, str | None]]:
        """The roles exchanged, each noun keeping its trait."""
        return (self.patient, self.relation, self.agent)

    def traits_traded(self) -> tuple[tuple[str, str | None], str, tuple[str, str | None]]:
        return ((self.agent[0], self.patient[1]), self.relation, (self.patient[0], self.agent[1]))

    def content(self) -> tuple[tuple[str, str | None], str, tuple[str, str | None]]:
        return (self.agent, self.relation, self.patient)


def _noun_phrase(tokens: list[str], nouns: Iterable[str]) -> tuple[tuple[str, str | None], int]:
    """``a [trait] noun`` at the start of ``tokens``: ((noun, trait), tokens used); the article
    must fit its next word."""
    lists = role_words()
    if len(tokens) < 2 or tokens[0] not in ("a", "an"):
        raise ValueError("no article")
    trait = tokens[1] if tokens[1] in lists.traits else None
    at = 2 if trait else 1
    if len(tokens) <= at or tokens[at] not in nouns:
        raise ValueError("no noun")
    if tokens[0] != article(tokens[1]):
        raise ValueError(f"{tokens[0]!r} before {tokens[1]!r}")
    return (tokens[at], trait), at + 1


def read_role(text: str) -> Meaning:
    """The :class:`Meaning` of a role sentence of :func:`role_triplets`.

    Raises:
        ValueError: ``text`` is none of the four forms in the lexicon's words.

    Example:
        >>> read_role("A lynx is tickled by a walrus.").content()
        (('walrus', None), 'tickles', ('lynx', None))
    """
    lists = role_words()
    tokens = re.findall(r"[a-z]+", text.lower())
    beings, things = set(lists.beings), set(lists.things)
    by_form = {form: pair for pair in lists.verbs for form in pair}
    first, used = _noun_phrase(tokens, beings | things)
    rest = tokens[used:]
    if first[0] in beings:
        if rest and rest[0] in by_form and rest[0] == by_form[rest[0]][0]:
            second, end = _noun_phrase(rest[1:], beings)
            if 1 + end == len(rest):
                return Meaning(first, rest[0], second, "active")
        if len(rest) > 2 and rest[0] == "is" and rest[2] == "by" and rest[1] in by_form:
            pair = by_form[rest[1]]
            if rest[1] == pair[1]:
                second, end = _noun_phrase(rest[3:], beings)
                if 3 + end == len(rest):
                    return Meaning(second, pair[0], first, "passive")
        raise ValueError("not an action of the role words")
    if not rest or rest[0] != "is":
        raise ValueError("not a placement: no 'is'")
    for relation, converse in lists.relations:
        for phrase, voice in ((relation, "stated"), (converse, "converse")):
            words = phrase.split()
            if rest[1 : 1 + len(words)] == words:
                second, end = _noun_phrase(rest[1 + len(words) :], things)
                if 1 + len(words) + end != len(rest):
                    continue
                if voice == "stated":
                    return Meaning(first, relation, second, voice)
                return Meaning(second, relation, first, voice)
    raise ValueError("not a placement of the role words")


# the negative's meaning, by kind: the roles swapped or the traits traded
_NEGATIVE = {
    "role_verb": ("swapped", "active"),
    "role_verb_back": ("swapped", "active"),
    "role_verb_passive": ("swapped", "passive"),
    "role_relation": ("swapped", "stated"),
    "role_relation_back": ("swapped", "stated"),
    "role_trait": ("traits", "active"),
    "role_trait_roles": ("swapped", "active"),
}
# (query voice, positive voice) by kind
_VOICES = {
    "role_verb": ("active", "passive"),
    "role_verb_back": ("passive", "active"),
    "role_verb_passive": ("active", "passive"),
    "role_relation": ("stated", "converse"),
    "role_relation_back": ("converse", "stated"),
    "role_trait": ("active", "passive"),
    "role_trait_roles": ("active", "passive"),
}
ROLE_KINDS = tuple(_NEGATIVE)


def role_problem(kind: str, query: str, positive: str, negative: str) -> str | None:
    """Why a row of role ``kind`` breaks its rule, or None: the query and positive say the same
    relation in the kind's two voices (:data:`_VOICES`); the negative says it with the roles
    swapped (or, for ``role_trait``, the traits traded), in the kind's negative voice (so its
    words are the query's or the positive's, reordered); a trait row has two different traits,
    other rows none.

    Example:
        >>> role_problem("role_verb", "A walrus tickles a lynx.", "A lynx is tickled by a "
        ...              "walrus.", "A lynx tickles a walrus.")
        >>> role_problem("role_verb", "A walrus tickles a lynx.", "A lynx is tickled by a "
        ...              "walrus.", "A walrus tickles a lynx.")
        'the negative does not swap the roles of the query'
    """
    meanings = []
    for name, text in (("query", query), ("positive", positive), ("negative", negative)):
        try:
            meanings.append(read_role(text))
        except ValueError as exc:
            return f"the {name} is no role sentence of the role words ({exc})"
    q, p, n = meanings
    voices = _VOICES[kind]
    if (q.voice, p.voice) != voices:
        return f"the query and positive are {q.voice}/{p.voice}, not {voices[0]}/{voices[1]}"
    if q.content() != p.content():
        return "the positive does not say what the query says"
    traits = (q.agent[1], q.patient[1])
    wanted_traits = kind.startswith("role_trait")
    if (None not in traits and traits[0] != traits[1]) != wanted_traits or (
        not wanted_traits and traits != (None, None)
    ):
        return "a trait row has two different traits, other rows none"
    change, voice = _NEGATIVE[kind]
    wanted = q.swapped() if change == "swapped" else q.traits_traded()
    if n.content() != wanted:
        what = "swap the roles" if change == "swapped" else "trade the traits"
        return f"the negative does not {what} of the query"
    if n.voice != voice:
        return f"the negative is {n.voice}, not {voice}"
    return None


# -- keeping the words out of reported sets ----------------------------------------------------
def _stem(word: str) -> str:
    """A crude stem: one of -ing/-ed/-es/-s/-er dropped (three letters kept), then a final e."""
    for suffix in ("ing", "ed", "es", "s", "er"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word.rstrip("e")


def overlap(texts: Iterable[str], lexicon: Iterable[str] | None = None) -> list[str]:
    """The words of ``lexicon`` (default: the role words') that occur in ``texts``, also as
    another inflection ("tickling" for "tickles"), sorted.

    Example:
        >>> overlap(["Two men were tickling a cat."], ["tickles", "walrus"])
        ['tickles']
    """
    seen: set[str] = set()
    for text in texts:
        seen.update(re.findall(r"[a-z]+", text.lower()))
    stems = {_stem(w) for w in seen}
    words = role_words().lexicon() if lexicon is None else lexicon
    return sorted(w for w in set(words) if w in seen or w in stems or _stem(w) in stems)


def file_texts(path: Any) -> list[str]:
    """Every string of a data file or of the ``.json``/``.jsonl``/``.txt``/``.tsv`` files of a
    folder (JSON read as JSON, other files as lines): what :func:`overlap` reads of a
    reported set."""
    import json
    from pathlib import Path

    path = Path(path)
    found = (
        sorted(p for p in path.rglob("*") if p.suffix in (".json", ".jsonl", ".txt", ".tsv"))
        if path.is_dir()
        else [path]
    )
    texts: list[str] = []

    def strings(value: Any) -> None:
        if isinstance(value, str):
            texts.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                strings(item)
        elif isinstance(value, list):
            for item in value:
                strings(item)

    for file in found:
        text = file.read_text(encoding="utf-8", errors="replace")
        if file.suffix == ".json":
            try:
                strings(json.loads(text))
                continue
            except ValueError:
                pass
        texts.extend(text.splitlines())
    return texts
