"""Caption rewordings and the triplets built from them, for training binding.

Each maker turns synth examples into rows of the triplet-file format (query, positive,
negative, type, negative_kind, row_kind: :mod:`bindkit.synth.rowkinds` checks each kind): the
same bindings in other words as the positive, the caption's own swap or a contradicted relation
as the negative. They are the row kinds that :mod:`bindkit.synth.mixes` shuffles together into a
training set; the word order of the positives differs from the query's, so word overlap alone
tells nothing.
"""

from __future__ import annotations

import random
import re
from typing import Any

# the relation tables are the relation, negation and synonym row kinds' own (rowkinds checks the
# rows against them); importable from here as before
from bindkit.synth.rowkinds import NEGATIONS, RELATION_CONTRASTS, RELATION_SYNONYMS
from bindkit.synth.text import indefinite_article, render_query


def relist(pairs: list[tuple[str, str]], rng: random.Random, avoid: str | None = None) -> str:
    """The (attribute, object) pairs as a list phrase, objects and each object's attributes in a
    random order ("a ruby scooter and an oriental chestnut cage"); not ``avoid`` when another
    order exists.
    """
    groups: dict[str, list[str]] = {}
    for attribute, obj in pairs:
        groups.setdefault(obj, []).append(attribute)
    text = ""
    for _ in range(10):
        items = [(rng.sample(a, len(a)), o) for o, a in groups.items()]
        rng.shuffle(items)
        text = render_query(items)
        if text != avoid:
            break
    return text


def list_triplets(examples: list[Any], seed: int = 0) -> list[dict[str, Any]]:
    """Two short triplets per example, in the triplet-file format: the example's query; as the
    positive, the same bindings listed again in another order; as the negative, the bindings of
    the example's attribute swap (or object swap) listed in a random order.

    They teach the same contrast as the example's full sentences at a third of the tokens, and
    both sides are reordered, so word order alone tells nothing.

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [("red", "cube"), ("blue", "kite")], "...",
        ...              query="a red cube and a blue kite",
        ...              intended={"attribute": [("blue", "cube"), ("red", "kite")],
        ...                        "object": [("blue", "cube"), ("red", "kite")]})
        >>> list_triplets([ex])[0]["positive"]
        'a blue kite and a red cube'
    """
    rng = random.Random(f"{seed}/list-triplets")
    rows = []
    for example in examples:
        for kind in ("attribute", "object"):
            rows.append(
                {
                    "query": example.query,
                    "positive": relist(example.bindings, rng, avoid=example.query),
                    "negative": relist(example.intended[kind], rng),
                    "type": example.type,
                    "negative_kind": kind,
                }
            )
    return rows


def paraphrase(example: Any, rng: random.Random) -> str:
    """Another wording of the example's caption: its pairs (distractors included) as a list in
    a random order, then its scene ("A dry map, a sour camera and a marshy lamp, in a garage.").
    """
    listed = relist([*example.bindings, *example.distractors], rng, avoid=example.query)
    context = (example.targets or {}).get("context")
    text = f"{listed}, in {context.rstrip('.')}" if context else listed
    return text[0].upper() + text[1:] + "."


def predication(example: Any, rng: random.Random) -> str:
    """Another wording of the example's caption: each object's attributes stated of it, objects
    in a random order, then the scene ("The map was dry, the lamp marshy and the camera sour, in
    a garage."), as SugarCrepe++'s second captions often restate one ("The bathroom is blue and
    has two white towels").

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [("red", "cube"), ("blue", "kite")], "...")
        >>> predication(ex, random.Random(0)) in ("The cube was red and the kite blue.",
        ...                                       "The kite was blue and the cube red.")
        True
    """
    groups: dict[str, list[str]] = {}
    for attribute, obj in [*example.bindings, *example.distractors]:
        groups.setdefault(obj, []).append(attribute)
    items = [(obj, rng.sample(attrs, len(attrs))) for obj, attrs in groups.items()]
    rng.shuffle(items)
    clauses = [f"the {obj} {' and '.join(attrs)}" for obj, attrs in items]
    first_obj, first_attrs = items[0]
    clauses[0] = f"the {first_obj} was {' and '.join(first_attrs)}"
    text = clauses[0] if len(clauses) == 1 else ", ".join(clauses[:-1]) + " and " + clauses[-1]
    context = (example.targets or {}).get("context")
    if context:
        text = f"{text}, in {context.rstrip('.')}"
    return text[0].upper() + text[1:] + "."


def restatement(example: Any) -> str | None:
    """The caption with its queried attributes taken out and its bindings stated after it
    ("A cage lay near a scooter. The cage is oriental and the scooter is ruby."): every word
    and relation of the caption kept, the bindings in another form. None for predicative
    and deferred captions (their attributes follow the object) and captions without such words.

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [("oriental", "cage"), ("ruby", "scooter")],
        ...              "An oriental cage lay near a ruby scooter.")
        >>> restatement(ex)
        'A cage lay near a scooter. The cage is oriental and the scooter is ruby.'
    """
    if example.type == "predicative" or example.type.startswith("deferred"):
        return None
    attributes = sorted({a for a, _ in example.bindings}, key=len, reverse=True)
    pattern = r"\b(?:" + "|".join(map(re.escape, attributes)) + r") (?=\w)"
    stripped = re.sub(pattern, "", example.positive, flags=re.IGNORECASE)
    if stripped == example.positive:
        return None

    def article(match: re.Match[str]) -> str:
        wanted = indefinite_article(match.group(2))
        return (wanted.capitalize() if match.group(1)[0].isupper() else wanted) + match.group(0)[
            len(match.group(1)) :
        ]

    stripped = re.sub(r"\b(an?|An?) (\w+)", article, stripped[0].upper() + stripped[1:])
    groups: dict[str, list[str]] = {}
    for attribute, obj in example.bindings:
        groups.setdefault(obj, []).append(attribute)
    clauses = [f"the {obj} is {' and '.join(attrs)}" for obj, attrs in groups.items()]
    stated = ", ".join(clauses[:-1]) + " and " + clauses[-1] if len(clauses) > 1 else clauses[0]
    return f"{stripped.rstrip('.')}. {stated[0].upper()}{stated[1:]}."


def restatement_triplets(examples: list[Any]) -> list[dict[str, Any]]:
    """Caption → :func:`restatement` vs the caption's own swap (two per example that has one)."""
    rows = []
    for example in examples:
        positive = restatement(example)
        if positive is None:
            continue
        rows += [_swap_row(example, kind, positive, "restatement") for kind in SWAP_KINDS]
    return rows


def filler_free(example: Any) -> str | None:
    """The caption without its time words, clauses, spots and scene (what the template adds
    around the objects and their relations, synth.backends.template's TIMES, CLAUSES, SPOTS and
    context); None if it has none of them.

    Example:
        >>> from bindkit.synth.example import Example
        >>> filler_free(Example("e1", "pair_swap", [("red", "cube"), ("blue", "kite")],
        ...     "A red cube sat quietly near a blue kite as the guests arrived."))
        'A red cube sat near a blue kite.'
    """
    # lazily: the template grammar loads the backends package and its word lists
    from bindkit.synth.backends.template import CLAUSES, SPOTS, TIMES, scene_phrase

    context = (example.targets or {}).get("context")
    pieces = [*CLAUSES, *TIMES, *SPOTS]
    if context:
        pieces.insert(0, " ".join(scene_phrase(context.rstrip("."))))
    pattern = r",? \b(?:" + "|".join(map(re.escape, sorted(pieces, key=len, reverse=True))) + r")\b"
    stripped = re.sub(pattern, "", example.positive)
    stripped = re.sub(r" +([.,])", r"\1", stripped).strip()
    return None if stripped == example.positive else stripped


def synonymous(text: str, rng: random.Random) -> str:
    """``text`` with every relation word of :data:`RELATION_SYNONYMS` replaced by one of its
    synonyms (chosen per occurrence); ``text`` itself if it has none.

    Example:
        >>> synonymous("A red cube sat near a blue kite.", random.Random(0)) != (
        ...     "A red cube sat near a blue kite.")
        True
    """
    words = sorted(RELATION_SYNONYMS, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b")
    return pattern.sub(lambda m: rng.choice(RELATION_SYNONYMS[m.group(1)]), text)


def synonym_triplets(examples: list[Any], seed: int = 0) -> list[dict[str, Any]]:
    """Two triplets per example whose caption has a relation word: the query is the caption,
    the positive the caption without its asides (:func:`filler_free`) and with its relations
    reworded (:func:`synonymous`: "sat near" → "rested beside"), the negative the caption's
    own attribute (or object) swap.

    The positive keeps every binding and relation in other words, the negative every word in
    other bindings: what a paraphrase keeps matters, not its words (SugarCrepe++'s second
    captions reword relations and verbs; relation triplets alone teach that words do).
    """
    rng = random.Random(f"{seed}/synonym-triplets")
    rows = []
    for example in examples:
        kept = filler_free(example) or example.positive
        positive = synonymous(kept, rng)
        if positive == kept:  # no relation word to reword
            continue
        rows += [_swap_row(example, kind, positive, "synonym") for kind in SWAP_KINDS]
    return rows


def relation_negative(
    text: str, rng: random.Random, protected: str, contrasts: dict[str, str] | None = None
) -> str | None:
    """``text`` with one relation word that ``protected`` also has changed to one that
    contradicts it (``contrasts``, default :data:`RELATION_CONTRASTS`: "near" → "far from",
    "sat" → "fell"; :data:`NEGATIONS`: "sat" → "did not sit"); None if it has none."""
    contrasts = RELATION_CONTRASTS if contrasts is None else contrasts
    words = sorted(contrasts, key=len, reverse=True)
    pattern = re.compile(r"\b(" + "|".join(map(re.escape, words)) + r")\b")
    kept = {m.group(1) for m in pattern.finditer(protected)}
    spots = [m for m in pattern.finditer(text) if m.group(1) in kept]
    if not spots:
        return None
    spot = rng.choice(spots)
    return text[: spot.start()] + contrasts[spot.group(1)] + text[spot.end() :]


def relation_triplets(
    examples: list[Any], seed: int = 0, negate: bool = False, listed: bool = False
) -> list[dict[str, Any]]:
    """One triplet per example whose caption has fillers and a relation: the query is the
    caption, the positive the caption without its fillers (:func:`filler_free`: every
    binding and relation kept), the negative the caption with one relation contradicted
    (:func:`relation_negative`, a relation the positive keeps).

    What paraphrase triplets cannot teach: a changed relation or verb moves a caption further
    than dropping its asides does (SugarCrepe++'s replace_rel, in the template's own words).
    ``negate``: the negative is the caption with one verb negated instead (:data:`NEGATIONS`,
    "sat" → "did not sit"), so that a negation is no aside either. ``listed``: the positive is
    the caption's :func:`paraphrase` instead (its pairs listed in its scene: few shared words,
    as in the paraphrase triplets), which the contradicted caption must not beat.

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [("red", "cube"), ("blue", "kite")],
        ...              "A red cube sat quietly near a blue kite.")
        >>> row = relation_triplets([ex])[0]
        >>> row["positive"], row["negative"] in ("A red cube fell quietly near a blue kite.",
        ...                                      "A red cube sat quietly far from a blue kite.")
        ('A red cube sat near a blue kite.', True)
    """
    kind = "negation" if negate else "relation"
    contrasts = NEGATIONS if negate else RELATION_CONTRASTS
    rng = random.Random(f"{seed}/{kind}-triplets")
    rows = []
    for example in examples:
        kept = filler_free(example)
        if kept is None:
            continue
        negative = relation_negative(example.positive, rng, protected=kept, contrasts=contrasts)
        if negative is None:
            continue
        positive = paraphrase(example, rng) if listed else kept
        rows.append(
            {
                "query": example.positive,
                "positive": positive,
                "negative": negative,
                "type": example.type,
                "negative_kind": kind,
                "row_kind": f"{kind}_listed" if listed else kind,
            }
        )
    return rows


def predication_triplets(examples: list[Any], seed: int = 0) -> list[dict[str, Any]]:
    """As :func:`paraphrase_triplets`, the positive stating each object's attributes of it
    (:func:`predication`) instead of listing the pairs."""
    return _reworded_triplets(
        examples, predication, random.Random(f"{seed}/predication-triplets"), "predication"
    )


def _reworded_triplets(
    examples: list[Any], reword: Any, rng: random.Random, row_kind: str
) -> list[dict[str, Any]]:
    """Per example and swap kind: its caption → ``reword(example, rng)`` vs its own swap."""
    return [
        _swap_row(example, kind, reword(example, rng), row_kind)
        for example in examples
        for kind in SWAP_KINDS
    ]


SWAP_KINDS = ("attribute", "object")


def _swap_row(example: Any, kind: str, positive: str, row_kind: str) -> dict[str, Any]:
    """A caption-to-caption triplet of ``row_kind`` (:data:`bindkit.synth.rowkinds.ROW_KINDS`):
    the example's caption → ``positive`` vs its ``kind`` swap."""
    return {
        "query": example.positive,
        "positive": positive,
        "negative": example.negatives[kind],
        "type": example.type,
        "negative_kind": kind,
        "row_kind": row_kind,
    }


def paraphrase_triplets(examples: list[Any], seed: int = 0) -> list[dict[str, Any]]:
    """Two caption-to-caption triplets per example: the query is the example's full caption,
    the positive another wording of it (:func:`paraphrase`), the negative the caption's own
    attribute swap (or object swap).

    The negative shares almost every word with the query and the positive few, as in
    SugarCrepe++'s text-only test: word overlap points the wrong way, only binding helps.

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [("red", "cube"), ("blue", "kite")], "A red cube "
        ...              "sat by a blue kite in a barn.", query="a red cube and a blue kite",
        ...              negatives={"attribute": "A blue cube sat by a red kite in a barn.",
        ...                         "object": "A red kite sat by a blue cube in a barn."},
        ...              targets={"context": "a barn"})
        >>> row = paraphrase_triplets([ex])[0]
        >>> row["positive"], row["negative"]
        ('A blue kite and a red cube, in a barn.', 'A blue cube sat by a red kite in a barn.')
    """
    return _reworded_triplets(
        examples, paraphrase, random.Random(f"{seed}/paraphrase-triplets"), "paraphrase"
    )
