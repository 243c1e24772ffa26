"""A recipe's panel: named scores, each ``bindkit.evaluate(task, data)`` → ``scores[score]``.

One definition for the recipe (:mod:`bindkit.recipes.recipe`) and the sweep
(:mod:`bindkit.sweep.config`): the TOML ``[[panel]]`` array of tables, read and checked by
:func:`read_panel`, scored by :func:`score_panel`.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bindkit.errors import BindkitError

if TYPE_CHECKING:
    from bindkit.metrics.paired import PairedChange

PANEL_KEYS = ("name", "task", "data", "score", "pairing", "subset", "half")


@dataclass(frozen=True)
class PanelEntry:
    """One panel score: ``bindkit.evaluate(task=task, data=data, half=half)`` →
    ``scores[score]``.

    ``half`` (``"dev"``/``"test"``, :mod:`bindkit.tasks._halves`) says which fixed half of the
    data the entry reads; None reads all of it. Selection (a sweep's objectives, a search's dev
    panel) may read only dev halves; a reported table reads test halves.
    """

    name: str = field(metadata={"help": "the column's name in the table"})
    task: str = field(metadata={"help": "a bindkit eval --task name"})
    score: str = field(metadata={"help": "the score of the task's result to report"})
    data: str | None = field(
        default=None, metadata={"help": "the data: a path, or {val}, {test}, {saber} in a recipe"}
    )
    pairing: str | None = field(default=None, metadata={"help": "the pairing (tt, ti, it, ii)"})
    subset: str | None = field(default=None, metadata={"help": "the subset, where it has some"})
    half: str | None = field(
        default=None, metadata={"help": "dev or test: the fixed half it reads (unset: all)"}
    )


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
        for optional in ("data", "pairing", "subset", "half"):
            if optional in entry and not isinstance(entry[optional], str):
                raise BindkitError(f"{_at(where)}{key}.{optional}: give a string")
        if "half" in entry:
            from bindkit.tasks._halves import check_half

            check_half(entry["half"], f"{_at(where)}{key}.half")
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
                half=entry.get("half"),
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
    from bindkit.tasks.base import has_halves

    for index, entry in enumerate(panel):
        try:
            task = get_task(entry.task)
        except BindkitError as exc:
            raise BindkitError(f"{_at(where)}panel[{index}].task: {exc}") from None
        if entry.half is not None and not has_halves(task):
            raise BindkitError(
                f"{_at(where)}panel[{index}].half: task {entry.task} has no dev/test halves; "
                "leave half out"
            )


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
            ("half", entry.half),
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
    scores: dict[str, float] = {}
    for index, entry in enumerate(panel):
        try:
            records = _evaluate(model, entry, results, cache)
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


def _evaluate(spec: str, entry: PanelEntry, results: Path, cache: bool) -> list[dict[str, Any]]:
    """``entry``'s evaluation of ``spec`` into ``results`` (a finished one is reused)."""
    from bindkit.evaluation import evaluate

    return evaluate(
        [spec],
        task=entry.task,
        data=entry.data,
        pairings=entry.pairing,
        subsets=entry.subset,
        half=entry.half,
        out=results,
        cache=cache,
        report=False,
        verbose=False,
    )


def panel_changes(
    base: str,
    model: str,
    panel: tuple[PanelEntry, ...],
    results: Path,
    *,
    cache: bool = True,
) -> dict[str, PairedChange | None]:
    """Each entry's change ``model - base`` with its paired bootstrap 95 % interval
    (:func:`bindkit.metrics.paired.paired_bootstrap`), from the per-query scores that the
    panel's evaluations stored (run :func:`score_panel` first: here they are reused).

    A mean score (accuracy, MCQ credit) resamples the per-item credit whose mean is the score;
    Spearman resamples the pairs (their cosines and gold scores); an entry over several subsets
    resamples each subset on its own (its score is the subsets' mean). None for an entry whose
    score does not decompose over what its task stores per item.
    """
    from bindkit.metrics.paired import paired_bootstrap

    changes: dict[str, PairedChange | None] = {}
    for entry in panel:
        left, right = _items(base, entry, results, cache), _items(model, entry, results, cache)
        if left is None or right is None or left[1] is not right[1]:
            changes[entry.name] = None
            continue
        a, b = [], []
        for (ids_a, values_a), (ids_b, values_b) in zip(left[0], right[0], strict=True):
            if ids_a != ids_b:
                raise BindkitError(
                    f"panel {entry.name}: {base} and {model} were scored on different items"
                )
            a.append(values_a)
            b.append(values_b)
        changes[entry.name] = paired_bootstrap(a, b, left[1])
    return changes


def _items(
    spec: str, entry: PanelEntry, results: Path, cache: bool
) -> tuple[list[tuple[tuple[str, ...], Any]], Any] | None:
    """Per (subset, pairing) result of ``entry`` for ``spec``: its item ids and per-item array,
    and the statistic the entry's score is of them."""
    import numpy as np

    from bindkit.metrics.paired import mean_of, spearman_of
    from bindkit.records.per_query import read_per_query
    from bindkit.results.store import result_path

    records = _evaluate(spec, entry, results, cache)
    strata, statistic = [], None
    for record in records:
        path = result_path(
            results,
            record["model"]["spec"],
            record["task"],
            record["data"]["key"],
            str(record.get("subset", "default")),
            record["pairing"],
        )
        items = {item.metric: item for item in read_per_query(path, record) or []}
        score = float(record["scores"][entry.score])
        if entry.score == "spearman" and {"cosine", "gold"} <= set(items):
            cosine, gold = items["cosine"], items["gold"]
            strata.append((cosine.ids, np.stack([cosine.values, gold.values], axis=1)))
            statistic = spearman_of
            continue
        found = next(
            (
                item
                for item in items.values()
                if len(item.values) and abs(float(np.nanmean(item.values)) - score) < 1e-9
            ),
            None,
        )
        if found is None:
            return None
        strata.append((found.ids, found.values))
        statistic = mean_of
    return (strata, statistic) if strata else None
