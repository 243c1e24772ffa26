"""Finetuning: losses, LoRA, LiNeS, trainers; torch is imported only when used."""

from __future__ import annotations

from typing import Any

_LAZY = {
    "TrainConfig": "bindkit.train.config",
    "train_triplets": "bindkit.train.trainer",
    "apply_lines": "bindkit.train.lines",
    "lines_factors": "bindkit.train.lines",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bindkit.train' has no attribute {name!r}")


__all__ = list(_LAZY)
