"""Checkpoints of a training run: ``OUT/checkpoint/state.pt`` holds the LoRA weights, the
optimizer and schedule, the RNG, the history and the micro-batch reached, with the run's identity
(:func:`~bindkit.train.reuse.run_identity`); a rerun with that identity resumes from it
(:func:`resume`), another is refused with one line. A finished run drops it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError
from bindkit.train.config import BaseTrainConfig
from bindkit.train.reuse import identity_change

__all__ = ["CHECKPOINT", "checkpoint_file", "resume", "save_checkpoint"]

CHECKPOINT = "checkpoint"


def checkpoint_file(out: Path) -> Path:
    """Where the run in ``out`` keeps its checkpoint."""
    return out / CHECKPOINT / "state.pt"


def save_checkpoint(
    out: Path,
    identity: Mapping[str, Any],
    micro: int,
    trainable: list[Any],
    optimizer: Any,
    scheduler: Any,
    history: list[dict[str, Any]],
) -> None:
    """Write the state at micro-batch ``micro`` to :func:`checkpoint_file` (through a temporary
    file and a rename, so a kill leaves the previous checkpoint whole)."""
    import torch

    folder = out / CHECKPOINT
    folder.mkdir(parents=True, exist_ok=True)
    state = {
        "identity": identity,
        "micro": micro,
        "trainable": [p.detach().cpu().clone() for p in trainable],
        "optimizer": optimizer.state_dict(),
        "scheduler": None if scheduler is None else scheduler.state_dict(),
        "rng": torch.get_rng_state(),
        "history": history,
    }
    tmp = folder / ".state.pt.tmp"
    torch.save(state, tmp)
    tmp.replace(folder / "state.pt")


def resume(
    config: BaseTrainConfig,
    identity: Mapping[str, Any],
    *,
    reuse: bool,
    trainable: list[Any],
    optimizer: Any,
    scheduler: Any,
    history: list[dict[str, Any]],
    say: Callable[[str], None],
) -> int:
    """Load the checkpoint in ``config.out`` into ``trainable``, ``optimizer``, ``scheduler``,
    the RNG and ``history``; returns the micro-batch to start at (0: no checkpoint, or
    ``--overwrite`` without ``reuse``, or with ``reuse`` and ``--overwrite`` a checkpoint of
    another identity).

    Raises:
        BindkitError: a checkpoint that is not readable, or one of another identity (named in
            one line) without ``--overwrite``.
    """
    import torch

    path = checkpoint_file(Path(config.out))
    if not path.is_file() or (config.overwrite and not reuse):
        return 0
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception:  # a torn or foreign file: torch raises many kinds
        raise BindkitError(
            f"{path}: not a readable checkpoint; pass --overwrite to start over"
        ) from None
    stored = state.get("identity") if isinstance(state, dict) else None
    if stored != identity:
        if config.overwrite:  # reuse mode: a checkpoint of another run starts over
            return 0
        change = identity_change(config, stored, identity)
        raise BindkitError(
            f"{path}: a checkpoint of a run with other options or data ({change}); pass "
            "--overwrite or another --out"
        )
    with torch.no_grad():
        for parameter, saved in zip(trainable, state["trainable"], strict=True):
            parameter.copy_(saved.to(parameter.device))
    optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    history += state["history"]
    say(f"resuming from {path} at micro-batch {state['micro']}")
    return int(state["micro"])
