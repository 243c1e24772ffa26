"""The row kinds of a training mix and the rule each must satisfy, read from its texts.

A triplet row names its kind in ``row_kind`` (:data:`ROW_KIND`); a row without it is a
``swap`` row, as ``bindkit synth split`` writes them. The makers (:mod:`bindkit.synth.augment`,
:mod:`bindkit.synth.everyday`, :mod:`bindkit.synth.roles`) tag their rows; :func:`kind_problem`
checks what each maker guarantees, from the query, positive and negative alone (no example, no
declared bindings): the caption rows' rules are here, the everyday and role rows' beside their
makers (:data:`bindkit.synth.everyday.EVERYDAY_CHECKS`, :func:`bindkit.synth.roles.role_problem`).
:func:`validate_triplet` is a row's whole check (schema, held-out membership, then its kind's
rule); :mod:`bindkit.synth.validate` calls it on every line of a triplet file.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable
from functools import cache

from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.controls import controls, read_lines
from bindkit.synth.everyday import EVERYDAY_CHECKS
from bindkit.synth.rejection import Rejection
from bindkit.synth.text import bag, indefinite_article, words

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
# the rules every triplet row satisfies before its kind's (:func:`validate_triplet`); every
# other rejection of a row is named after its kind
TRIPLET_RULES: dict[str, str] = {
    "schema": "a triplet row has query, positive, negative (strings), a known row_kind (none: "
    "swap), a type and negative_kind its kind takes (a construction and attribute|object; "
    "relation and negation rows relation|negation; everyday rows everyday; role rows type role, "
    "negative_kind role, or attribute for role_trait)",
    "permutation": "swap rows: the negative is a word-level permutation of the positive (a = an)",
    "negative_distinct": "swap rows: the negative differs from the positive",
    "heldout_in_split": "no held-out (deferred_bind) type in a train, val or test split, read "
    "from the text of the query and positive ('respectively', 'the former/latter', 'the first "
    "... the second') as well as from 'type'",
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


# -- every triplet row: schema, held-out membership, then its kind's rule ----------------------
def reads_deferred(text: str) -> bool:
    """Whether a caption reads as a held-out deferred_bind one, whatever its declared type:
    "respectively", "the former", "the latter", or both "the first" and "the second"."""
    tokens = words(text)
    bigrams = set(itertools.pairwise(tokens))
    return (
        "respectively" in tokens
        or ("the", "former") in bigrams
        or ("the", "latter") in bigrams
        or {("the", "first"), ("the", "second")} <= bigrams
    )


def validate_triplet(obj: object, split: str | None) -> list[Rejection]:
    """Every rule violation of one triplet row (``{"query", "positive", "negative", "type",
    "negative_kind"}`` and optionally ``row_kind``; other keys are allowed): the schema, held-out
    membership, then the rule of its row kind (:data:`ROW_KINDS`; a row
    without ``row_kind`` is a swap row, as ``bindkit synth split`` writes them)."""
    if not isinstance(obj, dict):
        return [Rejection("schema", "a triplet must be a JSON object")]
    for key in ("query", "positive", "negative", "type", "negative_kind"):
        if not isinstance(obj.get(key), str):
            return [Rejection("schema", f"field {key!r} must be a string")]
    kind = kind_of(obj)
    if kind not in ROW_KINDS:
        message = f"unknown {ROW_KIND} {kind!r}; use one of {', '.join(ROW_KINDS)}"
        return [Rejection("schema", message)]
    own = "everyday" if kind in EVERYDAY_KINDS else "role" if kind in ROLE_KINDS else None
    if (obj["type"] != own) if own else (obj["type"] not in CONSTRUCTIONS):
        wanted = own or "a construction"
        row = f"{indefinite_article(kind)} {kind} row"
        return [Rejection("schema", f"type {obj['type']!r}: {row}'s type is {wanted}")]
    if obj["negative_kind"] not in negative_kinds(kind):
        wanted = " or ".join(repr(k) for k in negative_kinds(kind))
        row = f"{indefinite_article(kind)} {kind} row"
        return [Rejection("schema", f"negative_kind must be {wanted} in {row}")]
    if split in ("train", "val", "test"):
        if obj["type"] in controls()["splits"]["heldout"]:
            message = f"{obj['type']} is held out of the {split} split"
            return [Rejection("heldout_in_split", message)]
        for field in ("positive", "query"):
            if reads_deferred(obj[field]):
                return [
                    Rejection(
                        "heldout_in_split",
                        f"the {field} reads as a held-out deferred_bind caption (type "
                        f"{obj['type']!r} declared) in the {split} split",
                    )
                ]
    if kind != SWAP:
        problem = kind_problem(kind, obj["query"], obj["positive"], obj["negative"])
        return [Rejection(kind, problem)] if problem else []
    if bag(obj["negative"]) != bag(obj["positive"]):
        return [Rejection("permutation", "the negative is not a permutation of the positive")]
    if words(obj["negative"]) == words(obj["positive"]):
        return [Rejection("negative_distinct", "the negative equals the positive")]
    return []


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
    **EVERYDAY_CHECKS,
    **{kind: functools.partial(_role, kind) for kind in ROLE_KINDS},
}
assert set(_CHECKS) | {SWAP} == set(ROW_KINDS)
