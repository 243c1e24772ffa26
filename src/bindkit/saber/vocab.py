"""SABER vocabulary: objects, attributes (with their realisation types) and the color palette.

A vocabulary is a directory with three files (the packaged one is ``bindkit/saber/data/vocab``):

- ``objects.txt``: one object per line; ``#`` starts a comment line.
- ``colors.txt``: the palette for color slots, one color per line.
- ``attributes.toml``: ``[[attribute]]`` tables with ``name``, ``category``, ``type`` and, by type,
  ``template`` and ``variants`` (see the packaged file's header).

Every problem is reported as a one-line :class:`~bindkit.errors.VocabularyError` naming the file
and the entry.
"""

from __future__ import annotations

import hashlib
import random
import re
import string
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any, Literal

from bindkit.errors import VocabularyError

AttributeType = Literal["standalone", "single-color", "two-color", "fixed-variant"]

#: The template slots each attribute type must have, exactly.
TYPE_SLOTS: dict[str, frozenset[str]] = {
    "standalone": frozenset(),
    "single-color": frozenset({"color"}),
    "two-color": frozenset({"color1", "color2"}),
    "fixed-variant": frozenset({"variant"}),
}
VOCAB_FILES = ("objects.txt", "colors.txt", "attributes.toml")
_ATTRIBUTE_KEYS = {"name", "category", "type", "template", "variants"}
_NAME = re.compile(r"^[a-z0-9][a-z0-9'-]*( [a-z0-9][a-z0-9'-]*)*$")


@dataclass(frozen=True)
class Realization:
    """One instantiated appearance of an attribute, e.g. striped → "white and orange striped"."""

    text: str
    slots: Mapping[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "slots": dict(self.slots)}


@dataclass(frozen=True)
class Attribute:
    """A visual attribute and how it is realised in the generation form."""

    name: str
    category: str
    type: AttributeType
    template: str
    variants: tuple[str, ...] = ()

    def realize(self, rng: random.Random, palette: tuple[str, ...]) -> Realization:
        """Instantiate the template: fill color slots from ``palette`` (two distinct colors for
        two-color attributes) or the variant slot from ``variants``."""
        if self.type == "standalone":
            slots: dict[str, str] = {}
        elif self.type == "single-color":
            slots = {"color": rng.choice(palette)}
        elif self.type == "two-color":
            first, second = rng.sample(palette, 2)
            slots = {"color1": first, "color2": second}
        else:
            slots = {"variant": rng.choice(self.variants)}
        return Realization(self.template.format(**slots), slots)

    def check_realization(self, realization: Realization, palette: tuple[str, ...]) -> str | None:
        """Return why ``realization`` is not a valid instance of this attribute, or None."""
        slots = dict(realization.slots)
        if set(slots) != TYPE_SLOTS[self.type]:
            return (
                f"slots {sorted(slots)} do not match type {self.type} "
                f"(expected {sorted(TYPE_SLOTS[self.type])})"
            )
        if self.type in ("single-color", "two-color"):
            unknown = sorted(v for v in slots.values() if v not in palette)
            if unknown:
                return f"colors {unknown} are not in the palette"
            if self.type == "two-color" and slots["color1"] == slots["color2"]:
                return f"the two colors must differ, both are {slots['color1']!r}"
        if self.type == "fixed-variant" and slots["variant"] not in self.variants:
            return f"variant {slots['variant']!r} is not one of {list(self.variants)}"
        expected = self.template.format(**slots)
        if realization.text != expected:
            return f"text {realization.text!r} does not match the template (expected {expected!r})"
        return None


@dataclass(frozen=True)
class Vocabulary:
    """Objects, attributes and palette, plus a content hash recorded in every manifest."""

    objects: tuple[str, ...]
    attributes: tuple[Attribute, ...]
    palette: tuple[str, ...]
    source: str
    sha256: str

    def attribute(self, name: str) -> Attribute:
        return self._by_name[name]

    @cached_property
    def _by_name(self) -> dict[str, Attribute]:
        return {a.name: a for a in self.attributes}

    def has_attribute(self, name: str) -> bool:
        return name in self._by_name

    def check_supports(self, n_min: int, n_max: int) -> None:
        """Raise :class:`VocabularyError` unless MCQs with N in [n_min, n_max] can be built."""
        if len(self.objects) < n_max:
            raise VocabularyError(
                f"{self.source}/objects.txt: {len(self.objects)} objects, but N = {n_max} needs at "
                f"least {n_max}; add objects or lower --n-max"
            )
        if len(self.attributes) < n_max:
            raise VocabularyError(
                f"{self.source}/attributes.toml: {len(self.attributes)} attributes, but "
                f"N = {n_max} needs at least {n_max}; add attributes or lower --n-max"
            )
        if n_min == 2 and (len(self.objects) < 3 or len(self.attributes) < 3):
            raise VocabularyError(
                f"{self.source}: N = 2 needs at least 3 objects and 3 attributes (the joint-swap "
                "candidate replaces one element with a new one); add entries or raise --n-min"
            )


def subset_vocabulary(
    vocab: Vocabulary, attributes: Sequence[str], objects: Sequence[str], name: str
) -> Vocabulary:
    """The part of ``vocab`` with only the named attributes and objects (the palette is kept):
    e.g. one half of a vocabulary for a NoOverlap split. Its hash is derived from the parent's
    hash and the kept names, so a manifest tells the parts apart.

    Raises:
        VocabularyError: a name is not in ``vocab`` (named), or is listed twice.

    Example:
        >>> part = subset_vocabulary(load_vocabulary("shapes"), ["red", "blue"], ["cube"], "a")
        >>> part.objects, [a.name for a in part.attributes], part.source
        (('cube',), ['red', 'blue'], 'builtin:shapes[a]')
    """
    for kind, names, known in (
        ("attribute", attributes, {a.name for a in vocab.attributes}),
        ("object", objects, set(vocab.objects)),
    ):
        unknown = [n for n in names if n not in known]
        if unknown:
            raise VocabularyError(f"{vocab.source}: no {kind} {unknown[0]!r} to keep in {name!r}")
        if len(set(names)) != len(names):
            raise VocabularyError(f"{vocab.source}[{name}]: a {kind} is listed twice")
    digest = hashlib.sha256(vocab.sha256.encode())
    for names in (attributes, objects):
        digest.update(b"\0" + "\n".join(names).encode("utf-8"))
    return Vocabulary(
        objects=tuple(objects),
        attributes=tuple(vocab.attribute(n) for n in attributes),
        palette=vocab.palette,
        source=f"{vocab.source}[{name}]",
        sha256=digest.hexdigest(),
    )


#: Packaged vocabularies other than the default, by the name ``--vocab`` accepts.
NAMED_VOCABULARIES = {"shapes": "data/vocab_shapes"}


def builtin_vocabulary_dir(name: str | None = None) -> Path:
    """Filesystem path of a packaged vocabulary (the package is installed unzipped): the
    default one, or one of :data:`NAMED_VOCABULARIES`."""
    folder = "data/vocab" if name is None else NAMED_VOCABULARIES[name]
    with as_file(files("bindkit.saber").joinpath(folder)) as path:
        return Path(path)


def load_vocabulary(directory: str | Path | None = None) -> Vocabulary:
    """Load and validate a vocabulary directory; ``None`` loads the packaged one, and a name in
    :data:`NAMED_VOCABULARIES` (``"shapes"``) another packaged one (a directory of that name wins).

    Raises:
        VocabularyError: a file is missing or malformed, or an entry is duplicated, has an
            unknown type, or a template with a missing or extra slot. The message names the
            file and the entry.
    """
    if directory is None:
        root, source = builtin_vocabulary_dir(), "builtin"
    elif str(directory) in NAMED_VOCABULARIES and not Path(directory).is_dir():
        root, source = builtin_vocabulary_dir(str(directory)), f"builtin:{directory}"
    else:
        root = Path(directory)
        source = str(root)
        if not root.is_dir():
            raise VocabularyError(f"{root}: vocabulary directory not found; pass --vocab DIR")
    digest = hashlib.sha256()
    raw: dict[str, bytes] = {}
    for name in VOCAB_FILES:
        path = root / name
        if not path.is_file():
            raise VocabularyError(
                f"{source}/{name}: missing; a vocabulary directory needs {', '.join(VOCAB_FILES)}"
            )
        raw[name] = path.read_bytes()
        digest.update(name.encode() + b"\0" + raw[name] + b"\0")
    objects = _read_list(raw["objects.txt"], f"{source}/objects.txt", "object")
    palette = _read_list(raw["colors.txt"], f"{source}/colors.txt", "color")
    attributes = _read_attributes(raw["attributes.toml"], f"{source}/attributes.toml", palette)
    attribute_names = {a.name for a in attributes}
    for obj in objects:
        if obj in attribute_names:
            raise VocabularyError(
                f"{source}/objects.txt: object {obj!r} is also an attribute name; rename one"
            )
    _check_shared_words(objects, f"{source}/objects.txt")
    return Vocabulary(tuple(objects), tuple(attributes), tuple(palette), source, digest.hexdigest())


def _read_list(data: bytes, where: str, what: str) -> list[str]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VocabularyError(f"{where}: not UTF-8 text ({exc.reason}); save it as UTF-8") from exc
    entries: list[str] = []
    seen: dict[str, int] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        if not _NAME.match(entry):
            raise VocabularyError(
                f"{where}:{lineno}: {what} {entry!r} must be lower-case words of letters, digits, "
                "hyphens or apostrophes separated by single spaces"
            )
        if entry in seen:
            raise VocabularyError(
                f"{where}:{lineno}: duplicate {what} {entry!r} (first on line {seen[entry]}); "
                "remove one"
            )
        seen[entry] = lineno
        entries.append(entry)
    if not entries:
        raise VocabularyError(f"{where}: no {what}s found; list one {what} per line")
    return entries


def _check_shared_words(objects: list[str], where: str) -> None:
    owner: dict[str, str] = {}
    for obj in objects:
        for word in obj.split():
            if word in owner and owner[word] != obj:
                raise VocabularyError(
                    f"{where}: objects {owner[word]!r} and {obj!r} share the word {word!r}, which "
                    "makes bindings ambiguous at the word level; rename one"
                )
            owner[word] = obj


def _read_attributes(data: bytes, where: str, palette: list[str]) -> list[Attribute]:
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise VocabularyError(f"{where}: invalid TOML ({exc}); fix the syntax") from exc
    tables = document.get("attribute")
    if not isinstance(tables, list) or not tables:
        raise VocabularyError(f"{where}: no [[attribute]] tables found; define at least one")
    attributes: list[Attribute] = []
    seen: set[str] = set()
    for index, table in enumerate(tables, start=1):
        label = f"{where}: attribute #{index}"
        if not isinstance(table, dict):
            raise VocabularyError(f"{label}: must be a table")
        name = table.get("name")
        if not isinstance(name, str) or not name:
            raise VocabularyError(f"{label}: missing 'name'; give every attribute a name")
        label = f"{where}: attribute {name!r}"
        extra = sorted(set(table) - _ATTRIBUTE_KEYS)
        if extra:
            raise VocabularyError(
                f"{label}: unknown keys {extra}; allowed keys are {sorted(_ATTRIBUTE_KEYS)}"
            )
        if not _NAME.match(name) or " " in name:
            raise VocabularyError(
                f"{label}: the name must be one lower-case word (hyphens allowed), "
                "e.g. 'soap-bubble'"
            )
        if name in seen:
            raise VocabularyError(f"{label}: duplicate attribute name; remove one")
        seen.add(name)
        category = table.get("category")
        if not isinstance(category, str) or not category:
            raise VocabularyError(f"{label}: missing 'category'; give its semantic category")
        kind = table.get("type")
        if kind not in TYPE_SLOTS:
            raise VocabularyError(
                f"{label}: unknown type {kind!r}; use one of {', '.join(TYPE_SLOTS)}"
            )
        template = table.get("template", name if kind == "standalone" else None)
        if not isinstance(template, str) or not template.strip():
            raise VocabularyError(f"{label}: type {kind} needs a 'template' string")
        slots = _template_slots(template, label)
        expected = TYPE_SLOTS[kind]
        if slots != expected:
            problems = [
                f"{what} slot(s) " + ", ".join("{" + slot + "}" for slot in sorted(group))
                for what, group in (("missing", expected - slots), ("extra", slots - expected))
                if group
            ]
            raise VocabularyError(
                f"{label}: template {template!r} has {'; '.join(problems)} for type {kind}"
            )
        variants = table.get("variants", [])
        if kind == "fixed-variant":
            if (
                not isinstance(variants, list)
                or len(variants) < 2
                or not all(isinstance(v, str) and v.strip() for v in variants)
            ):
                raise VocabularyError(
                    f"{label}: a fixed-variant attribute needs 'variants', a list of at least two "
                    "non-empty strings"
                )
            if len(set(variants)) != len(variants):
                raise VocabularyError(f"{label}: duplicate entries in 'variants'")
        elif "variants" in table:
            raise VocabularyError(f"{label}: 'variants' is only allowed for type fixed-variant")
        if kind == "two-color" and len(palette) < 2:
            raise VocabularyError(
                f"{label}: two-color attributes need at least two colors in colors.txt"
            )
        attributes.append(Attribute(name, category, kind, template, tuple(variants)))
    return attributes


def _template_slots(template: str, label: str) -> frozenset[str]:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise VocabularyError(f"{label}: malformed template {template!r} ({exc})") from exc
    slots = set()
    for _, field_name, format_spec, conversion in parsed:
        if field_name is None:
            continue
        if not field_name or format_spec or conversion:
            raise VocabularyError(
                f"{label}: template {template!r} may only use plain named slots like {{color}}"
            )
        slots.add(field_name)
    return frozenset(slots)
