"""Word-level text operations: tokens, article repair, word permutations, distance measures."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from functools import lru_cache

from bindkit.saber.language import indefinite_article as _indefinite_article

# words repeat a lot across examples: remember their article
indefinite_article = lru_cache(maxsize=1 << 16)(_indefinite_article)

WORD = re.compile(r"[A-Za-z0-9]+(?:['’-][A-Za-z0-9]+)*")


def words(text: str) -> list[str]:
    """Lower-cased word tokens (punctuation dropped; hyphenated and elided words kept whole)."""
    return WORD.findall(text.lower())


def word_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in WORD.finditer(text)]


def bag(text: str | list[str]) -> list[str]:
    """The multiset of words (of a text or its tokens) as a sorted list, "an" counted as "a"."""
    tokens = words(text) if isinstance(text, str) else text
    return sorted(["a" if t == "an" else t for t in tokens])


def positions(tokens: Sequence[str], word: str) -> list[int]:
    return [i for i, t in enumerate(tokens) if t == word]


def substitute(text: str, replacements: Mapping[int, str]) -> str:
    """Replace word tokens by index; capitalisation of a replaced word follows the original."""
    spans = word_spans(text)
    out, last = [], 0
    for index, (start, end) in enumerate(spans):
        if index in replacements:
            new = replacements[index]
            if text[start].isupper():
                new = new[0].upper() + new[1:]
            out += [text[last:start], new]
            last = end
    out.append(text[last:])
    return "".join(out)


def repair_articles(text: str, original: str) -> str:
    """Fix "a"/"an" before words that a permutation moved (e.g. "a envelope" → "an envelope").

    Articles whose following word is unchanged from ``original`` are left alone, so an error
    already present in the original is not silently "fixed" in one negative only.
    """
    tokens, before = words(text), words(original)
    fixes = {}
    for i in range(len(tokens) - 1):
        if tokens[i] in ("a", "an") and tokens[i + 1] != before[i + 1]:
            wanted = indefinite_article(tokens[i + 1])
            if wanted != tokens[i]:
                fixes[i] = wanted
    return substitute(text, fixes) if fixes else text


def permute_words(text: str, mapping: Mapping[str, str]) -> str:
    """Move words: every occurrence of key k becomes mapping[k] (a permutation of words), then
    repair articles."""
    tokens = words(text)
    replacements = {i: mapping[t] for i, t in enumerate(tokens) if t in mapping}
    return repair_articles(substitute(text, replacements), text)


def render_query(groups: Sequence[tuple[Sequence[str], str]]) -> str:
    """ "a dated book and a neat lamp": (attributes, object) groups as a lower-case list."""
    phrases = []
    for attributes, obj in groups:
        phrase = " ".join([*attributes, obj])
        phrases.append(f"{indefinite_article(phrase)} {phrase}")
    if len(phrases) == 1:
        return phrases[0]
    return ", ".join(phrases[:-1]) + " and " + phrases[-1]
