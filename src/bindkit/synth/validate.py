"""The strict validator of synthetic binding examples. Every rejection names its rule.

Usable alone (``bindkit synth validate FILE``) on generated data or data users bring.
"""

from __future__ import annotations

import itertools
import os
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import compress
from itertools import count as counter
from operator import ne
from pathlib import Path

from bindkit.errors import DataFormatError
from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.controls import bands, controls, length_ok, windows
from bindkit.synth.example import Example
from bindkit.synth.text import bag, indefinite_article, words

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
    "anaphora": "deferred_bind_anaphoric refers back with former/latter/first/second, never a "
    "bare it/they",
    "length": "the positive's word count is in its band (one word below to four above)",
    "distance": "the binding distance is in its window",
}
_ANAPHORS = {"former", "latter", "first", "second"}
_ARTICLES = ("a", "an")
_BARE = {"it", "they", "them", "its", "their"}


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
    for da, do in ex.distractors:
        if da in vocab or do in vocab:
            return bad("once", f"distractor [{da}, {do}] reuses a queried word")

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
    a_neg, o_neg = tokens["attribute negative"], tokens["object negative"]
    if a_neg in (p, o_neg) or o_neg == p:
        return bad("negative_distinct", "a negative equals the positive or the other negative")

    where = {w: p.index(w) for w in vocab}
    bound_object = {a: o for a, o in ex.bindings}
    queried = set(ex.bindings)
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
        kept = derived & queried
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

    problem = _structure(ex, c.family, p, where, objects, attributes_of)
    if problem:
        return bad(*problem)

    count = len(p)
    band = ex.targets.get("length_band")
    allowed_bands = [(int(band[0]), int(band[1]))] if band else _shifted_bands(ex)
    if not any(length_ok(count, b) for b in allowed_bands):
        return bad("length", f"{count} words, outside {allowed_bands}")
    distance = binding_distance(ex, p, where, objects, attributes_of)
    window = ex.targets.get("distance_window")
    allowed_windows = [tuple(window)] if window else windows(c)
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
        return None
    if max(where[o] for o in objects) > min(where[a] for a in ex.attributes):
        return ("structure", "both nouns must come before any attribute")
    if ex.type == "deferred_bind_anaphoric":
        if _BARE & set(p):
            return ("anaphora", f"a bare {sorted(_BARE & set(p))[0]!r} is ambiguous")
        if not _ANAPHORS & set(p):
            return ("anaphora", "no back-reference (former/latter/first/second)")
    else:
        if "respectively" not in p:
            return ("structure", "deferred_bind_respective needs 'respectively'")
        first, second = sorted(objects, key=lambda o: where[o])
        if where[attributes_of[first][0]] > where[attributes_of[second][0]]:
            return ("structure", "attributes must follow the nouns' order")
    return None


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


def _check_lines(name: str, first_line: int, lines: list[str]) -> list[Failure]:
    """Validate raw JSONL lines (a chunk of a file); runs in worker processes too."""
    import json

    failures: list[Failure] = []
    for offset, line in enumerate(lines):
        where = f"{name}:{first_line + offset}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            failures.append((where, "?", Rejection("schema", f"corrupt JSON ({exc.msg})")))
            continue
        try:
            ex = Example.from_json(obj, where)
        except DataFormatError as exc:
            failures.append((where, "?", Rejection("schema", str(exc).split(": ", 1)[-1])))
            continue
        failures += [(where, ex.id, r) for r in validate_example(ex)]
    return failures


def validate_file(
    path: str | Path, *, workers: int | None = None, chunk: int = 5000
) -> tuple[int, list[Failure]]:
    """(examples checked, failures) for a JSONL file of examples.

    Files longer than one chunk are checked by ``workers`` processes (default: one per CPU);
    results are identical to a single-process run, in file order.
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; pass a JSONL file of examples")
    numbered = [
        (i, line)
        for i, line in enumerate(path.read_text("utf-8", errors="replace").splitlines(), 1)
        if line.strip()
    ]
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
        results = [_check_lines(path.name, first, lines) for first, lines in chunks]
    else:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(
                pool.map(
                    _check_lines,
                    [path.name] * len(chunks),
                    [c[0] for c in chunks],
                    [c[1] for c in chunks],
                )
            )
    return len(numbered), [f for part in results for f in part]


def _has_gaps(part: list[tuple[int, str]]) -> bool:
    return part[-1][0] - part[0][0] != len(part) - 1


def count_rules(rejections: Iterable[Rejection]) -> Counter[str]:
    return Counter(r.rule for r in rejections)
