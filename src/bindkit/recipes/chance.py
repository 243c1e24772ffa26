"""Chance levels of panel scores, and the warning when a shipped adapter scores at or below them.

A recipe can finish and still have learnt nothing a user can use: a model whose tokenizer does
not know the data's words (``builtin:tiny-clip`` on the default vocabulary embeds nearly every
word as ``<unk>``), a learning rate far off, four steps. :func:`at_chance` names the panel
columns where the shipped row scores at or below what guessing gets, so ``bindkit finetune``
can say so in one line instead of leaving a table of chance-level numbers unexplained.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bindkit.recipes.panel import PanelEntry

#: (task, score) → what a guess scores, as a fraction: one of SABER's four candidates; one of a
#: triplet's two (a tie counts wrong); no correlation; one of SugarCrepe's two captions;
#: Winoground-style group score (both pairings right: 1/6 for a random 2×2 match)
CHANCE: Mapping[tuple[str, str], float] = {
    ("saber", "mcq_accuracy"): 0.25,
    ("triplets", "triplet_accuracy"): 0.5,
    ("sts", "spearman"): 0.0,
    ("sugarcrepe", "accuracy"): 0.5,
    ("winoground", "group_score"): 1 / 6,
    ("colorswap", "group_score"): 1 / 6,
    ("bivlc", "group_score"): 1 / 6,
}


def at_chance(panel: Sequence[PanelEntry], scores: Mapping[str, float | None]) -> list[str]:
    """``"saber_t2t_mcq 25.00 (chance 25.00)"`` for each panel column whose score in
    ``scores`` (one row of the recipe's table, fractions) is at or below its chance level; columns
    without a known chance level or a score are skipped.

    Example:
        >>> entry = PanelEntry(name="mcq", task="saber", score="mcq_accuracy")
        >>> at_chance([entry], {"mcq": 0.25}), at_chance([entry], {"mcq": 0.31})
        (['mcq 25.00 (chance 25.00)'], [])
    """
    found = []
    for entry in panel:
        level = CHANCE.get((entry.task, entry.score))
        score = scores.get(entry.name)
        if level is not None and score is not None and score <= level + 1e-9:
            found.append(f"{entry.name} {100 * score:.2f} (chance {100 * level:.2f})")
    return found


def chance_warning(recipe_name: str, row: str, found: Sequence[str]) -> str | None:
    """The one line ``bindkit finetune`` prints for :func:`at_chance`'s findings (None: none)."""
    if not found:
        return None
    return (
        f"warning: {recipe_name}: the shipped adapter ({row}) scores at or below chance on "
        f"{'; '.join(found)}: check that the model reads the data's words (its vocabulary), "
        "the learning rate and the number of steps"
    )
