"""``train``: one LoRA training loop for every objective (triplets, clusters) through the embedder.

The model is the evaluation embedder itself: its ``collate`` renders the same prompts (query role
for queries, document role for documents, the model's or the pair's instruction) and its
``forward`` pools and normalises as evaluation does; LoRA is added in place with peft, so the
embedder keeps working for validation and the LiNeS sweep.

What a batch holds and its loss come from an objective (:mod:`bindkit.train.objectives`); the
rest is shared, one concern a module:

- :mod:`bindkit.train.inputs`: every input read and checked (:func:`check_inputs`) before the
  model loads;
- :mod:`bindkit.train.reuse`: the run identity and the one rule that reuses a finished run;
- :mod:`bindkit.train.model`: the embedder loaded for training, its token limit and image size;
- :mod:`bindkit.train.plan`: the data order (from the seed and the epoch only, so a run resumed
  from a checkpoint sees the same batches as an uninterrupted one) and the ranks;
- :mod:`bindkit.train.loop`: the loop (prefetching collate, GradCache ``--chunk-size``,
  auxiliary terms, the schedule, summed gradients), the adapters, the model card and
  ``train.json``;
- :mod:`bindkit.train.checkpoints`: checkpoints and resume;
- :mod:`bindkit.train.evaluation`: validation, STS and the LiNeS sweep.

This module is the front door: :func:`train` (and :func:`train_triplets`,
:func:`train_clusters`, the same with a narrower config type), the overwrite guard and the lock.
With several processes (``accelerate launch``) each rank takes its slice of every global batch
(ranks may hold unequal numbers of rows); each loss returns the rank's share of the global loss
and the LoRA gradients are summed before each step. A loss or a weight that turns non-finite
stops the run with one line and no adapter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any, TypedDict, Unpack

from bindkit._lock import directory_lock
from bindkit.train.auxiliary import AuxiliaryLoss, Step
from bindkit.train.config import BaseTrainConfig, ClusterTrainConfig, TrainConfig
from bindkit.train.inputs import check_inputs
from bindkit.train.loop import Run
from bindkit.train.memory import TrainingOutOfMemoryError
from bindkit.train.plan import process_state
from bindkit.train.reuse import reused_run, run_identity

__all__ = ["Step", "TrainOptions", "train", "train_clusters", "train_triplets"]


class TrainOptions(TypedDict, total=False):
    """The keywords of :func:`train`, which :func:`train_triplets` and :func:`train_clusters`
    pass on as given."""

    auxiliary_losses: Sequence[AuxiliaryLoss]
    reuse: bool
    extra_identity: Mapping[str, Any] | None


def train(
    config: BaseTrainConfig,
    *,
    auxiliary_losses: Sequence[AuxiliaryLoss] = (),
    reuse: bool = False,
    extra_identity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Finetune ``config.model`` with LoRA on the objective its config names; write adapters and
    a model card.

    Writes ``OUT/adapter-raw/`` (peft format), ``OUT/adapter-lines/`` (unless ``--no-lines``),
    ``OUT/model_card.md`` and ``OUT/train.json``; ``OUT/checkpoint/`` is kept while training and
    a rerun with the same identity (:func:`~bindkit.train.reuse.run_identity`) resumes from it.

    Args:
        config: A :class:`~bindkit.train.config.TrainConfig` (triplets) or
            :class:`~bindkit.train.config.ClusterTrainConfig` (clusters).
        auxiliary_losses: Extra terms; each gets a :class:`Step` and returns a scalar tensor that
            is added to the loss (e.g. an attention binding loss).
        reuse: Return the finished run in ``OUT`` when its identity is this one, without loading
            a model (a sweep's trial, a demo's rerun). A finished run or a checkpoint of another
            identity is refused with one line naming what changed, or, with
            ``config.overwrite``, trained again; a checkpoint of this identity is resumed even
            with ``overwrite``. Without ``reuse`` (``bindkit train``), a finished run is refused
            and ``overwrite`` always starts over.
        extra_identity: What ``auxiliary_losses`` depend on (their data's sha256, weights): part
            of the identity.

    Returns:
        The record written to ``OUT/train.json`` (scores before/after, LiNeS choice, timings,
        the run's identity).
    """
    inputs = check_inputs(config, reuse=reuse)
    out = Path(config.out)
    state = process_state()
    identity = {**run_identity(config, extra_identity), "world": state.num_processes}
    if reuse:
        record = reused_run(config, identity, main=state.is_main_process)
        if record is not None:
            return record
    # one writer per --out: rank 0, which alone writes there, holds the lock (taken by every
    # rank, it refused all but the first)
    main = state.is_main_process
    lock = directory_lock(out, f"bindkit train {inputs.objective.name}") if main else nullcontext()
    with lock:
        try:
            return Run(config, out, inputs, list(auxiliary_losses), identity, reuse).run()
        except Exception as exc:
            from bindkit.embed.base import is_out_of_memory

            if not is_out_of_memory(exc):
                raise
            raise TrainingOutOfMemoryError(str(out), config) from None


def train_triplets(config: TrainConfig, **options: Unpack[TrainOptions]) -> dict[str, Any]:
    """:func:`train` on triplets (hinge loss): ``bindkit train triplets``."""
    return train(config, **options)


def train_clusters(config: ClusterTrainConfig, **options: Unpack[TrainOptions]) -> dict[str, Any]:
    """:func:`train` on mined clusters (cluster InfoNCE): ``bindkit train clusters``."""
    return train(config, **options)
