"""What a training run reads, read and checked in seconds before any model loads
(:func:`check_inputs`): every input file, the split set a split file belongs to, and ``--out``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import check_can_create, check_not_input
from bindkit.errors import BindkitError
from bindkit.tasks.base import Dataset
from bindkit.train.auxiliary import read_sentences
from bindkit.train.config import BaseTrainConfig, TrainConfig
from bindkit.train.objectives import Objective, objective_for

__all__ = ["Inputs", "check_inputs"]


@dataclass
class Inputs:
    """Everything a run reads, read and checked before the model loads."""

    objective: Objective
    val: list[dict[str, Any]] | None
    sts: Dataset | None
    preserve: list[str] | None


def check_inputs(config: BaseTrainConfig, *, reuse: bool = False) -> Inputs:
    """Read and check every input and the output place, in seconds, before any model loads.

    With ``reuse``, a finished run in ``--out`` is left to
    :func:`~bindkit.train.trainer.train`'s identity check.

    Raises:
        BindkitError: a file that is missing, empty or malformed; a split file whose
            ``splits.json`` is missing or stale; ``--out`` that is an input, holds an input,
            lies under a file, or holds a finished run; a model spec that already has an adapter.
    """
    from bindkit.embed.registry import Spec
    from bindkit.tasks.text.triplets import read_triplets

    out = Path(config.out)
    check_not_input(out, [Path(p) for p in config.inputs().values()])
    check_can_create(out)
    if (out / "train.json").is_file() and not config.overwrite and not reuse:
        raise BindkitError(
            f"{out}: holds a finished run ({out / 'train.json'}); pass --overwrite or another --out"
        )
    if "adapter" in Spec.parse(config.model).options:
        raise BindkitError(
            f"--model {config.model}: already carries an adapter; train from the base model spec"
        )
    for name in ("train", "val"):
        split = getattr(config, name, None)
        if split is not None and (Path(split).parent / "examples.jsonl").is_file():
            # a split file of a synth run: train on it only if its split set is whole and current
            from bindkit.synth.splits import verify_splits

            verify_splits(Path(split).parent)
    objective = objective_for(config)  # type: ignore[arg-type]
    val = read_triplets(config.val) if config.val else None
    if config.lines and config.lines_alpha is None and val is None:
        raise BindkitError(
            "LiNeS: give --val to choose its alpha, or --lines-alpha A, or "
            + ("--no-lines" if isinstance(config, TrainConfig) else "drop --lines")
        )
    sts = None
    if config.sts:
        from bindkit.tasks.text.sts import STSTask

        sts = STSTask().load(Path(config.sts))
    preserve = read_sentences(config.preserve) if config.preserve else None
    return Inputs(objective, val, sts, preserve)
