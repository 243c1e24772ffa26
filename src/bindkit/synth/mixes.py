"""Named training mixes: which row kinds (:mod:`bindkit.synth.augment`,
:mod:`bindkit.synth.everyday`) a training set shuffles together, and what each kind teaches.

A mix is named by a recipe; this module holds no default one (the demo's is
``bindkit.demo.finetune.MIX``). :data:`KIND_TEXT` says in a sentence what each kind is, for the
reports that name a mix.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Callable
from typing import Any

from bindkit.errors import BindkitError
from bindkit.synth.augment import (
    paraphrase_triplets,
    predication_triplets,
    relation_triplets,
    restatement_triplets,
    synonym_triplets,
)
from bindkit.synth.everyday import everyday_triplets

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


def training_triplets(examples: list[Any], seed: int, mix: str) -> list[dict[str, Any]]:
    """A training set of mix ``mix``: the examples' full-caption triplets (short query →
    caption vs its swap, as ``bindkit synth split`` writes them) and the other kinds of
    ``MIXES[mix]`` (:func:`paraphrase_triplets`, :func:`restatement_triplets`, …), shuffled
    together (by ``seed``), as many rows as there are full-caption triplets.

    Example:
        >>> from bindkit.synth.example import Example
        >>> ex = Example("e1", "pair_swap", [("red", "cube"), ("blue", "kite")], "A red cube "
        ...              "sat by a blue kite.", query="a red cube and a blue kite",
        ...              negatives={"attribute": "A blue cube sat by a red kite.",
        ...                         "object": "A red kite sat by a blue cube."})
        >>> len(training_triplets([ex] * 4, 0, "mix3"))
        8
    """
    # lazily: naming a mix or its KIND_TEXT (the demo's --help, its report) needs no splits
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


# What each kind of MIXES teaches, in a clause for the reports that name a mix.
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
