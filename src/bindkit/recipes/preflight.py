"""Everything a recipe or a sweep needs, checked in seconds before the first expensive step.

``bindkit finetune`` and ``bindkit sweep`` generate data and train for minutes (hours on a real
model) before they score a panel; a wrong score name, a missing panel file or a model that
cannot be trained must be one line before any of that, not a traceback after it.
:func:`check_before_work` checks the model spec (it resolves and has a torch path:
:func:`bindkit.embed.registry.check_trainable`), every panel entry (its score is one its task
declares, its pairing one the task runs, its data there and readable by the task) and the
output folder (creatable and writable).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from pathlib import Path

from bindkit.errors import BindkitError
from bindkit.recipes.panel import PanelEntry

# panel data a recipe writes itself (its val and test files, its SABER set): checked once written
PLACEHOLDERS = frozenset({"{val}", "{test}", "{saber}"})


def check_panel_entries(where: str, panel: Iterable[PanelEntry]) -> None:
    """Each entry's score is declared by its task (main score or official scores), its pairing
    is one the task runs, and its data (unless a recipe placeholder) is there and loads.

    Raises:
        BindkitError: one line naming ``panel[i]`` and the key.
    """
    from bindkit.tasks.base import get_task, resolve_data

    at = f"{where}: " if where else ""
    for index, entry in enumerate(panel):
        key = f"{at}panel[{index}] ({entry.name})"
        task = get_task(entry.task)
        meta = task.metadata
        declared = (meta.main_score, *meta.scores)
        if entry.score not in declared:
            close = difflib.get_close_matches(entry.score, declared, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise BindkitError(
                f"{key}.score {entry.score!r}: task {entry.task} gives {', '.join(declared)}{hint}"
            )
        if entry.pairing is not None:
            unknown = [p for p in entry.pairing.split(",") if p.strip() not in meta.pairings]
            if unknown:
                raise BindkitError(
                    f"{key}.pairing {unknown[0]!r}: task {entry.task} runs "
                    f"{', '.join(meta.pairings)}"
                )
        if entry.data in PLACEHOLDERS:
            continue
        try:
            task.load(resolve_data(meta, entry.data))
        except BindkitError as exc:
            raise BindkitError(f"{key}.data: {exc}") from None
        except (OSError, ValueError, KeyError) as exc:  # a reader's own error on a bad file
            raise BindkitError(
                f"{key}.data {entry.data}: not readable as {entry.task} data ({exc})"
            ) from None


def check_out_writable(out: Path) -> None:
    """``out`` (or the nearest folder above it that exists) can be written to."""
    existing = out
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise BindkitError(f"--out {out}: {existing} is a file; give a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise BindkitError(
            f"--out {out}: {existing} is not writable; give a folder you can write to"
        )


def check_before_work(
    models: Iterable[str], panel: Iterable[PanelEntry], out: Path, *, where: str = ""
) -> None:
    """Every check that needs no data generated and no weights loaded (see the module)."""
    from bindkit.embed.registry import check_trainable

    for model in dict.fromkeys(models):
        check_trainable(model)
    check_panel_entries(where, panel)
    check_out_writable(out)


__all__ = ["PLACEHOLDERS", "check_before_work", "check_out_writable", "check_panel_entries"]
