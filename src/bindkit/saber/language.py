"""English surface forms of SABER items: indefinite articles, conjunctions and image prompts.

Everything here is a pure function of its arguments, so the validator can re-derive every string
the generator wrote and compare byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from importlib.resources import files

# Words spelled with a vowel but pronounced with a consonant sound ("a unicorn", "a one-eyed").
_CONSONANT_SOUND_PREFIXES = (
    "one",
    "once",
    "uni",
    "use",
    "usu",
    "uti",
    "ute",
    "ukulele",
    "ubiqu",
    "uranium",
    "urinal",
    "urine",
    "ufo",
    "usb",
    "eu",
    "ewe",
)
# "uni-" that is the negating "un-" plus a vowel-initial stem keeps "an" ("an uninformed ...").
_VOWEL_SOUND_EXCEPTIONS = ("unim", "unin", "unidentified", "unironic")
# Words spelled with a consonant but pronounced with a vowel sound: silent h ("an hourglass").
_VOWEL_SOUND_PREFIXES = ("hour", "honest", "honor", "honour", "heir", "herb")
# Letter names that begin with a vowel sound, for initialisms read letter by letter ("an MRI").
_VOWEL_SOUND_LETTERS = set("aefhilmnorsx")
_VOWELS = set("aeiou")
_WORD = re.compile(r"[A-Za-z0-9]+")


def indefinite_article(phrase: str) -> str:
    """Return ``"a"`` or ``"an"`` for ``phrase`` by the pronunciation of its first word.

    Examples:
        >>> indefinite_article("hourglass"), indefinite_article("unicorn")
        ('an', 'a')
        >>> indefinite_article("one-eyed doll"), indefinite_article("umbrella")
        ('a', 'an')
    """
    match = _WORD.search(phrase)
    if match is None:
        raise ValueError(f"cannot choose an article for {phrase!r}: it has no word")
    word = match.group(0)
    lower = word.lower()
    if word[0].isdigit():
        return "an" if _number_starts_with_vowel_sound(word) else "a"
    if len(word) > 1 and word.isupper():  # an initialism: "an MRI", "a USB", "an X-ray"
        return "an" if lower[0] in _VOWEL_SOUND_LETTERS else "a"
    if len(word) == 1:  # a single letter: "an x-axis", "a u-turn", "an s-bend"
        return "an" if lower in _VOWEL_SOUND_LETTERS else "a"
    if lower.startswith(_VOWEL_SOUND_PREFIXES):
        return "an"
    if lower.startswith(_VOWEL_SOUND_EXCEPTIONS):
        return "an"
    if lower.startswith(_CONSONANT_SOUND_PREFIXES):
        return "a"
    return "an" if lower[0] in _VOWELS else "a"


def _number_starts_with_vowel_sound(digits: str) -> bool:
    digits = digits[: len(digits) - len(digits.lstrip("0123456789"))]
    if digits.startswith("8"):
        return True  # eight, eighty, eight hundred ...
    # eleven and eighteen, also as eleven thousand / eighteen million ...
    return len(digits) % 3 == 2 and digits[:2] in ("11", "18")


def with_article(phrase: str) -> str:
    """``"striped cube"`` → ``"a striped cube"``."""
    return f"{indefinite_article(phrase)} {phrase}"


def conjunction(phrases: Sequence[str]) -> str:
    """Join noun phrases as an English list sentence: "A x.", "A x and a y.", "A x, a y and a z.".

    The first letter is capitalised and a period ends the sentence. No serial comma: realised
    attributes may themselves contain "and" ("white and orange striped"), and SABER keeps one
    fixed, simple pattern so every text is re-derivable from its bindings.
    """
    if not phrases:
        raise ValueError("a conjunction needs at least one phrase")
    body = phrases[0] if len(phrases) == 1 else ", ".join(phrases[:-1]) + " and " + phrases[-1]
    return body[0].upper() + body[1:] + "."


def render(pairs: Sequence[tuple[str, str]]) -> str:
    """Render (attribute form, object) pairs: ``[("striped", "cube")]`` → ``"A striped cube."``."""
    return conjunction([with_article(f"{attribute} {obj}") for attribute, obj in pairs])


_PROMPT_TEMPLATE: str | None = None


def image_prompt_template() -> str:
    """The packaged text-to-image prompt template (one ``{scene}`` slot)."""
    global _PROMPT_TEMPLATE
    if _PROMPT_TEMPLATE is None:
        text = files("bindkit.saber").joinpath("data/image_prompt.txt").read_text("utf-8")
        _PROMPT_TEMPLATE = " ".join(
            line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
        )
    return _PROMPT_TEMPLATE


def image_prompt(generation_text: str, n_objects: int) -> str:
    """Build the text-to-image prompt for one scene from its generation-form caption.

    Example:
        >>> image_prompt("A red cube and a transparent kite.", 2)[:40]
        'A CLEVR-style 3D render of exactly 2 obj'
    """
    scene = generation_text[:-1] if generation_text.endswith(".") else generation_text
    scene = scene[0].lower() + scene[1:]
    return image_prompt_template().format(scene=scene, count=n_objects)
