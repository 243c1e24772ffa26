"""A recipe's panel: named scores, each ``bindkit.evaluate(task, data)`` → ``scores[score]``.

One definition for the recipe (:mod:`bindkit.recipes.recipe`) and the sweep
(:mod:`bindkit.sweep.config`): the TOML ``[[panel]]`` array of tables, read and checked by
:func:`read_panel`, scored by :func:`score_panel`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

PANEL_KEYS = ("name", "task", "data", "score", "pairing", "subset")


@dataclass(frozen=True)
class PanelEntry:
    """One panel score: ``bindkit.evaluate(task=task, data=data)`` → ``scores[score]``."""

    name: str
    task: str
    score: str
    data: str | None = None
    pairing: str | None = None
    subset: str | None = None


def _at(where: str) -> str:
    return f"{where}: " if where else ""


def known_keys(where: str, prefix: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    """Refuse a key of ``table`` outside ``allowed``, one line with a "did you mean"."""
    for key in table:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
            raise BindkitError(
                f"{_at(where)}unknown key {prefix}{key}{hint}; valid: {', '.join(allowed)}"
            )


def as_table(where: str, key: str, value: Any) -> dict[str, Any]:
    """``value`` if it is a TOML table, else one line naming ``[key]``."""
    if not isinstance(value, dict):
        raise BindkitError(f"{_at(where)}[{key}] must be a table")
    return value


def read_panel(where: str, base: Path | None, entries: Any) -> tuple[PanelEntry, ...]:
    """The ``[[panel]]`` entries, checked: keys, types, unique names, known tasks.

    A relative ``data`` path that exists under ``base`` (the TOML file's folder) is read from
    there; anything else (a task's own data name, a recipe placeholder) is kept as written.
    """
    if not isinstance(entries, list) or not entries:
        raise BindkitError(
            f"{_at(where)}[[panel]]: give at least one panel entry (task, data, score)"
        )
    panel = []
    for index, entry in enumerate(entries):
        key = f"panel[{index}]"
        entry = as_table(where, key, entry)
        known_keys(where, f"{key}.", entry, PANEL_KEYS)
        for required in ("name", "task", "score"):
            if not isinstance(entry.get(required), str) or not entry[required]:
                raise BindkitError(f"{_at(where)}{key}.{required}: missing; give a string")
        for optional in ("data", "pairing", "subset"):
            if optional in entry and not isinstance(entry[optional], str):
                raise BindkitError(f"{_at(where)}{key}.{optional}: give a string")
        data = entry.get("data")
        if (
            data is not None
            and base is not None
            and not Path(data).is_absolute()
            and (base / data).exists()
        ):
            data = str(base / data)
        panel.append(
            PanelEntry(
                name=entry["name"],
                task=entry["task"],
                score=entry["score"],
                data=data,
                pairing=entry.get("pairing"),
                subset=entry.get("subset"),
            )
        )
    check_panel(where, tuple(panel))
    return tuple(panel)


def check_panel(where: str, panel: tuple[PanelEntry, ...]) -> None:
    """Unique names and registered tasks (one line naming the entry)."""
    from bindkit.tasks.base import get_task

    names = [p.name for p in panel]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise BindkitError(f"{_at(where)}panel name {duplicate!r} is used twice")
    for index, entry in enumerate(panel):
        try:
            get_task(entry.task)
        except BindkitError as exc:
            raise BindkitError(f"{_at(where)}panel[{index}].task: {exc}") from None


def panel_table(entry: PanelEntry) -> dict[str, str]:
    """``entry`` as its TOML table (the keys that are set)."""
    return {
        k: v
        for k, v in (
            ("name", entry.name),
            ("task", entry.task),
            ("data", entry.data),
            ("score", entry.score),
            ("pairing", entry.pairing),
            ("subset", entry.subset),
        )
        if v is not None
    }


def score_panel(
    model: str, panel: tuple[PanelEntry, ...], results: Path, *, cache: bool = True
) -> dict[str, float]:
    """Each panel entry's score for ``model`` (through :func:`bindkit.evaluate`, resumable).

    An evaluation error names the panel entry first: its message names ``evaluate``'s options
    (``--data``, ``--pairings``), which the TOML file spells ``panel[i].data``, ``.pairing``.
    An entry over several subsets scores their mean.
    """
    from bindkit.evaluation import evaluate

    scores: dict[str, float] = {}
    for index, entry in enumerate(panel):
        try:
            records = evaluate(
                [model],
                task=entry.task,
                data=entry.data,
                pairings=entry.pairing,
                subsets=entry.subset,
                out=results,
                cache=cache,
                report=False,
                verbose=False,
            )
        except BindkitError as exc:
            raise BindkitError(f"panel[{index}] ({entry.name}): {exc}") from None
        values = []
        for record in records:
            if entry.score not in record["scores"]:
                known = ", ".join(k for k, v in record["scores"].items() if not isinstance(v, dict))
                raise BindkitError(
                    f"panel {entry.name}: task {entry.task} has no score {entry.score!r} "
                    f"(it gives {known})"
                )
            values.append(float(record["scores"][entry.score]))
        if not values:
            raise BindkitError(f"panel {entry.name}: evaluated nothing; check its subset/pairing")
        scores[entry.name] = sum(values) / len(values)
    return scores
