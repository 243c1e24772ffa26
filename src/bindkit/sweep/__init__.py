"""``bindkit sweep``: an Optuna study over ``TrainConfig`` overrides, scored on a panel.

Optuna and matplotlib are imported only when a sweep runs.
"""

from __future__ import annotations

from typing import Any

_LAZY = {
    "load_config": "bindkit.sweep.config",
    "run_sweep": "bindkit.sweep.study",
    "write_outputs": "bindkit.sweep.report",
    "pareto_front": "bindkit.sweep.front",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bindkit.sweep' has no attribute {name!r}")


__all__ = list(_LAZY)
