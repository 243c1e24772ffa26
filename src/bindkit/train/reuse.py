"""The run identity of a training run and the one rule that reuses or resumes it
(:mod:`bindkit.identity` holds the digests and the comparison every command shares).

A finished run in ``--out`` is reused, and a checkpoint resumed, only when the identity it
records is this run's (:func:`run_identity`: the objective, the base model's weights, every input
by content, every result option, what auxiliary losses depend on, the number of processes) and,
for a finished run, its adapters are as it wrote them. Anything else is refused with one line
naming what changed (:func:`identity_change`)."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError
from bindkit.identity import as_stored, changed_output, content_digest, model_weights
from bindkit.identity import identity_change as _identity_change
from bindkit.train.config import NON_RESULT_FIELDS, BaseTrainConfig
from bindkit.train.plan import process_state

__all__ = ["finished_record", "identity_change", "reusable_run", "reused_run", "run_identity"]


def run_identity(config: BaseTrainConfig, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a run's result depends on, the one rule for resuming and reusing a run
    (:mod:`bindkit.identity`).

    The objective, the base model's weights digest (:func:`bindkit.identity.model_weights`: a
    ``+weights=DIR`` or model folder edited in place is another model), the sha256 of every file
    the config reads (by option: ``train``/``clusters``, ``val``, ``sts``, ``preserve``; by
    content, so an input edited in place at the same path counts as another input, and a moved
    one as the same), every option except
    :data:`~bindkit.train.config.OUTPUT_ONLY_FIELDS`, and ``extra``: what auxiliary losses
    passed to :func:`~bindkit.train.trainer.train` depend on (their data's sha256, their
    weights), which the config cannot name.
    """
    inputs = config.inputs()
    options = config.record()
    identity = {
        "objective": config.OBJECTIVE,
        "model": model_weights(config.model),
        "inputs": {name: content_digest(Path(path)) for name, path in inputs.items()},
        "options": {
            k: v for k, v in options.items() if k not in NON_RESULT_FIELDS and k not in inputs
        },
        "extra": dict(extra or {}),
    }
    return as_stored(identity)


def identity_change(config: BaseTrainConfig, old: Any, new: Mapping[str, Any]) -> str:
    """The first way ``old`` (a stored identity) differs from ``new``, in the options' words:
    for the one line that refuses to resume or reuse a run."""

    def shown(key: str) -> str:
        part, _, name = key.partition(".")
        flag = "--" + name.split(".")[0].replace("_", "-")
        if part == "inputs":
            value = getattr(config, name, None)
            return flag if value is None else f"{flag} {value}"
        if part == "model":
            return f"--model {config.model} (its weights)"
        if part == "options":
            return flag
        if part == "extra":
            return f"auxiliary loss {name}"
        return "processes" if part == "world" else part

    change = _identity_change(old, new, shown=shown)
    if change is None:  # equal identities are not refused; callers ask only on a difference
        return "nothing (the identities are equal)"
    if change.startswith("it records no identity"):
        return "it records no run identity (an older bindkit, or not a bindkit run)"
    return change


def reusable_run(
    config: BaseTrainConfig, *, extra_identity: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The record of the finished run in ``config.out`` if it was made with this identity
    (:func:`run_identity`: options, input contents, ``extra_identity``), else None."""
    record = finished_record(Path(config.out))
    if record is None:
        return None
    identity = {**run_identity(config, extra_identity), "world": process_state().num_processes}
    if record.get("identity") != identity:
        return None
    return record if changed_output(Path(config.out), record.get("files")) is None else None


def finished_record(out: Path) -> dict[str, Any] | None:
    """``out/train.json`` as a dict, or None when it is missing or not readable."""
    path = out / "train.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, or torn by hand: not a run to reuse
        return None
    return record if isinstance(record, dict) else None


def reused_run(
    config: BaseTrainConfig, identity: Mapping[str, Any], *, main: bool
) -> dict[str, Any] | None:
    """The finished run in ``config.out`` to return instead of training (``reuse=True``): its
    record when its identity is ``identity`` and its files are as it wrote them; None when there
    is none, or, with ``config.overwrite``, when it was made otherwise (train again).

    Raises:
        BindkitError: without ``config.overwrite``, a finished run made otherwise or whose
            output changed since, named in one line.
    """
    out = Path(config.out)
    if not (out / "train.json").exists():
        return None
    record = finished_record(out)
    same = record is not None and record.get("identity") == identity
    # reuse what the run wrote only as it wrote it: a file edited since is not shipped
    changed = changed_output(out, record.get("files")) if record and same else None
    if record is not None and same and changed is None:
        if config.progress and main:
            print(
                f"{out}: finished earlier with these options and inputs; reusing it",
                file=sys.stderr,
            )
        return record
    if not config.overwrite and changed is not None:
        raise BindkitError(
            f"{changed}: changed since the run finished (its sha256 is not the one "
            f"{out / 'train.json'} records); pass --overwrite to train it again, or delete "
            f"{out}"
        )
    if not config.overwrite:
        change = (
            "its train.json is not readable"
            if record is None
            else identity_change(config, record.get("identity"), identity)
        )
        raise BindkitError(
            f"{out}: holds a run made otherwise ({change}); pass --overwrite to train it "
            "again, or another --out"
        )
    return None
