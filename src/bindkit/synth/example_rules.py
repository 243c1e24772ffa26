"""The rules of one synthetic binding example, one per construction family, read from its text.

An example of any of the seven constructions (:mod:`bindkit.synth.constructions`, made into
:class:`~bindkit.synth.example.Example` by a backend and :func:`bindkit.synth.example.complete`)
must satisfy :data:`RULES`; :func:`validate_example` names the first one it breaks. The generator
calls it on every example before admitting it, and :mod:`bindkit.synth.validate` on every line of
a file.
"""

from __future__ import annotations

import itertools
import re
from functools import cache
from itertools import compress
from itertools import count as counter
from operator import ne

from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.controls import bands, controls, length_ok, read_lines, windows
from bindkit.synth.example import Example
from bindkit.synth.rejection import Rejection
from bindkit.synth.rowkinds import linking_words
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
_REFERENT = {"former": 0, "first": 0, "latter": 1, "second": 1}
_ARTICLES = ("a", "an")
_BARE = {"it", "they", "them", "its", "their"}


@cache
def plural_only() -> frozenset[str]:
    """Plural-only nouns that take no indefinite article (``data/plural_only.txt``)."""
    return frozenset(w for line in read_lines("plural_only.txt") for w in line.split())


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
