"""Finetuning: one loop for every objective, losses, LoRA, LiNeS; torch imported only when used."""

from __future__ import annotations

from typing import Any

_LAZY = {
    "TrainConfig": "bindkit.train.config",
    "ClusterTrainConfig": "bindkit.train.config",
    "train": "bindkit.train.trainer",
    "train_triplets": "bindkit.train.trainer",
    "train_clusters": "bindkit.train.trainer",
    "check_inputs": "bindkit.train.inputs",
    "apply_lines": "bindkit.adapters.lines",
    "lines_factors": "bindkit.adapters.lines",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bindkit.train' has no attribute {name!r}")


__all__ = list(_LAZY)
