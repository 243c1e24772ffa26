"""The strict validator of synthetic binding examples. Every rejection names its rule.

Usable alone (``bindkit synth validate FILE``) on generated data or data users bring.
"""

from __future__ import annotations

import itertools
import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from itertools import compress
from itertools import count as counter
from operator import ne
from pathlib import Path
from typing import Any

from bindkit.errors import DataFormatError
from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.controls import bands, controls, length_ok, read_lines, windows
from bindkit.synth.example import Example
from bindkit.synth.rowkinds import (
    EVERYDAY_KINDS,
    ROLE_KINDS,
    ROW_KIND,
    ROW_KINDS,
    SWAP,
    kind_of,
    kind_problem,
    linking_words,
    negative_kinds,
)
from bindkit.synth.text import WORD, bag, indefinite_article, words

RULES: dict[str, str] = {
    "schema": "the example has every field with the right type",
    "single_word": "attributes and objects are single lower-case words",
    "distinct": "all objects and attributes are distinct, and match the construction's counts",
    "once": "each object and attribute appears exactly once in the query, positive and both "
    "negatives",
    "query": "the query lists exactly the queried pairs, each attribute before its object",
    "permutation": "each negative is a word-level permutation of the positive (a = an)",
    "negative_distinct": "the negatives differ from the positive and from each other",
    "moved_words": "a negative moves only attribute words (attribute negative) or object words "
    "(object negative), besides article repairs",
    "bindings": "each negative breaks the bindings its construction breaks and expresses the "
    "intended wrong bindings",
    "article": "no article error in a negative that the positive does not have",
    "structure": "the construction's structure (adjacency, detachment, deferral)",
    "anaphora": "deferred_bind_anaphoric refers back to each noun after both nouns with "
    "the former/latter or the first/second, never a bare it/they or 'the one ... the other'",
    "length": "the positive's word count is in its band (one word below to four above)",
    "distance": "the binding distance is in its window",
    "punctuation": "each negative keeps the positive's punctuation and spacing",
    "agreement": "no 'a'/'an' before a plural-only noun (pliers, scissors, tongs, ...)",
    "kept_pair": "triple_bind_swap: both negatives keep the same queried pair bound",
    "slot_swap": "attr_bundle: the attribute negative swaps two attributes of one slot",
    "predication": "predicative: each attribute follows its object, detached by a copula, a "
    "change-of-state verb or a relative clause",
    "text_bindings": "the predicative or anaphoric positive states exactly the queried bindings "
    "(read from the text, not from 'targets' or 'intended')",
    "declared_band": "a declared length band is one of the configured bands of the type",
    "declared_window": "a declared distance window is one of the configured windows of the type",
    "distractors": "declared distractors (at most the configured number, only for the types "
    "that take them) appear in the positive",
    "text_pairs": "every attribute-object phrase in the positive (a lexicon or queried "
    "attribute directly before a lexicon or queried object) is a queried pair or a declared "
    "distractor",
    "slot_lexicon": "attr_bundle: the attribute lexicon's family of a known attribute is its "
    "declared slot (when the slot is a family name); an object's two attributes come from "
    "different families",
}
DATASET_RULES: dict[str, str] = {
    "duplicate_id": "every example id is unique in the file",
    "duplicate_set": "no two examples of one type share the full attribute+object set",
    "frequency_cap": "replayed in file order, no example uses a word already at its running cap "
    "max(min_cap, fraction x examples before it)",
    "mix": "each type's share of the file is its configured share (within 1 % of the file, "
    "at least one example)",
    "anaphoric_balance": "half the deferred_bind_anaphoric examples assign the second noun "
    "first (within 2 % of them, at least one example)",
}
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
# every other row kind's rule is named after the kind (bindkit.synth.rowkinds.ROW_KINDS)
SPLIT_SET_RULES: dict[str, str] = {
    "split_leak": "no positive or negative text, and no id, appears in two of a split set's "
    "train, val, test and held-out files",
}
_REFERENT = {"former": 0, "first": 0, "latter": 1, "second": 1}
_ARTICLES = ("a", "an")
_BARE = {"it", "they", "them", "its", "their"}


@cache
def plural_only() -> frozenset[str]:
    """Plural-only nouns that take no indefinite article (``data/plural_only.txt``)."""
    return frozenset(w for line in read_lines("plural_only.txt") for w in line.split())


@dataclass(frozen=True)
class Rejection:
    rule: str
    message: str


def validate_example(ex: Example) -> list[Rejection]:
    """Every rule violation of one example (empty when it is valid)."""
    out: list[Rejection] = []

    def bad(rule: str, message: str) -> list[Rejection]:
        out.append(Rejection(rule, message))
        return out

    c = CONSTRUCTIONS[ex.type]
    objects = ex.objects
    attributes_of = {o: ex.attributes_of(o) for o in objects}
    vocab = ex.attributes + objects
    for w in vocab:
        if not (w.isalpha() and w.isascii() and w.islower()):
            return bad("single_word", f"{w!r} is not a single lower-case word")
    if (
        len(set(vocab)) != len(vocab)
        or len(objects) != c.objects
        or any(len(attributes_of[o]) != c.attributes_per_object for o in objects)
    ):
        return bad(
            "distinct",
            f"needs {c.objects} distinct objects with "
            f"{c.attributes_per_object} distinct attribute(s) each",
        )
    if c.family == "bundle" and not _bundle_slots_ok(ex):
        return bad("distinct", "attr_bundle needs two slots, each object one attribute per slot")

    tokens = {
        "query": words(ex.query),
        "positive": words(ex.positive),
        "attribute negative": words(ex.negatives["attribute"]),
        "object negative": words(ex.negatives["object"]),
    }
    # the negatives inherit the positive's counts once they are shown to be permutations of it
    for name in ("query", "positive"):
        toks = tokens[name]
        for w in vocab:
            if toks.count(w) != 1:
                return bad("once", f"{name}: {w!r} appears {toks.count(w)} times")
        for token in (t for t in toks if not t.isalnum()):  # hyphenated or elided
            inside = sorted(set(re.split(r"['’-]", token)) & set(vocab))
            if inside:
                return bad("once", f"{name}: {inside[0]!r} appears again inside {token!r}")
    for da, do in ex.distractors:
        if da in vocab or do in vocab:
            return bad("once", f"distractor [{da}, {do}] reuses a queried word")
    problem = _distractors(ex, c.name, tokens["positive"])
    if problem:
        return bad("distractors", problem)
    if c.family == "bundle":
        problem = _slot_lexicon(ex)
        if problem:
            return bad("slot_lexicon", problem)
    for name, toks in tokens.items():
        if name != "query":
            problem = _agreement(toks)
            if problem:
                return bad("agreement", f"{name}: {problem}")

    q = tokens["query"]
    if sorted(t for t in q if t not in ("a", "an", "and")) != sorted(vocab):
        return bad("query", "the query must hold exactly the queried attributes and objects")
    for o in objects:
        before = set(q[max(0, q.index(o) - c.attributes_per_object) : q.index(o)])
        if before != set(attributes_of[o]):
            return bad("query", f"the attributes of {o!r} must directly precede it in the query")

    p = tokens["positive"]
    changes: dict[str, list[int]] = {}
    for kind in ("attribute", "object"):
        n = tokens[f"{kind} negative"]
        # same length and the same words at the changed positions = same multiset of words
        if len(n) != len(p):
            return bad("permutation", f"the {kind} negative is not a permutation of the positive")
        diff = list(compress(counter(), map(ne, p, n)))
        if bag([p[i] for i in diff]) != bag([n[i] for i in diff]):
            return bad("permutation", f"the {kind} negative is not a permutation of the positive")
        changes[kind] = diff
        if _skeleton(ex.negatives[kind]) != _skeleton(ex.positive):
            return bad("punctuation", f"the {kind} negative changes the positive's punctuation")
    a_neg, o_neg = tokens["attribute negative"], tokens["object negative"]
    if a_neg in (p, o_neg) or o_neg == p:
        return bad("negative_distinct", "a negative equals the positive or the other negative")

    where = {w: p.index(w) for w in vocab}
    bound_object = {a: o for a, o in ex.bindings}
    queried = set(ex.bindings)
    kept_by_kind: dict[str, set[tuple[str, str]]] = {}
    for kind in ("attribute", "object"):
        n = tokens[f"{kind} negative"]
        movable = {where[w] for w in (ex.attributes if kind == "attribute" else objects)}
        changed = set(changes[kind])
        stray = [i for i in changed - movable if {p[i], n[i]} != {"a", "an"}]
        if stray:
            return bad("moved_words", f"the {kind} negative changes {p[stray[0]]!r}")
        if kind == "attribute":
            derived = {(n[where[a]], bound_object[a]) for a in ex.attributes}
        else:
            derived = {(a, n[where[o]]) for o in objects for a in attributes_of[o]}
        intended = set(ex.intended.get(kind, ())) or None
        if intended is not None and derived != intended:
            return bad(
                "bindings",
                f"the {kind} negative expresses {sorted(derived)}, intended {sorted(intended)}",
            )
        kept = kept_by_kind[kind] = derived & queried
        if c.family == "bundle" and kind == "attribute":
            slots = ex.slots or {}
            crossed = [i for i in changed if slots.get(p[i]) != slots.get(n[i])]
            if crossed:
                i = crossed[0]
                return bad(
                    "slot_swap",
                    f"the attribute negative puts {n[i]!r} ({slots.get(n[i])}) where "
                    f"{p[i]!r} ({slots.get(p[i])}) stood",
                )
        allowed_kept = _kept_bindings(ex, kind)
        if len(kept) != allowed_kept:
            return bad(
                "bindings",
                f"the {kind} negative keeps {len(kept)} queried binding(s); "
                f"{ex.type} keeps {allowed_kept}",
            )
        new_error = _new_article_error(p, n, changed)
        if new_error is not None:
            i = new_error
            return bad("article", f"the {kind} negative has '{n[i]} {n[i + 1]}'")

    if ex.type == "triple_bind_swap":
        kept_pairs = {kind: sorted(k) for kind, k in kept_by_kind.items()}
        declared = ex.targets.get("kept")
        if kept_pairs["attribute"] != kept_pairs["object"] or (
            declared is not None and kept_pairs["attribute"][0][1] != declared
        ):
            return bad(
                "kept_pair",
                f"the attribute negative keeps {kept_pairs['attribute']}, the object negative "
                f"{kept_pairs['object']}" + (f", declared {declared!r}" if declared else ""),
            )

    broken = _structure(ex, c.family, p, where, objects, attributes_of)
    if broken:
        return bad(*broken)
    problem = _undeclared_pair(ex, p)
    if problem:
        return bad("text_pairs", problem)

    count = len(p)
    configured_bands = _shifted_bands(ex)
    band = ex.targets.get("length_band")
    if band is not None and (int(band[0]), int(band[1])) not in configured_bands:
        return bad("declared_band", f"{list(band)} is not a band of {ex.type}")
    allowed_bands = [(int(band[0]), int(band[1]))] if band else configured_bands
    if not any(length_ok(count, b) for b in allowed_bands):
        return bad("length", f"{count} words, outside {allowed_bands}")
    distance = binding_distance(ex, p, where, objects, attributes_of)
    window = ex.targets.get("distance_window")
    if window is not None and (int(window[0]), int(window[1])) not in windows(c):
        return bad("declared_window", f"{list(window)} is not a distance window of {ex.type}")
    allowed_windows = [(int(window[0]), int(window[1]))] if window else windows(c)
    if not any(lo <= distance <= hi for lo, hi in allowed_windows):
        return bad("distance", f"binding distance {distance}, outside {allowed_windows}")
    return out


def _new_article_error(p: list[str], n: list[str], changed: set[int]) -> int | None:
    """The first article of ``n`` that disagrees with its next word where ``p`` had none, looking
    only at and just before the changed positions (elsewhere ``n`` equals ``p``)."""
    last = len(n) - 1
    for j in sorted({i - 1 for i in changed} | changed):
        if 0 <= j < last and n[j] in _ARTICLES and indefinite_article(n[j + 1]) != n[j]:
            positive_error = p[j] in _ARTICLES and indefinite_article(p[j + 1]) != p[j]
            if not positive_error:
                return j
    return None


def _skeleton(text: str) -> list[str]:
    """What lies between the words: punctuation and spacing."""
    return WORD.split(text)


def _agreement(tokens: list[str]) -> str | None:
    """An indefinite article before a plural-only noun, up to two attribute words apart."""
    if plural_only().isdisjoint(tokens):
        return None
    for i, token in enumerate(tokens):
        if token in plural_only():
            for j in range(max(0, i - 3), i):
                if tokens[j] in _ARTICLES:
                    return f"'{' '.join(tokens[j : i + 1])}' (a plural-only noun takes no 'a')"
    return None


def _distractors(ex: Example, kind: str, positive: list[str]) -> str | None:
    if not ex.distractors:
        return None
    config = controls()["distractors"]
    if kind not in config["types"]:
        return f"{kind} takes no distractors"
    if len(ex.distractors) > int(config["max"]):
        return f"{len(ex.distractors)} distractors, at most {config['max']}"
    for a, o in ex.distractors:
        if positive.count(a) != 1 or positive.count(o) != 1:
            return f"the distractor [{a}, {o}] is not in the positive once"
    return None


@cache
def attribute_lexicon() -> dict[str, str]:
    """Known attribute words and their family (``data/adjectives.txt``)."""
    from bindkit.synth.controls import adjective_families

    return {w: f for f, ws in adjective_families().items() for w in ws}


@cache
def object_lexicon() -> frozenset[str]:
    """Known object words: the template nouns and the packaged SABER objects (the head noun,
    the last word, of a two-word one: "globe" of "snow globe", not "snow")."""
    from bindkit.saber.vocab import load_vocabulary

    nouns = " ".join(read_lines("template_objects.txt")).split()
    saber = [o.split()[-1] for o in load_vocabulary().objects]
    return frozenset([*nouns, *saber])


def _undeclared_pair(ex: Example, positive: list[str]) -> str | None:
    """The first "attribute object" bigram of the positive that is neither queried nor a
    declared distractor (e.g. "near a sour camera" with no distractors)."""
    attributes = attribute_lexicon().keys() | set(ex.attributes) | {a for a, _ in ex.distractors}
    # a queried attribute is no object here ("a minuscule rubber statue")
    objects = object_lexicon() | set(ex.objects) | {o for _, o in ex.distractors}
    objects -= {*ex.attributes, *(a for a, _ in ex.distractors)}
    declared = {*ex.bindings, *ex.distractors}
    for a, o in itertools.pairwise(positive):
        if a in attributes and o in objects and (a, o) not in declared:
            return f"'{a} {o}' is in the positive but is neither a queried pair nor a distractor"
    return None


def _slot_lexicon(ex: Example) -> str | None:
    family = attribute_lexicon()
    families = set(family.values())
    slots = ex.slots or {}
    for a in ex.attributes:
        if a in family and slots.get(a) in families and slots[a] != family[a]:
            return f"{a!r} is a {family[a]} word, declared slot {slots[a]!r}"
    for o in ex.objects:
        known = [family[a] for a in ex.attributes_of(o) if a in family]
        if len(known) != len(set(known)):
            return f"the attributes of {o!r} are both {known[0]} words; use two families"
    return None


def unverifiable_slots(ex: Example) -> int:
    """attr_bundle attributes the lexicon does not know (their slot cannot be checked)."""
    if CONSTRUCTIONS[ex.type].family != "bundle":
        return 0
    return sum(a not in attribute_lexicon() for a in ex.attributes)


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


def _bundle_slots_ok(ex: Example) -> bool:
    slots = ex.slots or {}
    if set(slots) != set(ex.attributes):
        return False
    per_object = [sorted(slots[a] for a in ex.attributes_of(o)) for o in ex.objects]
    return len(set(per_object[0])) == 2 and per_object[0] == per_object[1]


def _kept_bindings(ex: Example, kind: str) -> int:
    if ex.type == "triple_bind_swap":
        return 1
    if ex.type == "attr_bundle" and kind == "attribute":
        return 2  # the attributes of the other slot stay on their objects
    return 0


def _shifted_bands(ex: Example) -> list[tuple[int, int]]:
    c = CONSTRUCTIONS[ex.type]
    found = bands(c)
    if c.objects == 3:
        lo, hi = controls()["length"]["three_object_shift"]
        return [(b[0] + s, b[1] + s) for b in found for s in range(lo, hi + 1)]
    return found


def _structure(
    ex: Example,
    family: str,
    p: list[str],
    where: dict[str, int],
    objects: list[str],
    attributes_of: dict[str, list[str]],
) -> tuple[str, str] | None:
    if family in ("adjacent", "bundle"):
        for o in objects:
            before = set(p[max(0, where[o] - len(attributes_of[o])) : where[o]])
            if before != set(attributes_of[o]):
                return ("structure", f"the attribute(s) of {o!r} must directly precede it")
        return None
    for a, o in ex.bindings:
        if abs(where[a] - where[o]) <= 1:
            return ("structure", f"{a!r} must not be adjacent to {o!r} in {ex.type}")
    if family == "predicative":
        for a in ex.attributes:
            if where[a] + 1 < len(p) and p[where[a] + 1] in objects:
                return ("structure", f"the bigram '{a} {p[where[a] + 1]}' must not appear")
        return _predication(ex, p, where, objects)
    if max(where[o] for o in objects) > min(where[a] for a in ex.attributes):
        return ("structure", "both nouns must come before any attribute")
    if ex.type == "deferred_bind_anaphoric":
        if _BARE & set(p):
            return ("anaphora", f"a bare {sorted(_BARE & set(p))[0]!r} is ambiguous")
        stated = anaphoric_bindings(p, where, objects, ex.attributes)
        if isinstance(stated, str):
            return ("anaphora", stated)
        if set(stated) != set(ex.bindings):
            return ("text_bindings", f"the text binds {sorted(stated)}")
    else:
        if "respectively" not in p:
            return ("structure", "deferred_bind_respective needs 'respectively'")
        first, second = sorted(objects, key=lambda o: where[o])
        if where[attributes_of[first][0]] > where[attributes_of[second][0]]:
            return ("structure", "attributes must follow the nouns' order")
    return None


def _predication(
    ex: Example, p: list[str], where: dict[str, int], objects: list[str]
) -> tuple[str, str] | None:
    """Each attribute is predicated of the nearest queried object before it, through a linking
    word (copula, change-of-state verb, relative pronoun) between the two."""
    linking = linking_words()
    for a, o in ex.bindings:
        before = [x for x in objects if where[x] < where[a]]
        if not before:
            return ("predication", f"{a!r} comes before every object; nothing is predicated")
        subject = max(before, key=lambda x: where[x])
        if not linking & set(p[where[subject] + 1 : where[a]]):
            return (
                "predication",
                f"no copula, verb or relative clause between {subject!r} and {a!r}",
            )
        if subject != o:
            return ("text_bindings", f"the text says {subject!r} is {a!r}; declared {o!r}")
    return None


def anaphoric_bindings(
    p: list[str], where: dict[str, int], objects: list[str], attributes: list[str]
) -> list[tuple[str, str]] | str:
    """The bindings an anaphoric caption states: each attribute goes to the noun that the
    nearest "the former/latter/first/second" before it (and after both nouns) refers to.
    A string says why the text states none."""
    order = sorted(objects, key=lambda o: where[o])
    last_noun = where[order[-1]]
    markers = [i for i in range(last_noun + 2, len(p)) if p[i] in _REFERENT and p[i - 1] == "the"]
    stated = []
    for a in attributes:
        before = [i for i in markers if i < where[a]]
        if not before:
            return f"no 'the former/latter/first/second' after the nouns refers to {a!r}"
        stated.append((a, order[_REFERENT[p[before[-1]]]]))
    if len({o for _, o in stated}) != len(stated):
        return "both attributes refer back to the same noun"
    return stated


def anaphoric_order(ex: Example) -> str | None:
    """ "first_first" or "second_first" as the text says (None when it says neither)."""
    p = words(ex.positive)
    if any(p.count(w) != 1 for w in ex.vocabulary()):
        return None
    where = {w: p.index(w) for w in ex.vocabulary()}
    first = min(ex.objects, key=lambda o: where[o])
    earliest = min(ex.attributes, key=lambda a: where[a])
    return "first_first" if ex.attributes_of(first) == [earliest] else "second_first"


def binding_distance(
    ex: Example,
    p: list[str],
    where: dict[str, int],
    objects: list[str],
    attributes_of: dict[str, list[str]],
) -> int:
    """The seed's binding distance: for adjacent types the fewest words between consecutive
    core phrases; predicative the smaller object-attribute distance; deferred the words from
    the last object to the first attribute."""
    family = CONSTRUCTIONS[ex.type].family
    if family in ("adjacent", "bundle"):
        spans = sorted((min(where[x] for x in [o, *attributes_of[o]]), where[o]) for o in objects)
        return min(b[0] - a[1] - 1 for a, b in itertools.pairwise(spans))
    if family == "predicative":
        return min(abs(where[a] - where[o]) - 1 for a, o in ex.bindings)
    return min(where[a] for a in ex.attributes) - max(where[o] for o in objects) - 1


Failure = tuple[str, str, Rejection]  # (file:line, example id, rejection)


@dataclass(frozen=True)
class Seen:
    """What the file-level rules need of one parsed example."""

    where: str
    id: str
    type: str
    vocabulary: tuple[str, ...]
    attributes: int
    order: str | None
    unverifiable: int = 0  # attr_bundle attributes the lexicon does not know


def _check_lines(
    name: str, first_line: int, lines: list[str], kind: str, split: str | None
) -> tuple[list[Failure], list[Seen]]:
    """Validate raw JSONL lines (a chunk of a file); runs in worker processes too."""
    import json

    failures: list[Failure] = []
    seen: list[Seen] = []
    for offset, line in enumerate(lines):
        where = f"{name}:{first_line + offset}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            failures.append((where, "?", Rejection("schema", f"corrupt JSON ({exc.msg})")))
            continue
        if kind == "triplets":
            failures += [(where, "?", r) for r in validate_triplet(obj, split)]
            continue
        try:
            ex = Example.from_json(obj, where)
        except DataFormatError as exc:
            failures.append((where, "?", Rejection("schema", str(exc).split(": ", 1)[-1])))
            continue
        failures += [(where, ex.id, r) for r in validate_example(ex)]
        order = anaphoric_order(ex) if ex.type == "deferred_bind_anaphoric" else None
        vocabulary = tuple(sorted(ex.vocabulary()))
        seen.append(
            Seen(
                where,
                ex.id,
                ex.type,
                vocabulary,
                len(ex.attributes),
                order,
                unverifiable_slots(ex),
            )
        )
    return failures, seen


def validate_triplet(obj: object, split: str | None) -> list[Rejection]:
    """Every rule violation of one triplet row (``{"query", "positive", "negative", "type",
    "negative_kind"}`` and optionally ``row_kind``; other keys are allowed): the schema, held-out
    membership, then the rule of its row kind (:data:`bindkit.synth.rowkinds.ROW_KINDS`; a row
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


def dataset_failures(name: str, seen: list[Seen], *, dataset: bool) -> list[Failure]:
    """The file-level rules over every parsed example in file order: duplicate ids and
    attribute-object sets always; with ``dataset`` also caps, the construction mix and the
    anaphoric order balance (these describe a whole run, not a sample of one)."""
    out: list[Failure] = []
    ids: dict[str, str] = {}
    sets: dict[tuple[str, tuple[str, ...]], str] = {}
    for s in seen:
        if s.id in ids:
            out.append((s.where, s.id, Rejection("duplicate_id", f"id also at {ids[s.id]}")))
        ids.setdefault(s.id, s.where)
        key = (s.type, s.vocabulary)
        if key in sets:
            message = f"same {s.type} attribute-object set as {sets[key]}"
            out.append((s.where, s.id, Rejection("duplicate_set", message)))
        sets.setdefault(key, s.where)
    if not dataset:
        return out
    v = controls()["vocabulary"]
    counts: Counter[str] = Counter()
    for before, s in enumerate(seen):
        fraction = float(v["cap_fraction"][str(min(4, max(2, s.attributes)))])
        cap = max(float(v["min_cap"]), fraction * before)
        over = [w for w in s.vocabulary if counts[w] >= cap]
        if over:
            message = f"{over[0]!r} already used {counts[over[0]]} times (cap {cap:g})"
            out.append((s.where, s.id, Rejection("frequency_cap", message)))
        counts.update(s.vocabulary)
    total = len(seen)
    by_type = Counter(s.type for s in seen)
    for kind, share in controls()["mix"].items():
        expected = float(share) * total
        if abs(by_type[kind] - expected) > max(1.0, 0.01 * total):
            message = f"{by_type[kind]} {kind} examples of {total}, expected {expected:.0f}"
            out.append((name, "*", Rejection("mix", message)))
    orders = Counter(s.order for s in seen if s.order is not None)
    n = sum(orders.values())
    if n and abs(orders["second_first"] - n / 2) > max(1.0, 0.02 * n):
        message = f"{orders['second_first']} of {n} anaphoric examples assign the second noun first"
        out.append((name, "*", Rejection("anaphoric_balance", message)))
    return out


def detect_kind(first_row: object) -> str:
    """ "examples" or "triplets", from the keys of a file's first row."""
    if isinstance(first_row, dict) and "negative" in first_row and "negatives" not in first_row:
        return "triplets"
    return "examples"


def split_name(path: Path) -> str | None:
    """The split a triplet file belongs to, from its name (train.jsonl, val_x.jsonl, ...)."""
    head = path.stem.split("_")[0].split("-")[0].lower()
    return head if head in ("train", "val", "test", "heldout") else None


def _read_lines(path: Path) -> list[tuple[int, str]]:
    if path.is_dir():
        raise DataFormatError(f"{path}: is a directory; pass a JSONL file of examples")
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; pass a JSONL file of examples")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(
            f"{path}:{line}: not UTF-8 text (byte {exc.start}); pass a JSONL file of examples"
        ) from None
    numbered = [(i, line) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not numbered:
        raise DataFormatError(f"{path}: empty; pass a JSONL file with one example per line")
    return numbered


def validate_file(
    path: str | Path,
    *,
    workers: int | None = None,
    chunk: int = 5000,
    dataset: bool = False,
    kind: str | None = None,
    split: str | None = None,
    notes: Counter[str] | None = None,
) -> tuple[int, list[Failure]]:
    """(rows checked, failures) for a JSONL file of examples or triplets.

    Args:
        path: the file.
        workers: processes for files longer than one chunk (default: one per CPU); the result
            is identical to a single-process run, in file order.
        chunk: lines per worker task.
        dataset: also check the rules of a whole run (caps, mix, anaphoric balance).
        kind: "examples" or "triplets" (default: detected from the first row).
        split: the split of a triplet file (default: from the file name).
        notes: a counter that receives what could not be checked: ``unverifiable_slots``,
            the attr_bundle attributes the attribute lexicon does not know.
    """
    import json

    path = Path(path)
    numbered = _read_lines(path)
    if kind is None:
        try:
            kind = detect_kind(json.loads(numbered[0][1]))
        except json.JSONDecodeError:
            kind = "examples"
    if kind not in ("examples", "triplets"):
        raise DataFormatError(f"unknown file kind {kind!r}; use examples or triplets")
    if kind == "triplets" and split is None:
        split = split_name(path)
    chunks: list[tuple[int, list[str]]] = []
    for start in range(0, len(numbered), chunk):
        part = numbered[start : start + chunk]
        # keep line numbers exact: a chunk is contiguous in the numbered list, blank lines aside
        chunks += (
            [(i, [line]) for i, line in part]
            if _has_gaps(part)
            else [(part[0][0], [line for _, line in part])]
        )
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(numbered) <= chunk:
        results = [_check_lines(path.name, first, lines, kind, split) for first, lines in chunks]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(
                pool.map(
                    _check_lines,
                    [path.name] * len(chunks),
                    [c[0] for c in chunks],
                    [c[1] for c in chunks],
                    [kind] * len(chunks),
                    [split] * len(chunks),
                )
            )
    failures = [f for part, _ in results for f in part]
    seen = [s for _, part in results for s in part]
    failures += dataset_failures(path.name, seen, dataset=dataset)
    if notes is not None:
        notes["unverifiable_slots"] += sum(s.unverifiable for s in seen)
    return len(numbered), failures


def _has_gaps(part: list[tuple[int, str]]) -> bool:
    return part[-1][0] - part[0][0] != len(part) - 1


def count_rules(rejections: Iterable[Rejection]) -> Counter[str]:
    return Counter(r.rule for r in rejections)


def split_set_root(path: str | Path) -> Path | None:
    """The synth run directory a triplet file belongs to (``DIR/x.jsonl`` or
    ``DIR/<variant>/x.jsonl`` with ``DIR/splits.json`` or ``DIR/examples.jsonl``), else None."""
    from bindkit.synth.splits import SPLITS_JSON, VARIANTS

    path = Path(path)

    def is_run(d: Path) -> bool:
        return (d / SPLITS_JSON).is_file() or (d / "examples.jsonl").is_file()

    if is_run(path.parent):
        return path.parent
    if path.parent.name in VARIANTS and is_run(path.parent.parent):
        return path.parent.parent
    return None


def check_split_set(
    directory: str | Path, extra: dict[str, list[object]] | None = None
) -> tuple[int, list[Failure]]:
    """(triplet rows checked, failures) over a run's split set: every train/val/test/held-out
    file of ``DIR`` (a mix's ``train-<mix>.jsonl`` too) and of each variant folder (a variant's
    train file with the shared files) is checked row by row (:func:`validate_triplet`, which
    reads held-out membership from the text), and no positive or negative text, no query of a
    caption row (any kind but swap, whose query is the short list), and no ``id``, may appear
    under two splits.

    Args:
        directory: the synth run.
        extra: rows of files of ``DIR`` not written yet (file name → rows), checked as if they
            were (one of the same name on disk is left out): what a writer checks before it
            writes.

    Raises:
        DataFormatError: ``DIR`` holds no split files.
    """
    import json

    directory = Path(directory)
    extra = extra or {}
    sets = [directory, *sorted(d for d in directory.iterdir() if (d / "train.jsonl").is_file())]
    groups = [
        [p for p in sorted(d.glob("*.jsonl")) if split_name(p) is not None]
        for d in sets
        if d.is_dir()
    ]
    virtual = {directory / name for name in extra}
    groups[0] = sorted({*groups[0], *virtual})
    groups = [g for g in groups if g]
    if not groups:
        raise DataFormatError(
            f"{directory}: no split files (train.jsonl, val.jsonl, ...); run `bindkit synth "
            f"split {directory}` first"
        )

    def rows_of(path: Path) -> Iterable[tuple[int, object]]:
        if path in virtual:
            yield from enumerate(extra[path.name], 1)
            return
        for lineno, line in _read_lines(path):
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                yield lineno, Rejection("schema", f"corrupt JSON ({exc.msg})")

    checked = 0
    failures: list[Failure] = []
    for files in groups:
        owner: dict[str, tuple[str, str]] = {}  # text or id -> (split, file:line)
        for path in files:
            split = split_name(path)
            assert split is not None
            # held-out files are one split each: two held-out types never share a caption
            group = path.stem if split == "heldout" else split
            name = path.relative_to(directory).as_posix()
            for lineno, row in rows_of(path):
                checked += 1
                where = f"{name}:{lineno}"
                problems = [row] if isinstance(row, Rejection) else validate_triplet(row, split)
                failures += [(where, "?", r) for r in problems]
                if problems:
                    continue
                assert isinstance(row, dict)
                keys = [("text", row["positive"]), ("text", row["negative"])]
                if kind_of(row) != SWAP:
                    keys.append(("text", row["query"]))
                if isinstance(row.get("id"), str):
                    keys.append(("id", row["id"]))
                for what, value in keys:
                    first = owner.setdefault(f"{what}\0{value}", (group, where))
                    if first[0] != group:
                        failures.append(
                            (
                                where,
                                str(row.get("id", "?")),
                                Rejection(
                                    "split_leak",
                                    f"the {what} {value[:60]!r} is also in {first[1]}",
                                ),
                            )
                        )
                        break
    return checked, failures


def require_split_set(path: str | Path) -> None:
    """For a triplet file of a synth run: refuse it unless its split set is whole and current
    (:func:`bindkit.synth.splits.verify_splits`) and passes :func:`check_split_set`, and, for a
    mix's training file that ``bindkit synth mix`` recorded, unless it is the file its record
    describes, made from the run's examples. Files outside a synth run are left alone.
    ``bindkit train triplets`` and ``bindkit eval --task triplets`` call this on their data.

    Raises:
        DataFormatError: the first problem, naming the file and line.
    """
    from bindkit.synth.splits import verify_splits

    root = split_set_root(path)
    if root is None:
        return
    summary = verify_splits(root)
    _require_mix_record(Path(path), summary)
    _, failures = check_split_set(root)
    if failures:
        where, _, rejection = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        name = where.rsplit(":", 1)[0]
        mix = name.removeprefix("train-").removesuffix(".jsonl")
        fix = (
            f"rewrite it with `bindkit synth mix {root} --mix {mix} --overwrite`"
            if name.startswith("train-")
            else f"run `bindkit synth validate --split-set {root}`, then rerun `bindkit synth "
            f"split {root}`"
        )
        raise DataFormatError(
            f"{root / where}: [{rejection.rule}] {rejection.message}{more}; {fix}"
        )


def _require_mix_record(path: Path, summary: dict[str, Any]) -> None:
    """Refuse a mix's training file (``train-<mix>.jsonl``) whose record beside it
    (``train-<mix>.json``, :func:`bindkit.synth.mixes.write_mix`) describes another file, or
    other examples or another split seed than the run's split set (``summary``: its
    ``splits.json``); a file without a record is left to the row checks."""
    import json

    from bindkit._io import sha256_file

    record_path = path.with_suffix(".json")
    if not path.name.startswith("train-") or not record_path.is_file():
        return
    mix = path.stem.removeprefix("train-")
    rewrite = f"rewrite it with `bindkit synth mix {path.parent} --mix {mix} --overwrite`"
    try:
        record = json.loads(record_path.read_text(encoding="utf-8"))
        made_from, digest = record["examples"]["sha256"], record["sha256"]
        split_seed = record["split_seed"]
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise DataFormatError(f"{record_path}: corrupt; {rewrite}") from None
    if made_from != summary["examples"]["sha256"]:
        raise DataFormatError(
            f"{path}: made from other examples than {path.parent / 'examples.jsonl'} "
            f"({record_path}); {rewrite}"
        )
    if split_seed != summary["options"]["seed"]:
        raise DataFormatError(
            f"{path}: made from the split of seed {split_seed}, the split set's is "
            f"{summary['options']['seed']} ({record_path}); {rewrite}"
        )
    if sha256_file(path) != digest:
        raise DataFormatError(f"{path}: not the file {record_path} records; {rewrite}")
