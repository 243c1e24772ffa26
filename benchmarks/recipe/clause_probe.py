"""A probe of role binding across clauses, in SugarCrepe++ swap_obj's own shape ("a person with
a ball facing a child with a racquet" / "girls wash a motorcycle while men look on"), made from
the role words (``bindkit.synth.roles``: none occurs in SugarCrepe, SugarCrepe++ or SICK)::

    python benchmarks/recipe/clause_probe.py --pairs 2500 --out probe.jsonl

Two row families, ``--pairs`` of each, alternating:

* ``probe_clause``: who does which activity. "A walrus sulks while a lynx yodels." → the clauses
  reordered or rejoined ("While a lynx yodels, a walrus sulks.", "A lynx yodels as a walrus
  sulks.", "A lynx yodels and a walrus sulks.") vs the two beings exchanged ("A lynx sulks while
  a walrus yodels."), so the negative holds the query's words;
* ``probe_hold``: who holds what. "A tutor with a pestle blames a grocer with a banjo." → its
  passive ("A grocer with a banjo is blamed by a tutor with a pestle.") vs the two things
  exchanged between the beings.

The activities are intransitive verbs checked against the reported sets as the role words are
(``overlap``); the rows are probe data, not a packaged mix (no row kind validates them). The
study that used them: docs/experiments/binding-v2-search.md, "A second probe".
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path
from typing import Any

from bindkit.synth.everyday import article
from bindkit.synth.roles import role_words

# intransitive activities, third person singular; none (no inflection either) in SugarCrepe,
# SugarCrepe++ or SICK (``bindkit.synth.roles.overlap`` on the three folders: none found)
ACTIVITIES = (
    "yodels", "hiccups", "sulks", "tiptoes", "somersaults", "whistles", "snores", "shivers",
    "waltzes", "pirouettes", "dozes", "gargles", "hums", "stammers", "fidgets", "grumbles",
    "mumbles", "winks", "shrugs", "curtsies", "stutters", "blushes", "sobs", "chuckles",
    "cartwheels", "moonwalks", "doodles", "bellows", "wheezes", "snickers", "slouches", "pouts",
    "sniffles", "dawdles", "fumbles", "hollers", "grimaces", "dithers", "quivers", "shuffles",
    "saunters", "swaggers", "brags", "gossips", "haggles", "loiters",
)  # fmt: skip


def _np(noun: str) -> str:
    return f"{article(noun)} {noun}"


def _cap(text: str) -> str:
    return text[0].upper() + text[1:] + "."


def _row(kind: str, query: str, positive: str, negative: str) -> dict[str, Any]:
    return {"query": query, "positive": positive, "negative": negative, "type": "role",
            "negative_kind": "role", "row_kind": kind}  # fmt: skip


def probe_rows(pairs: int, seed: int = 0) -> list[dict[str, Any]]:
    """``pairs`` rows of each family, alternating, drawn from ``seed``.

    Example:
        >>> [r["row_kind"] for r in probe_rows(1)]
        ['probe_clause', 'probe_hold']
    """
    words = role_words()
    rng = random.Random(seed)
    rows = []
    for i in range(pairs):
        a, b = rng.sample(words.beings, 2)
        x, y = rng.sample(ACTIVITIES, 2)
        query = _cap(f"{_np(a)} {x} while {_np(b)} {y}")
        positive = (
            f"while {_np(b)} {y}, {_np(a)} {x}",
            f"{_np(b)} {y} as {_np(a)} {x}",
            f"{_np(b)} {y} and {_np(a)} {x}",
        )[i % 3]
        swapped = (
            f"{_np(b)} {x} while {_np(a)} {y}" if i % 2 else f"{_np(a)} {y} while {_np(b)} {x}"
        )
        rows.append(_row("probe_clause", query, _cap(positive), _cap(swapped)))
        a, b = rng.sample(words.beings, 2)
        t, u = rng.sample(words.things, 2)
        verb = rng.choice(words.verbs)
        query = _cap(f"{_np(a)} with {_np(t)} {verb[0]} {_np(b)} with {_np(u)}")
        positive = _cap(f"{_np(b)} with {_np(u)} is {verb[1]} by {_np(a)} with {_np(t)}")
        swapped = (
            f"{_np(a)} with {_np(u)} {verb[0]} {_np(b)} with {_np(t)}"
            if i % 2
            else f"{_np(b)} with {_np(t)} {verb[0]} {_np(a)} with {_np(u)}"
        )
        rows.append(_row("probe_hold", query, positive, _cap(swapped)))
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=2500, help="rows of each family")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", required=True, help="JSONL file to write (must not exist)")
    args = parser.parse_args(argv)
    if not 1 <= args.pairs <= 1_000_000:
        parser.error(f"--pairs {args.pairs}: give 1 to 1,000,000")
    out = Path(args.out)
    if out.exists():
        parser.error(f"--out {out}: exists; choose a new file")
    from bindkit.support import atomic_write_text

    rows = probe_rows(args.pairs, args.seed)
    atomic_write_text(out, "".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(rows)} rows → {out}")


if __name__ == "__main__":
    main()
