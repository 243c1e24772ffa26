"""``bindkit demo finetune``: template data → LoRA on all-MiniLM-L6-v2 (CPU) → before/after table.

Steps: (1) ``bindkit synth`` template examples and their standard split set; the training
examples are the train split after NoOverlap against the packaged SABER vocabulary, as
full-caption, paraphrase, relation and negation triplets, with everyday binding scenes mixed in
(:func:`training_triplets`, :func:`everyday_triplets`); (2)
preservation sentences: the scene contexts of those training captions and as many everyday
sentences without adjectives (:func:`preservation_sentences`), whose base-model embeddings are
distilled into each batch; (3) two trainings (with preservation, and plain as the comparison
row), the preserved one also as a LiNeS adapter (α fixed by issue 18's recipe search: 1, the
whole update);
(4) SABER text→text, held-out full-caption triplets and (with ``--sts``/``--scpp``) STS and
SugarCrepe++ TOT through ``bindkit.evaluate``; (5) ``OUT/report.md`` with one table and what was
chosen. Torch threads and deterministic algorithms are pinned, so a rerun gives the same table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import random
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text
from bindkit._lock import directory_lock
from bindkit.errors import BindkitError

MODEL = "st:default"
# The recipe (issue 18's search, docs/benchmarks.md): the paper's 5e-5 barely moves a
# 22M-parameter model (issue 8's table); 2e-3 with batch 32 learns binding in 100-200 steps.
LR = 2e-3
BATCH = 32
MARGIN = 0.05
STEPS = 300  # optimizer steps (9,600 training triplets): the CPU budget
LINES_ALPHA = 1.0  # LiNeS α of the shipped adapter, chosen on the search's dev panel
MIX = "fullpararelnegLEOR"  # the training triplets (MIXES): NoOverlap train split + everyday
PRESERVATION = "ctxgen"  # the preservation set (PRESERVATION_SETS) of the `preserve` run
PRESERVE_WEIGHT = 1.0  # the default --preserve-weight
PLAIN = False  # the default of --plain/--no-plain: the comparison row without preservation
SOUP = 2  # the default --soup: preserved runs (seeds seed, seed + 1, …) averaged into the adapter
# the preservation set of each preserved run (run k: SOUP_PRESERVATION[k % 2]): the soup averages
# a run that keeps everyday sentences without attributes with one that also keeps one-attribute
# sentences, on either side of the binding / STS front (issue 18's search, session 5)
SOUP_PRESERVATION = (PRESERVATION, "ctxgenD")
TRAIN = "demo-train.jsonl"
PRESERVE = "preserve.jsonl"
PRESERVE_BATCH = 32  # preservation sentences per batch
VAL_TRIPLETS = 256  # the LiNeS sweep's validation triplets (the first of val.jsonl)
TEST_TRIPLETS = 1024  # the held-out column (the first of test.jsonl)
SCPP_SUBSETS = ("swap_att", "replace_att", "replace_rel", "swap_obj", "replace_obj")


@dataclass
class DemoOptions:
    """Options of ``bindkit demo finetune``."""

    out: str
    sts: str | None = None
    scpp: str | None = None  # SugarCrepe++ folder: adds its TOT columns (text only)
    examples: int = 24000  # template examples to generate; ~1/4 survive NoOverlap as triplets
    max_triplets: int | None = None  # cap on the training triplets (None: all)
    saber_per_n: int | None = None  # a smaller SABER (MCQs per N) for quick runs; None: default
    preserve_weight: float = PRESERVE_WEIGHT
    plain: bool = PLAIN  # also train without preservation (the comparison row)
    soup: int = SOUP  # preserved runs with consecutive seeds, their adapters averaged
    seed: int = 0
    threads: int = 2  # torch CPU threads, pinned: another count sums in another order
    progress: bool = True

    def __post_init__(self) -> None:
        """Every option checked before any data is generated or a model loaded."""
        from bindkit._checks import check_range
        from bindkit.saber.build import MAX_PER_N

        most = 1_000_000  # 40x the default; a CPU demo beyond that is a typo, not a plan
        check_range("--examples", self.examples, 100, most)
        check_range("--max-triplets", self.max_triplets, BATCH, 2 * most)
        check_range("--preserve-weight", self.preserve_weight, 0, 1000)
        check_range("--saber-per-n", self.saber_per_n, 2, MAX_PER_N)
        if self.saber_per_n is not None and self.saber_per_n % 2:
            raise BindkitError(
                f"--saber-per-n {self.saber_per_n}: must be even (half independent MCQs, half "
                "nested chains)"
            )
        check_range("--threads", self.threads, 1, 1024)
        check_range("--soup", self.soup, 1, 16)
        if self.scpp is not None and not Path(self.scpp).is_dir():
            raise BindkitError(f"--scpp {self.scpp}: not a directory (the SugarCrepe++ data/)")
        if self.sts is not None:
            from bindkit.errors import DataFormatError
            from bindkit.tasks.sts import read_sts

            if not Path(self.sts).is_file():
                raise BindkitError(f"--sts {self.sts}: file not found (e.g. SICK_trial.txt)")
            try:
                read_sts(self.sts)  # a corrupt file fails now, not after the training
            except DataFormatError as exc:
                raise BindkitError(f"--sts: {exc}") from None


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


# Everyday sentences without attribute–object structure (who does what, where): a preservation
# set for what binding training must not change (actions, relations, topics). No adjectives,
# so keeping their embeddings does not keep any bag-of-words binding.
_ACTORS = (
    "a man",
    "a woman",
    "a child",
    "a boy",
    "a girl",
    "a farmer",
    "two men",
    "two women",
    "a group of people",
    "a couple",
    "a dog",
    "a cat",
    "a horse",
    "a bird",
    "the children",
    "a chef",
    "a teacher",
    "a musician",
    "a player",
    "some students",
)
_ACTIONS = (
    "playing a guitar",
    "riding a bicycle",
    "cutting an onion",
    "reading a book",
    "eating a sandwich",
    "drinking coffee",
    "slicing bread",
    "painting a wall",
    "washing a car",
    "throwing a ball",
    "catching a frisbee",
    "climbing a tree",
    "crossing the street",
    "walking along the beach",
    "swimming in a lake",
    "running through a field",
    "jumping over a fence",
    "sleeping on a couch",
    "talking on the phone",
    "typing on a laptop",
    "cooking dinner",
    "carrying a box",
    "pushing a cart",
    "dancing on a stage",
    "singing a song",
    "fixing a bike",
    "feeding the ducks",
    "kicking a ball",
    "chasing a ball",
    "watching television",
    "cleaning the kitchen",
    "writing a letter",
    "peeling a potato",
    "sitting on a bench",
    "standing in line",
    "waiting for a bus",
    "looking out of a window",
    "opening a door",
    "holding an umbrella",
    "taking a photo",
)
_WHERES = (
    "",
    "",
    "",
    " in the park",
    " at home",
    " on the street",
    " in the kitchen",
    " near the river",
    " in a classroom",
    " at the station",
    " in the garden",
    " on a hill",
    " in the snow",
    " in the rain",
    " at night",
    " in the morning",
)


def generic_sentences(count: int, seed: int = 0) -> list[str]:
    """``count`` distinct everyday sentences without adjectives ("Two women are cooking dinner
    in the kitchen."), some negated or joined by "while", in a seeded random order.

    Example:
        >>> len(set(generic_sentences(50))) == 50
        True
    """
    rng = random.Random(f"{seed}/generic-sentences")
    seen: dict[str, None] = {}
    while len(seen) < count:
        actor = rng.choice(_ACTORS)
        verb = _be(actor)
        action = rng.choice(_ACTIONS)
        roll = rng.random()
        if roll < 0.1:
            clause = f"{actor} {verb} not {action}"
        elif roll < 0.25:
            other = rng.choice([a for a in _ACTORS if a != actor])
            clause = f"{actor} {verb} {action} while {other} {_be(other)} {rng.choice(_ACTIONS)}"
        else:
            clause = f"{actor} {verb} {action}{rng.choice(_WHERES)}"
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
    rng = random.Random(f"{seed}/described-sentences")
    seen: dict[str, None] = {}
    while len(seen) < count:
        attribute, _, animal_ok = _everyday_attributes(rng)
        if animal_ok and rng.random() < 0.3:
            actor = f"{_article(attribute)} {attribute} {rng.choice(_EVERYDAY_ANIMALS)}"
        else:
            wear = rng.choice(_EVERYDAY_WEAR)
            actor = f"a {rng.choice(_EVERYDAY_PEOPLE)} in {_article(attribute)} {attribute} {wear}"
        action = rng.choice(_ACTIONS)
        clause = f"{actor} is {'not ' if rng.random() < 0.1 else ''}{action}{rng.choice(_WHERES)}"
        seen.setdefault(clause[0].upper() + clause[1:] + ".", None)
    return list(seen)


def _be(actor: str) -> str:
    """ "is" or "are" after an actor of :data:`_ACTORS`."""
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


def relist(pairs: list[tuple[str, str]], rng: random.Random, avoid: str | None = None) -> str:
    """The (attribute, object) pairs as a list phrase, objects and each object's attributes in a
    random order ("a ruby scooter and an oriental chestnut cage"); not ``avoid`` when another
    order exists.
    """
    from bindkit.synth.text import render_query

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
    import re

    from bindkit.synth.text import indefinite_article

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
        rows += [_swap_row(example, kind, positive) for kind in SWAP_KINDS]
    return rows


# A relation of the template captions and one that contradicts it (prepositions between objects
# and the locative verbs of synth.backends.template), for relation_triplets' negatives.
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
    import re

    from bindkit.synth.backends.template import CLAUSES, SPOTS, TIMES, scene_phrase

    context = (example.targets or {}).get("context")
    pieces = [*CLAUSES, *TIMES, *SPOTS]
    if context:
        pieces.insert(0, " ".join(scene_phrase(context.rstrip("."))))
    pattern = r",? \b(?:" + "|".join(map(re.escape, sorted(pieces, key=len, reverse=True))) + r")\b"
    stripped = re.sub(pattern, "", example.positive)
    stripped = re.sub(r" +([.,])", r"\1", stripped).strip()
    return None if stripped == example.positive else stripped


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
# synonym_triplets' positives: a rewording that keeps every relation.
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


def synonymous(text: str, rng: random.Random) -> str:
    """``text`` with every relation word of :data:`RELATION_SYNONYMS` replaced by one of its
    synonyms (chosen per occurrence); ``text`` itself if it has none.

    Example:
        >>> synonymous("A red cube sat near a blue kite.", random.Random(0)) != (
        ...     "A red cube sat near a blue kite.")
        True
    """
    import re

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
        rows += [_swap_row(example, kind, positive) for kind in SWAP_KINDS]
    return rows


def relation_negative(
    text: str, rng: random.Random, protected: str, contrasts: dict[str, str] | None = None
) -> str | None:
    """``text`` with one relation word that ``protected`` also has changed to one that
    contradicts it (``contrasts``, default :data:`RELATION_CONTRASTS`: "near" → "far from",
    "sat" → "fell"; :data:`NEGATIONS`: "sat" → "did not sit"); None if it has none."""
    import re

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
            }
        )
    return rows


def predication_triplets(examples: list[Any], seed: int = 0) -> list[dict[str, Any]]:
    """As :func:`paraphrase_triplets`, the positive stating each object's attributes of it
    (:func:`predication`) instead of listing the pairs."""
    return _reworded_triplets(examples, predication, random.Random(f"{seed}/predication-triplets"))


def _reworded_triplets(
    examples: list[Any], reword: Any, rng: random.Random
) -> list[dict[str, Any]]:
    """Per example and swap kind: its caption → ``reword(example, rng)`` vs its own swap."""
    return [
        _swap_row(example, kind, reword(example, rng))
        for example in examples
        for kind in SWAP_KINDS
    ]


SWAP_KINDS = ("attribute", "object")


def _swap_row(example: Any, kind: str, positive: str) -> dict[str, Any]:
    """A caption-to-caption triplet: the example's caption → ``positive`` vs its ``kind`` swap."""
    return {
        "query": example.positive,
        "positive": positive,
        "negative": example.negatives[kind],
        "type": example.type,
        "negative_kind": kind,
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
    return _reworded_triplets(examples, paraphrase, random.Random(f"{seed}/paraphrase-triplets"))


# Everyday binding scenes (who does what to what, each with an attribute), so that binding is
# not learnt as a property of the template's style: without them the preserved adapter moves the
# template captions (1 − cos to the base model 0.31) but natural captions hardly (0.07), since
# everyday sentences are what it was told to keep. No word is a SABER vocabulary item.
_EVERYDAY_COLORS = ("white", "black", "brown", "gray", "orange", "beige", "navy", "maroon")
_EVERYDAY_BIG, _EVERYDAY_SMALL = (
    ("large", "big", "tall", "huge"),
    ("small", "little", "tiny", "short"),
)
_EVERYDAY_STATES = (("old", "new"), ("dirty", "clean"), ("wet", "dry"))
_EVERYDAY_MATERIALS = ("metal", "plastic", "paper", "cotton", "woolen", "rubber")
_EVERYDAY_PEOPLE = ("man", "woman", "boy", "girl", "child", "chef", "lady", "player", "rider")
_EVERYDAY_WEAR = ("shirt", "jacket", "hat", "dress", "coat", "cap", "skirt", "suit", "apron")
_EVERYDAY_ANIMALS = ("dog", "cat", "horse", "cow", "sheep", "bird", "bear", "goat", "pony")
_EVERYDAY_THINGS = (
    "box",
    "bag",
    "cart",
    "ball",
    "crate",
    "sign",
    "towel",
    "door",
    "fence",
    "boat",
    "bus",
    "van",
    "sack",
    "blanket",
    "tray",
    "barrel",
    "trunk",
    "bin",
    "pot",
    "mat",
)
# (present participle, past participle) of what a person or an animal does to a thing
_EVERYDAY_ACTIONS = (
    ("holding", "held"),
    ("carrying", "carried"),
    ("pushing", "pushed"),
    ("pulling", "pulled"),
    ("washing", "washed"),
    ("painting", "painted"),
    ("watching", "watched"),
    ("chasing", "chased"),
    ("following", "followed"),
    ("dragging", "dragged"),
    ("kicking", "kicked"),
    ("cleaning", "cleaned"),
)
_ANIMAL_ACTIONS = _EVERYDAY_ACTIONS[6:11]  # watching … kicking
_EVERYDAY_PLACES = (
    "in the park",
    "on the street",
    "in the kitchen",
    "near the river",
    "in a field",
    "at the station",
    "in the garden",
    "on the beach",
    "in the yard",
    "by the road",
)


def _everyday_attributes(rng: random.Random) -> tuple[str, str, bool]:
    """Two attributes that contradict each other (two colours, a large and a small size, two
    opposite states, two materials) and whether an animal may carry them (not materials)."""
    roll = rng.random()
    if roll < 0.5:
        first, second = rng.sample(_EVERYDAY_COLORS, 2)
    elif roll < 0.7:
        first, second = rng.sample([rng.choice(_EVERYDAY_BIG), rng.choice(_EVERYDAY_SMALL)], 2)
    elif roll < 0.9:
        first, second = rng.sample(rng.choice(_EVERYDAY_STATES), 2)
    else:
        first, second = rng.sample(_EVERYDAY_MATERIALS, 2)
        return first, second, False
    return first, second, True


def _article(word: str) -> str:
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
    first, second, animal_ok = _everyday_attributes(rng)
    thing = rng.choice(_EVERYDAY_THINGS)
    place = rng.choice(_EVERYDAY_PLACES)
    if animal_ok and rng.random() < 0.4:
        animal = rng.choice(_EVERYDAY_ANIMALS)
        doing, done = rng.choice(_ANIMAL_ACTIONS)

        def subject(a: str) -> str:
            return f"{_article(a)} {a} {animal}"

        subject_para = f"a {animal} that is {first}"
    else:
        person, wear = rng.choice(_EVERYDAY_PEOPLE), rng.choice(_EVERYDAY_WEAR)
        doing, done = rng.choice(_EVERYDAY_ACTIONS)

        def subject(a: str) -> str:
            return f"a {person} in {_article(a)} {a} {wear}"

        subject_para = f"a {person} wearing {_article(first)} {first} {wear}"

    def caption(a: str, b: str) -> str:
        return f"{subject(a)} is {doing} {_article(b)} {b} {thing} {place}"

    style = rng.randrange(3)
    if style == 0:
        para = f"{place}, {_article(second)} {second} {thing} is being {done} by {subject_para}"
    elif style == 1:
        para = f"{_article(second)} {second} {thing} is being {done} {place} by {subject_para}"
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
        article = _article(words[i])
        words[i - 1] = article.capitalize() if words[i - 1][0].isupper() else article


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


_EVERYDAY_NOUNS = (_EVERYDAY_PEOPLE, _EVERYDAY_WEAR, _EVERYDAY_ANIMALS, _EVERYDAY_THINGS)


def with_object_replaced(caption: str, rng: random.Random) -> str:
    """``caption`` with one of its nouns (a person, what they wear, an animal, a thing) replaced
    by another of its group that the caption does not name, its article fitted: SugarCrepe++'s
    replace_obj in everyday words.

    Example:
        >>> with_object_replaced("A dog is chasing a white ball in the park.", random.Random(1))
        'A horse is chasing a white ball in the park.'
    """
    words = caption.split()
    present = {w.strip(".,").lower() for w in words}
    slots = [
        (i, group)
        for i, w in enumerate(words)
        for group in _EVERYDAY_NOUNS
        if w.strip(".,").lower() in group
    ]
    i, group = rng.choice(slots)
    word = words[i].strip(".,")
    new = rng.choice([w for w in group if w not in present])
    words[i] = words[i].replace(word, new.capitalize() if word[0].isupper() else new)
    _fit_article(words, i)
    return " ".join(words)


def _contradicting(word: str, other: str, rng: random.Random) -> str:
    """An attribute that contradicts ``word``, from its group (:func:`_everyday_attributes`):
    another colour or material than ``word`` and ``other``, a size of the opposite kind, the
    opposite state."""
    for group in (_EVERYDAY_COLORS, _EVERYDAY_MATERIALS):
        if word in group:
            return rng.choice([w for w in group if w not in (word, other)])
    if word in _EVERYDAY_BIG or word in _EVERYDAY_SMALL:
        opposite = _EVERYDAY_SMALL if word in _EVERYDAY_BIG else _EVERYDAY_BIG
        return rng.choice([w for w in opposite if w != other] or list(opposite))
    return next(b if a == word else a for a, b in _EVERYDAY_STATES if word in (a, b))


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
        triples = [(caption, para, swap), (para, caption, swap)]
        if omit:
            triples.append((caption, without_attribute(caption, swap, drops.randrange(2)), swap))
        if replace:
            changed = with_attribute_replaced(caption, swap, changes.randrange(2), changes)
            triples.append((caption, para, changed))
        if bare:
            triples.append((caption, without_attributes(caption, swap), swap))
        if replace_object:
            triples.append((caption, para, with_object_replaced(caption, nouns)))
        for query, positive, negative in triples:
            rows.append(
                {
                    "query": query,
                    "positive": positive,
                    "negative": negative,
                    "type": "everyday",
                    "negative_kind": "everyday",
                }
            )
    return rows


# Named training mixes (issue 18's search): the kinds of triplets shuffled together.
MIXES = {
    "fullpara": ("full", "paraphrase"),
    "fullrestate": ("full", "restatement"),
    "mix3": ("full", "paraphrase", "restatement"),
    "fullpararel": ("full", "paraphrase", "relation"),
    "fullpararelneg": ("full", "paraphrase", "relation", "negation"),
    "fullparaneg": ("full", "paraphrase", "negation"),
    "fullpararelnegL": ("full", "paraphrase", "relationL", "negationL"),
    "fullparapredrelneg": ("full", "paraphrase", "predication", "relation", "negation"),
    "fullparasyn": ("full", "paraphrase", "synonym"),
    "fullparasynrelneg": ("full", "paraphrase", "synonym", "relation", "negation"),
    "fullpararelnegLE": ("full", "paraphrase", "relationL", "negationL", "everyday"),
    "fullpararelnegLE2": ("full", "paraphrase", "relationL", "negationL", "everyday2"),
    "fullpararelnegLEO": ("full", "paraphrase", "relationL", "negationL", "everydayO"),
    "fullpararelnegLEOR": ("full", "paraphrase", "relationL", "negationL", "everydayOR"),
    "fullpararelnegLEORB": ("full", "paraphrase", "relationL", "negationL", "everydayORB"),
    "fullpararelnegLEORN": ("full", "paraphrase", "relationL", "negationL", "everydayORN"),
    "fullpararelnegLEORBN": ("full", "paraphrase", "relationL", "negationL", "everydayORBN"),
    "fullpararelneghLEOR": ("full", "paraphrase", "relationL", "negationLh", "everydayOR"),
}


def training_triplets(examples: list[Any], seed: int = 0, mix: str = MIX) -> list[dict[str, Any]]:
    """The demo's training rows: the examples' full-caption triplets (short query → caption vs
    its swap, as ``bindkit synth split`` writes them) and the other kinds of ``MIXES[mix]``
    (:func:`paraphrase_triplets`, :func:`restatement_triplets`), shuffled together, as many
    rows as there are full-caption triplets.

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [("red", "cube"), ("blue", "kite")], "A red cube "
        ...              "sat by a blue kite.", query="a red cube and a blue kite",
        ...              negatives={"attribute": "A blue cube sat by a red kite.",
        ...                         "object": "A red kite sat by a blue cube."})
        >>> len(training_triplets([ex] * 4, mix="mix3"))
        8
    """
    from bindkit.synth.splits import triplets

    if mix not in MIXES:
        raise BindkitError(f"mix {mix!r}: use one of {', '.join(MIXES)}")
    makers: dict[str, Callable[[], list[dict[str, Any]]]] = {
        "full": lambda: triplets(examples),
        "paraphrase": lambda: paraphrase_triplets(examples, seed),
        "restatement": lambda: restatement_triplets(examples),
        "relation": lambda: relation_triplets(examples, seed),
        "negation": lambda: relation_triplets(examples, seed, negate=True),
        "relationL": lambda: relation_triplets(examples, seed, listed=True),
        "negationL": lambda: relation_triplets(examples, seed, negate=True, listed=True),
        "negationLh": lambda: relation_triplets(examples, seed, negate=True, listed=True)[::2],
        "predication": lambda: predication_triplets(examples, seed),
        "synonym": lambda: synonym_triplets(examples, seed),
        "everyday": lambda: everyday_triplets(len(examples) // 2, seed),
        "everyday2": lambda: everyday_triplets(len(examples), seed),
        "everydayO": lambda: everyday_triplets(len(examples) // 3, seed, omit=True),
        **{
            f"everydayOR{extra}": functools.partial(
                everyday_triplets,
                len(examples) // 3,
                seed,
                omit=True,
                replace=True,
                bare="B" in extra,
                replace_object="N" in extra,
            )
            for extra in ("", "B", "N", "BN")
        },
    }
    full = triplets(examples)
    rows = [row for kind in MIXES[mix] for row in makers[kind]()]
    random.Random(f"{seed}/{mix}").shuffle(rows)
    return rows[: len(full)]


_OMISSION_TEXT = (
    "; → the caption with one attribute dropped vs the swap: a detail left out moves a "
    "sentence less than a binding changed"
)
_REPLACEMENT_TEXT = "; → the paraphrase vs the caption with one attribute contradicted"
_BARE_TEXT = "; → the caption with both attributes dropped vs the swap"
_NOUN_TEXT = "; → the paraphrase vs the caption with one noun replaced"
KIND_TEXT = {
    "paraphrase": "paraphrase triplets (its caption → its pairs listed in its scene vs the "
    "caption's own swap, which shares almost every word with the query: word overlap points "
    "the wrong way)",
    "restatement": "restatement triplets (its caption → the same caption without its "
    "attributes, the bindings stated after it, vs the caption's own swap: every relation "
    "word kept, only binding tells them apart)",
    "relation": "relation triplets (its caption → the caption without its asides vs the caption "
    "with one relation or verb contradicted: relations matter more than asides)",
    "predication": "predication triplets (its caption → each object's attributes stated of it, "
    "in its scene, vs the caption's own swap)",
    "synonym": "synonym triplets (its caption → the caption without its asides, its relations "
    "reworded, vs the caption's own swap)",
    "relationL": "relation triplets with listed positives (its caption → its pairs listed in "
    "its scene vs the caption with one relation contradicted)",
    "negationL": "negation triplets with listed positives (its caption → its pairs listed in its "
    "scene vs the caption with one verb negated: a contradiction is further than an omission)",
    "negationLh": "negation triplets with listed positives, every second one (its caption → "
    "its pairs listed in its scene vs the caption with one verb negated)",
    "negation": "negation triplets (its caption → the caption without its asides vs the caption "
    "with one verb negated: a negation is no aside)",
    **{
        kind: "everyday binding scenes (`everyday_triplets`: a caption of who does what to what, "
        "each with an attribute → its reordered paraphrase vs its attribute swap, and back"
        + extra
        + f"; {scenes}, no SABER word), so that binding is not learnt as a property of the "
        "template's style"
        for kind, extra, scenes in (
            ("everyday", "", "one scene per two examples"),
            ("everyday2", "", "one scene per example"),
            ("everydayO", _OMISSION_TEXT, "one scene per three examples"),
            *(
                (
                    f"everydayOR{extra}",
                    _OMISSION_TEXT
                    + _REPLACEMENT_TEXT
                    + ("B" in extra) * _BARE_TEXT
                    + ("N" in extra) * _NOUN_TEXT,
                    "one scene per three examples",
                )
                for extra in ("", "B", "N", "BN")
            ),
        )
    },
}


def run_demo(options: DemoOptions) -> dict[str, Any]:
    """Run the demo; returns the table rows also written to ``OUT/report.md``."""
    out = Path(options.out)
    with directory_lock(out, "bindkit demo finetune"), pinned(options.threads):
        return _run(options, out)


def _say(options: DemoOptions, text: str) -> None:
    if options.progress:
        print(text, file=sys.stderr, flush=True)


def preserve_file(kind: str) -> str:
    """The demo's file of preservation set ``kind`` (``preserve.jsonl`` for PRESERVATION)."""
    return PRESERVE if kind == PRESERVATION else f"preserve-{kind}.jsonl"


def run_preservation(options: DemoOptions, k: int) -> str:
    """The preservation set of preserved run ``k`` (``preserve``, ``preserve-s1``, …)."""
    return SOUP_PRESERVATION[k % len(SOUP_PRESERVATION)] if options.soup > 1 else PRESERVATION


def _data(options: DemoOptions, out: Path) -> tuple[Path, dict[str, int], dict[str, int]]:
    from bindkit._io import atomic_write_bytes, jsonl_bytes
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.splits import no_overlap, read_examples, saber_words, split, write_splits

    data = out / "data"
    generate(
        data,
        options.examples,
        TemplateBackend(options.seed),
        seed=options.seed,
        progress=options.progress,
    )
    # the standard split set (hashed, as `bindkit synth split` writes it): val and test come
    # from it; the demo's own files are copies beside it
    write_splits(data, seed=options.seed, exclude_vocab="builtin")
    examples = read_examples(data / "examples.jsonl")
    train = no_overlap(split(examples, options.seed)["train"], saber_words(None))
    rows = training_triplets(train, options.seed, MIX)
    if options.max_triplets is not None:
        rows = rows[: options.max_triplets]
    atomic_write_bytes(data / TRAIN, jsonl_bytes(rows))
    for name, size in (("val", VAL_TRIPLETS), ("test", TEST_TRIPLETS)):
        lines = (data / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:size]
        atomic_write_text(data / f"demo-{name}.jsonl", "\n".join(lines) + "\n")
    steps = min(STEPS, -(-len(rows) // BATCH))
    sizes = {}
    for kind in dict.fromkeys(run_preservation(options, k) for k in range(options.soup)):
        sentences = preservation_sentences(train, kind, options.seed)[: steps * PRESERVE_BATCH]
        atomic_write_bytes(data / preserve_file(kind), jsonl_bytes({"text": t} for t in sentences))
        sizes[kind] = len(sentences)
    counts = {"train": len(rows), "val": VAL_TRIPLETS, "test": TEST_TRIPLETS}
    return data, sizes, counts


def _train(
    options: DemoOptions,
    data: Path,
    name: str,
    preserve: str | None,
    seed: int | None = None,
) -> dict[str, Any]:
    from bindkit.train.config import TrainConfig
    from bindkit.train.trainer import reusable_run, train_triplets

    config = TrainConfig(
        model=MODEL,
        train=str(data / TRAIN),
        val=str(data / "demo-val.jsonl"),
        out=str(Path(options.out) / "runs" / name),
        lr=LR,
        batch_size=BATCH,
        margin=MARGIN,
        max_steps=STEPS,
        lines_alpha=LINES_ALPHA,
        model_dropout=False,
        preserve=str(data / preserve_file(preserve)) if preserve else None,
        preserve_weight=options.preserve_weight,
        preserve_batch=PRESERVE_BATCH,
        save_every=25,
        seed=options.seed if seed is None else seed,
        progress=options.progress,
    )
    # A rerun of the same demo reuses a finished run and resumes a killed one from its last
    # checkpoint; a run made with other options or data starts over: the trainer's one reuse
    # rule (its run identity hashes every option and input file).
    record = reusable_run(config)
    if record is not None:
        _say(options, f"run `{name}`: finished earlier, reusing {config.out}")
        return record
    return train_triplets(dataclasses.replace(config, overwrite=True), reuse=True)


def _evaluate(
    options: DemoOptions, out: Path, models: dict[str, str], saber: Path | None
) -> dict[str, dict[str, float]]:
    from bindkit.evaluation import evaluate

    results = out / "results"
    table: dict[str, dict[str, float]] = {}
    for label, spec in models.items():
        row: dict[str, float] = {}
        record = evaluate(
            [spec],
            task="saber",
            data=saber,
            pairings="tt",
            out=results,
            cache=False,
            report=False,
            verbose=False,
        )
        row["saber_t2t_mcq"] = record[0]["scores"]["mcq_accuracy"]
        record = evaluate(
            [spec],
            task="triplets",
            data=out / "data" / "demo-test.jsonl",
            out=results,
            cache=False,
            report=False,
            verbose=False,
        )
        row["heldout_triplets"] = record[0]["scores"]["triplet_accuracy"]
        if options.sts:
            record = evaluate(
                [spec],
                task="sts",
                data=options.sts,
                out=results,
                cache=False,
                report=False,
                verbose=False,
            )
            row["sts_spearman"] = record[0]["scores"]["spearman"]
        if options.scpp:
            records = evaluate(
                [spec],
                task="sugarcrepe_pp",
                data=options.scpp,
                subsets=list(SCPP_SUBSETS),
                out=results,
                cache=False,
                report=False,
                verbose=False,
            )
            for one in records:
                row[f"scpp_{one['subset']}"] = one["scores"]["tot_accuracy"]
        table[label] = row
        _say(options, f"{label}: " + ", ".join(f"{k} {100 * v:.2f}" for k, v in row.items()))
    return table


@contextlib.contextmanager
def pinned(threads: int) -> Iterator[None]:
    """Fix what makes a CPU run vary, for the block: the thread count (the order of float sums
    in matmuls) and nondeterministic kernels (an error instead, should one be used)."""
    import torch

    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


def _run(options: DemoOptions, out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    data, sizes, counts = _data(options, out)
    _say(options, f"data: {counts} triplets, preservation sentences {sizes}")
    saber = None
    if options.saber_per_n is not None:
        from bindkit.saber.build import generate_saber

        saber = out / "saber"
        generate_saber(saber, per_n=options.saber_per_n, overwrite=True)
    runs: dict[str, dict[str, Any]] = {}
    for k in range(options.soup):
        kind = run_preservation(options, k) if options.preserve_weight > 0 else None
        name = f"preserve-s{k}" if k else "preserve"
        runs[name] = _train(options, data, name, preserve=kind, seed=options.seed + k)
    if options.plain:
        runs["plain"] = _train(options, data, "plain", preserve=None)
    final = out / "runs" / "preserve"
    if options.soup > 1:
        final = _soup(out, [n for n in runs if n.startswith("preserve")])
    for variant in ("adapter-raw", "adapter-lines"):
        if (out / variant).exists():
            shutil.rmtree(out / variant)
        shutil.copytree(final / variant, out / variant)
    # the plain run is the comparison row (its raw update); the preserved run's raw and LiNeS
    models = {"base": MODEL}
    named = [("plain", "raw"), ("preserve", "raw"), ("preserve", "lines")]
    named += [("preserve-soup", "raw"), ("preserve-soup", "lines")]
    made = {*runs, *(["preserve-soup"] if options.soup > 1 else [])}
    for name, variant in named:
        if name in made and not (variant == "lines" and LINES_ALPHA == 1.0):  # lines = raw
            models[f"{name} {variant}"] = (
                f"{MODEL}+adapter={out / 'runs' / name / f'adapter-{variant}'}"
            )
    table = _evaluate(options, out, models, saber)
    seconds = time.perf_counter() - started
    report = render_report(options, counts, sizes, runs, table, seconds)
    atomic_write_text(out / "report.md", report)
    summary = {
        "table": table,
        "seconds": round(seconds, 1),
        "triplets": counts,
        "runs": {
            k: {"lines": v["lines"], "optimizer_steps": v["optimizer_steps"]}
            for k, v in runs.items()
        },
    }
    atomic_write_text(out / "demo.json", json.dumps(summary, indent=2) + "\n")
    return summary


def _soup(out: Path, names: list[str]) -> Path:
    """The preserved runs' raw adapters averaged (``bindkit soup``) into ``runs/preserve-soup``,
    LiNeS applied at ``LINES_ALPHA`` as for one run; returns that run directory."""
    from bindkit.train.lines import apply_lines
    from bindkit.train.soup import average_adapters

    soup = out / "runs" / "preserve-soup"
    average_adapters([out / "runs" / n / "adapter-raw" for n in names], soup / "adapter-raw")
    if (soup / "adapter-lines").exists():
        shutil.rmtree(soup / "adapter-lines")
    if LINES_ALPHA == 1.0:
        shutil.copytree(soup / "adapter-raw", soup / "adapter-lines")
    else:
        apply_lines(soup / "adapter-raw", soup / "adapter-lines", alpha=LINES_ALPHA)
    return soup


def render_report(
    options: DemoOptions,
    counts: dict[str, int],
    preserved: dict[str, int],
    runs: dict[str, dict[str, Any]],
    table: dict[str, dict[str, float]],
    seconds: float,
) -> str:
    columns = {
        "saber_t2t_mcq": "SABER t2t MCQ",
        "heldout_triplets": "held-out full-caption triplets",
        "sts_spearman": "STS Spearman",
        **{f"scpp_{s}": f"SC++ TOT {s}" for s in SCPP_SUBSETS},
    }
    shown = [c for c in columns if any(c in row for row in table.values())]
    lines = [
        "# bindkit demo finetune: all-MiniLM-L6-v2, LoRA on binding triplets (CPU)",
        "",
        "| model | " + " | ".join(columns[c] for c in shown) + " |",
        "|---" * (len(shown) + 1) + "|",
    ]
    for label, row in table.items():
        lines.append(f"| {label} | " + " | ".join(f"{100 * row[c]:.2f}" for c in shown) + " |")
    lines += ["", "What was chosen and why:", ""]
    lines.append(
        f"- data: {options.examples} template examples (`bindkit synth --backend template`, seed "
        f"{options.seed}); the train split after NoOverlap against the SABER vocabulary (no "
        "SABER attribute or object word anywhere, distractors included). Each example gives "
        "full-caption triplets (its short query → its caption vs the caption's attribute or "
        f"object swap) and {' and '.join(KIND_TEXT[k] for k in MIXES[MIX][1:])}; a shuffled mix "
        f"(`{MIX}`), "
        f"{counts['train']} triplets. Val and held-out test triplets are the first "
        f"{counts['val']} and {counts['test']} of the standard split's full captions."
    )
    lines.append(
        f"- training: LoRA r4/α4 on q/k/v/output of all 6 layers, hinge {MARGIN}, AdamW wd 0.01, "
        f"batch {BATCH}, lr {LR}, {STEPS} steps: the paper's 5e-5 does not move a 22M-parameter "
        "model (issue table). The frozen model's dropout is off (a deterministic forward, "
        f"faster on the CPU); torch runs on {options.threads} threads with deterministic "
        "algorithms, so a rerun gives the same table."
    )
    for name, run in runs.items():
        lines.append(f"- run `{name}`: {run['optimizer_steps']} steps, {run['train_seconds']} s.")
    if options.soup > 1:
        lines.append(
            f"- soup: the {options.soup} preserved runs (seeds {options.seed}–"
            f"{options.seed + options.soup - 1}; preservation sets "
            + ", ".join(f"`{run_preservation(options, k)}`" for k in range(options.soup))
            + ") averaged in weight space (`bindkit soup`: the mean of their LoRA updates, "
            "exact): a run on each side of the binding / STS front, and what one seed learnt "
            "alone halved; the shipped adapter."
        )
    lines.append(
        f"- LiNeS α {LINES_ALPHA} (layer ℓ keeps α + (1 − α)·ℓ/5 of its update) for the shipped "
        "adapter: chosen once on a dev panel (SugarCrepe text triplets and SICK train) in "
        "issue 18's recipe search (`benchmarks/recipe/`: the largest α whose dev STS stays "
        "within 0.6 of the base model's), not on this table's files"
        + (
            "; at α 1 the whole update is kept, so `adapter-lines/` equals `adapter-raw/`."
            if LINES_ALPHA == 1.0
            else "."
        )
    )
    sets = "; ".join(
        f"{'`' + kind + '`, ' if len(preserved) > 1 else ''}{size} sentences, "
        f"{PRESERVATION_TEXT[kind]}"
        for kind, size in preserved.items()
    )
    lines.append(
        f"- preservation (`preserve` rows): {sets}; {PRESERVE_BATCH} per batch, loss += "
        f"{options.preserve_weight} · "
        "mean(1 − cos(f(x), f_base(x))). Distilling attribute-free copies of the training "
        "captions instead kept STS too but stopped binding from transferring to SABER's "
        "vocabulary (≈80 %): they share the structure that binding has to change."
    )
    if options.sts:
        lines.append(
            f"- STS: Spearman on `{options.sts}`; it did not choose anything (reported only)."
        )
    if options.scpp:
        lines.append(
            f"- SugarCrepe++ (`{options.scpp}`): text-only TOT accuracy per subset (both "
            "captions closer to each other than either is to the negative); reported only."
        )
    else:
        lines.append("- STS: no `--sts` file given, so no STS column (bindkit does not ship SICK).")
    shipped = "`preserve-soup`" if options.soup > 1 else "the `preserve` run's"
    lines.append(
        f"- adapters: `adapter-lines/` and `adapter-raw/` are {shipped}; "
        f"wall time {seconds / 60:.1f} min."
    )
    return "\n".join(lines) + "\n"
