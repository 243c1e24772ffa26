"""The row kinds of a training mix and the rule each must satisfy, read from its texts.

A triplet row names its kind in ``row_kind`` (:data:`ROW_KIND`); a row without it is a
``swap`` row, as ``bindkit synth split`` writes them. The makers (:mod:`bindkit.synth.augment`,
:mod:`bindkit.synth.everyday`) tag their rows; :func:`kind_problem` checks what each maker
guarantees, from the query, positive and negative alone (no example, no declared bindings), and
:func:`bindkit.synth.validate.validate_triplet` calls it for every kind but ``swap``.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable
from functools import cache

from bindkit.synth.controls import read_lines
from bindkit.synth.text import bag, words

ROW_KIND = "row_kind"
SWAP = "swap"

# kind -> the rule its rows satisfy (also the rule name of a rejection)
ROW_KINDS: dict[str, str] = {
    SWAP: "short query → caption vs the caption's swap: the negative a word-level permutation "
    "of the positive, not equal to it (the rules 'permutation' and 'negative_distinct')",
    "paraphrase": "caption → its pairs listed in its scene vs the caption's own swap: the "
    "negative a permutation of the query, not equal to it; the positive a list of "
    "attribute-object phrases, each bound so in the query (attributes before their object, "
    "or predicated of it), naming every word the swap moves, with no word the query lacks "
    "but a/an/and/in",
    "predication": "caption → each object's attributes stated of it vs the caption's own swap: "
    "as paraphrase, the positive 'the OBJECT was ATTRIBUTE(S)' clauses (words the query "
    "lacks: the/was/and/in)",
    "restatement": "caption → the caption without its attributes, the bindings stated after it, "
    "vs the caption's own swap: the negative a permutation of the query; the positive's first "
    "sentence the query without the stated attributes (a = an), then 'the OBJECT is "
    "ATTRIBUTE(S)' clauses, each bound so in the query",
    "synonym": "caption → the caption without its asides, relations reworded, vs the caption's "
    "own swap: the negative a permutation of the query; the positive another text with no word "
    "the query lacks but relation synonyms and a/an, naming the swapped words in the query's "
    "order (not the negative's)",
    "relation": "caption → the caption without its asides vs the caption with one relation "
    "contradicted: the negative the query with exactly one relation word replaced by its "
    "contrast (RELATION_CONTRASTS), every other character equal; the positive a shorter "
    "subsequence of the query's words that keeps the contradicted relation",
    "negation": "as relation, one verb negated instead (NEGATIONS)",
    "relation_listed": "caption → its pairs listed in its scene vs the caption with one relation "
    "contradicted: the negative as relation; the positive as paraphrase's",
    "negation_listed": "as relation_listed, one verb negated instead (NEGATIONS)",
    "everyday": "everyday caption → its paraphrase vs its attribute swap: the query holds two "
    "attributes, each before its noun; the negative the query with the two traded, every other "
    "word equal (a = an); the positive binds each attribute to the query's noun ('white "
    "shirt', 'cart that is white') with no word the query lacks but a/an/is/being/by/wearing/"
    "that and a past participle of the everyday actions",
    "everyday_back": "everyday paraphrase → its caption vs the caption's swap: as everyday, "
    "the positive (the caption) taking the query's place",
    "everyday_omission": "everyday caption → the caption with one attribute dropped vs its "
    "swap: the negative as everyday; the positive the query without one of its two attributes "
    "(a = an)",
    "everyday_bare": "everyday caption → the caption with both attributes dropped vs its swap: "
    "the negative as everyday; the positive the query without its two attributes (a = an)",
    "everyday_replacement": "everyday caption → its paraphrase vs the caption with one attribute "
    "contradicted: the positive as everyday; the negative the query with exactly one attribute "
    "replaced by a contradicting one (another colour or material than both, a size of the "
    "opposite kind, not the other attribute, or the opposite state)",
    "everyday_noun": "everyday caption → its paraphrase vs the caption with one noun replaced: "
    "the positive as everyday; the negative the query with exactly one noun replaced by another "
    "of its group (person, clothing, animal, thing) that the query does not name",
    # role scenes (bindkit.synth.roles): type "role", words of data/roles.toml only
    "role_verb": "active caption → its passive vs the caption with agent and patient swapped: "
    "query and positive say the same action, the negative the action with the roles swapped, "
    "active, its words the query's",
    "role_verb_back": "passive → its active caption vs the caption with the roles swapped: as "
    "role_verb, the query and positive trading places",
    "role_verb_passive": "active caption → its passive vs the passive of the roles swapped: as "
    "role_verb, the negative passive, its words the positive's",
    "role_relation": "placement ('X is on Y') → its converse ('Y is under X') vs the placement "
    "swapped ('Y is on X'): its words the query's",
    "role_relation_back": "converse → its placement vs the placement swapped: as role_relation, "
    "the query and positive trading places",
    "role_trait": "action with a trait on each end → its passive vs the traits traded (roles "
    "kept): negative_kind attribute",
    "role_trait_roles": "action with a trait on each end → its passive vs the roles swapped, each "
    "noun keeping its trait",
}

# A relation of the template captions and one that contradicts it (prepositions between objects
# and the locative verbs of synth.backends.template), for augment.relation_triplets' negatives.
RELATION_CONTRASTS = {
    "near": "far from",
    "beside": "far from",
    "next to": "far from",
    "behind": "in front of",
    "opposite": "on top of",
    "under": "on top of",
    "sat": "fell",
    "stood": "toppled",
    "rested": "rolled",
    "lay": "hung",
}


# The template captions' verbs (locative verbs and the copulas of predicative captions) negated.
NEGATIONS = {
    "sat": "did not sit",
    "stood": "did not stand",
    "rested": "did not rest",
    "remained": "did not remain",
    "lay": "did not lie",
    "waited": "did not wait",
    "stayed": "did not stay",
    "was": "was not",
    "were": "were not",
    "looked": "did not look",
    "seemed": "did not seem",
    "appeared": "did not appear",
    "had become": "had not become",
    "had turned": "had not turned",
}


# Words of the template captions' relations and others that mean (nearly) the same, for
# augment.synonym_triplets' positives: a rewording that keeps every relation.
RELATION_SYNONYMS = {
    "near": ("close to", "by", "beside"),
    "beside": ("next to", "alongside", "near"),
    "next to": ("beside", "alongside"),
    "behind": ("in back of", "at the back of"),
    "opposite": ("across from", "facing"),
    "under": ("beneath", "below"),
    "sat": ("rested", "was placed"),
    "stood": ("was standing", "was placed"),
    "rested": ("sat", "was lying"),
    "remained": ("stayed", "was still"),
    "lay": ("rested", "was lying"),
    "waited": ("sat", "was left"),
}

EVERYDAY_KINDS = tuple(k for k in ROW_KINDS if k.startswith("everyday"))
ROLE_KINDS = tuple(k for k in ROW_KINDS if k.startswith("role_"))
RELATION_KINDS = ("relation", "negation", "relation_listed", "negation_listed")

_ARTICLES = {"a", "an"}
# the words each rewording adds to the caption's own
_EXTRA = {
    "paraphrase": {"a", "an", "and", "in"},
    "predication": {"the", "was", "and", "in"},
    "restatement": {"the", "is", "and", "a", "an"},
}


@cache
def linking_words() -> frozenset[str]:
    """Copulas, change-of-state verbs and relative pronouns (``data/linking_words.txt``): what
    predicates an attribute of its object."""
    return frozenset(w for line in read_lines("linking_words.txt") for w in line.split())


def kind_of(row: dict[str, object]) -> str:
    """The row's kind: its ``row_kind``, ``swap`` when it has none."""
    kind = row.get(ROW_KIND, SWAP)
    return kind if isinstance(kind, str) else repr(kind)


def negative_kinds(kind: str) -> tuple[str, ...]:
    """The ``negative_kind`` values a row of ``kind`` may carry."""
    if kind in EVERYDAY_KINDS:
        return ("everyday",)
    if kind in ROLE_KINDS:
        return ("attribute",) if kind == "role_trait" else ("role",)
    if kind in RELATION_KINDS:
        return (kind.removesuffix("_listed"),)
    return ("attribute", "object")


def kind_problem(kind: str, query: str, positive: str, negative: str) -> str | None:
    """Why a row of ``kind`` (not ``swap``) breaks its rule (:data:`ROW_KINDS`), or None.

    Example:
        >>> kind_problem("relation", "A red cube sat quietly near a blue kite.",
        ...              "A red cube sat near a blue kite.",
        ...              "A red cube sat quietly far from a blue kite.")
        >>> kind_problem("relation", "A red cube sat quietly near a blue kite.",
        ...              "A red cube sat near a blue kite.",
        ...              "A red cube sat quietly near a blue cube.")
        'the negative is not the query with one relation word contradicted'
    """
    return _CHECKS[kind](query, positive, negative)


# -- caption rows: the caption's own swap ------------------------------------------------------
def _own_swap(query: str, negative: str) -> str | list[str]:
    """The words the swap moves (query order), or why the negative is not the query's swap."""
    q, n = words(query), words(negative)
    if bag(q) != bag(n) or len(q) != len(n):
        return "the negative is not a permutation of the query"
    moved = [a for a, b in zip(q, n, strict=True) if a != b and {a, b} != _ARTICLES]
    if not moved:
        return "the negative equals the query"
    return moved


def _names_moved(positive: list[str], moved: list[str]) -> str | None:
    missing = [w for w in moved if w not in positive]
    return f"the positive leaves out {missing[0]!r}, which the swap moves" if missing else None


def _new_words(text: list[str], reference: list[str], extra: Iterable[str]) -> str | None:
    allowed = set(reference) | set(extra)
    new = [w for w in text if w not in allowed]
    return f"the positive says {new[0]!r}, which the query does not" if new else None


def _phrases(text: str) -> list[str]:
    """A list's phrases: split at ", " and " and "."""
    return [p for p in re.split(r",\s+|\s+and\s+", text.strip()) if p]


def _listed(text: str) -> list[tuple[list[str], str]] | str:
    """The (attributes, object) groups of a listed positive ("A dry map, a sour camera and a
    marshy lamp, in a garage."), or why it is no list."""
    listing = text.lower().rstrip(".").split(", in ", 1)[0]
    groups = []
    for phrase in _phrases(listing):
        tokens = phrase.split()
        if len(tokens) < 3 or tokens[0] not in _ARTICLES:
            return f"the positive's {phrase!r} is no 'a ATTRIBUTE OBJECT' phrase"
        groups.append((tokens[1:-1], tokens[-1]))
    return groups


def _clauses(text: str, verb: str) -> list[tuple[list[str], str]] | str:
    """The (attributes, object) groups of "the OBJECT VERB ATTRIBUTE[ and ATTRIBUTE], the
    OBJECT [VERB] ATTRIBUTE ..." (a later clause may drop the verb), or why it is none."""
    groups: list[tuple[list[str], str]] = []
    for phrase in _phrases(text.lower().rstrip(".")):
        tokens = phrase.split()
        if tokens[0] == "the" and len(tokens) >= 3:
            rest = tokens[2:]
            if rest[0] == verb:
                rest = rest[1:]
            if len(rest) != 1:
                return f"the positive's {phrase!r} is no 'the OBJECT {verb} ATTRIBUTE' clause"
            groups.append((rest, tokens[1]))
        elif len(tokens) == 1 and groups:
            groups[-1][0].append(tokens[0])
        else:
            return f"the positive's {phrase!r} is no 'the OBJECT {verb} ATTRIBUTE' clause"
    return groups or "the positive states no binding"


def _bound_in(query: list[str], groups: list[tuple[list[str], str]]) -> str | None:
    """Why a group is not bound so in the query: its attributes neither directly before its
    object nor each predicated of it (the nearest group object before the attribute, a
    linking word between)."""
    objects = {o for _, o in groups}
    for attributes, obj in groups:
        if obj not in query or any(a not in query for a in attributes):
            return f"the query has no {' '.join([*attributes, obj])!r}"
        i = query.index(obj)
        if set(query[max(0, i - len(attributes)) : i]) == set(attributes):
            continue
        for a in attributes:
            j = query.index(a)
            before = [k for k in range(j) if query[k] in objects]
            if (
                not before
                or query[before[-1]] != obj
                or not (linking_words() & set(query[before[-1] + 1 : j]))
            ):
                return f"the positive binds {a!r} to {obj!r}; the query does not"
    return None


def _grouped(
    read: Callable[[str], list[tuple[list[str], str]] | str], extra: set[str]
) -> Callable[[str, str, str], str | None]:
    """A caption row's rule whose positive states groups (a list or clauses) of the query."""

    def check(query: str, positive: str, negative: str) -> str | None:
        moved = _own_swap(query, negative)
        if isinstance(moved, str):
            return moved
        return _states_groups(query, positive, read, extra) or _names_moved(words(positive), moved)

    return check


def _states_groups(
    query: str,
    positive: str,
    read: Callable[[str], list[tuple[list[str], str]] | str],
    extra: set[str],
) -> str | None:
    q = words(query)
    groups = read(positive)
    if isinstance(groups, str):
        return groups
    return _new_words(words(positive), q, extra) or _bound_in(q, groups)


def _restatement(query: str, positive: str, negative: str) -> str | None:
    moved = _own_swap(query, negative)
    if isinstance(moved, str):
        return moved
    stripped, dot, stated = positive.rpartition(". ")  # the caption may have two sentences
    if not dot:
        return "the positive has no second sentence stating the bindings"
    groups = _clauses(stated, "is")
    if isinstance(groups, str):
        return groups
    q = words(query)
    attributes = [a for attrs, _ in groups for a in attrs]
    left = list(q)
    for a in attributes:
        if a not in left:
            return f"the positive states {a!r}, which the query does not hold"
        left.remove(a)
    if bag(words(stripped)) != bag(left) or len(words(stripped)) != len(left):
        return "the positive's first sentence is not the query without its stated attributes"
    return _bound_in(q, groups) or _names_moved(words(positive), moved)


@cache
def _synonym_words() -> frozenset[str]:
    return frozenset(w for ws in RELATION_SYNONYMS.values() for s in ws for w in s.split())


def _synonym(query: str, positive: str, negative: str) -> str | None:
    moved = _own_swap(query, negative)
    if isinstance(moved, str):
        return moved
    q, p = words(query), words(positive)
    if p == q:
        return "the positive equals the query"
    problem = _new_words(p, q, _synonym_words() | _ARTICLES) or _names_moved(p, moved)
    if problem:
        return problem
    if [w for w in p if w in moved] != [w for w in q if w in moved]:
        return "the positive names the swapped words in another order than the query"
    return None


# -- relation and negation rows --------------------------------------------------------------
def _contradicted(query: str, negative: str, contrasts: dict[str, str]) -> str | None:
    """The relation word of ``query`` that ``negative`` contradicts (one occurrence replaced by
    its contrast, nothing else changed), or None."""
    pattern = re.compile(
        r"\b(" + "|".join(map(re.escape, sorted(contrasts, key=len, reverse=True))) + r")\b"
    )
    for m in pattern.finditer(query):
        if query[: m.start()] + contrasts[m.group(1)] + query[m.end() :] == negative:
            return m.group(1)
    return None


def _relation(negate: bool, listed: bool) -> Callable[[str, str, str], str | None]:
    def check(query: str, positive: str, negative: str) -> str | None:
        word = _contradicted(query, negative, NEGATIONS if negate else RELATION_CONTRASTS)
        if word is None:
            what = "verb negated" if negate else "relation word contradicted"
            return f"the negative is not the query with one {what}"
        if listed:
            return _states_groups(query, positive, _listed, _EXTRA["paraphrase"])
        q, p = words(query), words(positive)
        rest = iter(q)
        if len(p) >= len(q) or not all(w in rest for w in p):
            return "the positive is not the query with words left out"
        if not re.search(rf"\b{re.escape(word)}\b", positive):
            return f"the positive drops {word!r}, the relation the negative contradicts"
        return None

    return check


# -- everyday rows -----------------------------------------------------------------------------
@cache
def _everyday_lexicon() -> tuple[dict[str, str], frozenset[str]]:
    """Each everyday attribute's group (a colour, a material, a state pair, "big"/"small"), and
    the action participles a paraphrase may add."""
    from bindkit.synth.everyday import everyday_words

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
        q, p, n = words(query), words(positive), words(negative)
        if back:
            return _everyday_swap(p, n, "positive") or _everyday_paraphrase(p, q, "query")
        return _everyday_swap(q, n, "query") or _everyday_paraphrase(q, p, "positive")

    return check


def _everyday_dropped(both: bool) -> Callable[[str, str, str], str | None]:
    def check(query: str, positive: str, negative: str) -> str | None:
        q, p = words(query), words(positive)
        problem = _everyday_swap(q, words(negative), "query")
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
        q, n = words(query), words(negative)
        problem = _everyday_paraphrase(q, words(positive), "positive")
        if problem:
            return problem
        changed = _same_but(q, n)
        if changed is None or len(changed) != 1:
            return "the negative is not the query with exactly one word replaced"
        old, new = q[changed[0]], n[changed[0]]
        if noun:
            from bindkit.synth.everyday import everyday_words

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


def _role(kind: str, query: str, positive: str, negative: str) -> str | None:
    from bindkit.synth.roles import role_problem

    return role_problem(kind, query, positive, negative)


_CHECKS: dict[str, Callable[[str, str, str], str | None]] = {
    "paraphrase": _grouped(_listed, _EXTRA["paraphrase"]),
    "predication": _grouped(
        lambda t: _clauses(t.split(", in ", 1)[0], "was"), _EXTRA["predication"]
    ),
    "restatement": _restatement,
    "synonym": _synonym,
    "relation": _relation(negate=False, listed=False),
    "negation": _relation(negate=True, listed=False),
    "relation_listed": _relation(negate=False, listed=True),
    "negation_listed": _relation(negate=True, listed=True),
    "everyday": _everyday(),
    "everyday_back": _everyday(back=True),
    "everyday_omission": _everyday_dropped(both=False),
    "everyday_bare": _everyday_dropped(both=True),
    "everyday_replacement": _everyday_replaced(noun=False),
    "everyday_noun": _everyday_replaced(noun=True),
    **{kind: functools.partial(_role, kind) for kind in ROLE_KINDS},
}
assert set(_CHECKS) | {SWAP} == set(ROW_KINDS)
