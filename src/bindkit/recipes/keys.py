"""Every key a recipe TOML takes, with its help, and a recipe's keys resolved with their source.

:func:`recipe_keys` reads the keys from the dataclasses that check them (:class:`Recipe`,
:class:`DataSpec`, :class:`RunSpec`, :class:`SoupSpec`, :class:`PanelEntry` and, for
``[train]``, :class:`~bindkit.train.config.TrainConfig` less the fields the recipe sets itself),
so the docs' recipe-key page and ``bindkit finetune --show`` cannot drift from the checker.
:func:`resolve` says, for one recipe, where each value comes from: the recipe file, ``--set``
(or ``--model``), the default, or the learning-rate size rule (:mod:`bindkit.recipes.scale`).
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bindkit.recipes.panel import PanelEntry
from bindkit.recipes.recipe import OWN_FIELDS, DataSpec, Recipe, RunSpec, SoupSpec
from bindkit.recipes.scale import LARGE, LARGE_LR, SMALL_LR

#: a key with no default: the recipe must give it
REQUIRED = "(required)"
#: where a resolved value came from
SOURCES = ("recipe", "--set", "--model", "default", "size rule")
#: the size rule, as --show prints it (the parameter count is taken when the run starts)
SIZE_RULE = f"{SMALL_LR:g} (< {LARGE / 1e9:g}B parameters) or {LARGE_LR:g}"
#: the widest value --show prints (a longer one ends in …)
WIDTH = 40


@dataclass(frozen=True)
class RecipeKey:
    """One TOML key: ``data.examples``, ``train.lr``, ``runs[].seed``, ``panel[].task`` …"""

    key: str
    type: str
    default: Any  # REQUIRED when the key has no default
    help: str


@dataclass(frozen=True)
class ResolvedKey:
    """One key of one recipe: its value and where the value came from (:data:`SOURCES`)."""

    key: str
    value: Any
    help: str
    source: str


def _type(kind: Any) -> str:
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) is tuple or kind is tuple:
        return "list"
    if args and len(args) < len(typing.get_args(kind)):  # Optional[X]
        return _type(args[0])
    if typing.get_origin(kind) is dict:
        return "table"
    return getattr(kind, "__name__", str(kind))


def _default(spec: dataclasses.Field[Any]) -> Any:
    if spec.default is not dataclasses.MISSING:
        return spec.default
    if spec.default_factory is not dataclasses.MISSING:
        return spec.default_factory()
    return REQUIRED


def _fields(cls: type, prefix: str, skip: tuple[str, ...] = ()) -> list[RecipeKey]:
    hints = typing.get_type_hints(cls)
    keys = []
    for spec in dataclasses.fields(cls):
        if spec.name in skip or not spec.init:
            continue
        key = spec.metadata.get("toml") or f"{prefix}{spec.name}"
        help_text = str(spec.metadata.get("help", ""))
        keys.append(RecipeKey(key, _type(hints[spec.name]), _default(spec), help_text))
    return keys


def train_keys() -> list[RecipeKey]:
    """``train.*``: every TrainConfig field a recipe may override (not those it sets itself)."""
    from bindkit.train.config import TrainConfig

    keys = _fields(TrainConfig, "train.", skip=OWN_FIELDS)
    return [
        dataclasses.replace(k, help=f"{k.help}; unset in a recipe: the size rule, {SIZE_RULE}")
        if k.key == "train.lr"
        else k
        for k in keys
    ]


def recipe_keys() -> list[RecipeKey]:
    """Every key of a recipe TOML, in the order of its tables."""
    top = _fields(Recipe, "", skip=("data", "train", "runs", "soup", "panel"))
    order = ("name", "description", "model")
    return [
        *sorted((k for k in top if "." not in k.key), key=lambda k: order.index(k.key)),
        *_fields(DataSpec, "data."),
        *train_keys(),
        *_fields(RunSpec, "runs[]."),
        *_fields(SoupSpec, "soup."),
        *(k for k in top if "." in k.key),
        *_fields(PanelEntry, "panel[]."),
    ]


def _written(document: Mapping[str, Any], key: str) -> bool:
    """Whether the TOML ``document`` sets ``key`` (``data.examples``; ``lines.rule``)."""
    head, _, tail = key.partition(".")
    if head not in document:
        return False
    return not tail or (isinstance(document[head], Mapping) and tail in document[head])


def resolve(
    recipe: Recipe, written: Mapping[str, Any], changes: Mapping[str, Any]
) -> list[ResolvedKey]:
    """Each scalar key of ``recipe`` with its value and source.

    ``written`` is the TOML document as the file holds it (before ``--set``); ``changes`` the
    ``--set`` and ``--model`` changes applied to it (``{"model": ...}`` is ``--model``). The
    ``[[runs]]`` and ``[[panel]]`` entries are listed per entry (``runs[0].seed``).
    """
    document = recipe.to_dict()
    document["lines"].setdefault("alpha", None)
    resolved: list[ResolvedKey] = []

    def source(key: str) -> str:
        if key in changes:
            return "--model" if key == "model" else "--set"
        if _written(written, key):
            return "recipe"
        return "default"

    for spec in recipe_keys():
        key = spec.key
        if "[]" in key:
            continue
        head, _, tail = key.partition(".")
        if head == "train":
            if tail in recipe.train:
                value, where = recipe.train[tail], source(key)
            elif tail == "lr":
                value, where = SIZE_RULE, "size rule"
            else:
                value, where = spec.default, "default"
        elif tail:
            table = document.get(head)
            if table is None:  # no [soup]
                continue
            value, where = table.get(tail), source(key)
        else:
            value, where = document.get(head, spec.default), source(key)
        resolved.append(ResolvedKey(key, value, spec.help, where))
    listed: tuple[tuple[str, tuple[Any, ...], type], ...] = (
        ("runs", recipe.runs, RunSpec),
        ("panel", recipe.panel, PanelEntry),
    )
    for table, entries, cls in listed:
        helps = {f.name: str(f.metadata.get("help", "")) for f in dataclasses.fields(cls)}
        for index, entry in enumerate(entries):
            for name, value in dataclasses.asdict(entry).items():
                written_entries = written.get(table)
                there = (
                    isinstance(written_entries, list)
                    and index < len(written_entries)
                    and name in written_entries[index]
                )
                where = "--set" if table in changes else "recipe" if there else "default"
                resolved.append(ResolvedKey(f"{table}[{index}].{name}", value, helps[name], where))
    return resolved


def _shown(value: Any) -> str:
    if value is None:
        return "(unset)"
    text = (
        "[" + ", ".join(_shown(v) for v in value) + "]"
        if isinstance(value, list | tuple)
        else str(value)
    )
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def format_resolved(rows: list[ResolvedKey]) -> str:
    """The ``--show`` table: key, value, source, help; one line per key, columns aligned."""
    header = ("key", "value", "source", "help")
    cells = [header, *((r.key, _shown(r.value), r.source, r.help) for r in rows)]
    widths = [max(len(c[i]) for c in cells) for i in range(3)]
    return "\n".join(
        "  ".join(c[i].ljust(widths[i]) for i in range(3)) + "  " + c[3] for c in cells
    )
