"""Finetuning recipes: a :class:`Recipe` is data (TOML), :func:`run_recipe` runs it end to end.

data (``bindkit.synth``) → one training run per seed (``bindkit.train``, reused by its run
identity) → soup (``bindkit.adapters.soup``) → LiNeS (``bindkit.adapters.lines``) → panel
(``bindkit.evaluate``) → ``OUT/recipe.json``, ``OUT/report.md``, ``OUT/adapter/``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["PanelEntry", "Recipe", "packaged_recipe", "run_recipe"]


def __getattr__(name: str) -> Any:
    if name in ("Recipe", "packaged_recipe"):
        from bindkit.recipes import recipe

        return getattr(recipe, name)
    if name == "PanelEntry":
        from bindkit.recipes.panel import PanelEntry

        return PanelEntry
    if name == "run_recipe":
        from bindkit.recipes.runner import run_recipe

        return run_recipe
    raise AttributeError(name)
