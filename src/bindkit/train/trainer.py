"""``train``: one LoRA training loop for every objective (triplets, clusters) through the embedder.

The model is the evaluation embedder itself: its ``collate`` renders the same prompts (query role
for queries, document role for documents, the model's or the pair's instruction) and its
``forward`` pools and normalises as evaluation does; LoRA is added in place with peft, so the
embedder keeps working for validation and the LiNeS sweep.

What a batch holds and its loss come from an objective (:mod:`bindkit.train.objectives`); the
rest is shared: the plan (data order from the seed and the epoch only, so a run resumed from a
checkpoint sees the same batches as an uninterrupted one), the prefetching collate, GradCache
(``--chunk-size``), auxiliary terms (preservation, attention), the schedule, checkpoints and
resume, the overwrite guard and lock, validation, LiNeS, the adapters, the model card and
``train.json``. With several processes (``accelerate launch``) each rank takes its slice of every
global batch (ranks may hold unequal numbers of rows); each loss returns the rank's share of the
global loss and the LoRA gradients are summed before each step.

Every input is read and checked (:func:`check_inputs`) before the model loads; a loss or a
weight that turns non-finite stops the run with one line and no adapter.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text, check_can_create, check_not_input, sha256_file
from bindkit._lock import directory_lock
from bindkit.errors import BindkitError, TrainingDivergedError
from bindkit.identity import (
    as_stored,
    changed_output,
    content_digest,
    model_weights,
    output_digests,
    versions,
)
from bindkit.identity import identity_change as _identity_change
from bindkit.tasks.base import Dataset
from bindkit.train.auxiliary import (
    AttentionTerm,
    AuxiliaryLoss,
    PreservationTerm,
    Step,
    read_sentences,
)
from bindkit.train.config import NON_RESULT_FIELDS, BaseTrainConfig, ClusterTrainConfig, TrainConfig
from bindkit.train.memory import TrainingOutOfMemoryError, enable_checkpointing, train_mode
from bindkit.train.objectives import Batch, Objective, objective_for

__all__ = [
    "Plan",
    "Step",
    "check_inputs",
    "identity_change",
    "reusable_run",
    "run_identity",
    "train",
    "train_clusters",
    "train_triplets",
]

CHECKPOINT = "checkpoint"
RAW, LINES = "adapter-raw", "adapter-lines"
SWEEP = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
SCHEMA = "bindkit.train/2"


def epoch_micro_batches(epochs: float, per_epoch: int) -> int:
    """Micro-batches of ``epochs`` passes of ``per_epoch`` micro-batches: a fractional pass
    rounds up, as transformers' Trainer does (``ceil(num_train_epochs x steps per epoch)``).

    Example:
        >>> epoch_micro_batches(1.5, 7), epoch_micro_batches(2, 7), epoch_micro_batches(1.1, 50)
        (11, 14, 55)
    """
    # round first: 1.1 x 50 is 55.00000000000001 in floats, 55 micro-batches, not 56
    return math.ceil(round(epochs * per_epoch, 9))


@dataclass
class Plan:
    """The micro-batches of one run: which units (triplets, clusters) each rank sees, in order.

    Epoch ``e``'s order is a permutation seeded by ``seed`` and ``e`` alone, built when the run
    reaches it: a run stopped by ``--max-steps`` builds only the epochs it trains (``--epochs``
    never costs memory or time up front), and a resumed run sees the same batches. Fractional
    ``epochs`` run :func:`epoch_micro_batches` micro-batches: the last epoch is cut part-way.
    """

    rows: int
    batch_size: int
    world: int
    epochs: float
    seed: int
    _epoch: int = field(default=-1, init=False, repr=False)
    _batches: list[list[int]] = field(default_factory=list, init=False, repr=False)

    @property
    def per_step(self) -> int:
        """Units of one global micro-batch (every rank's together)."""
        return self.batch_size * self.world

    @property
    def per_epoch(self) -> int:
        """Micro-batches per epoch: with several ranks, a last batch too small to give every
        rank a unit is dropped."""
        return self.rows // self.per_step + (1 if self.rows % self.per_step >= self.world else 0)

    @property
    def total(self) -> int:
        """Micro-batches of every epoch (the last one cut when ``epochs`` is fractional)."""
        return epoch_micro_batches(self.epochs, self.per_epoch)

    def epoch_batches(self, epoch: int) -> list[list[int]]:
        """Epoch ``epoch``'s global micro-batches (the last one built is kept)."""
        import torch

        if epoch != self._epoch:
            generator = torch.Generator().manual_seed(self.seed * 1000 + epoch)
            perm = torch.randperm(self.rows, generator=generator).tolist()
            batches = [perm[i : i + self.per_step] for i in range(0, len(perm), self.per_step)]
            self._epoch, self._batches = epoch, batches[: self.per_epoch]
        return self._batches

    def batch(self, micro: int) -> list[int]:
        """Global micro-batch ``micro`` (every rank's units)."""
        epoch, index = divmod(micro, self.per_epoch)
        return self.epoch_batches(epoch)[index]

    @property
    def order(self) -> list[list[int]]:
        """Every micro-batch of every epoch (built in full: for tests and small plans)."""
        epochs = range(math.ceil(self.epochs))
        return [b for epoch in epochs for b in self.epoch_batches(epoch)][: self.total]

    def shard(self, micro: int, rank: int) -> list[int]:
        """Rank ``rank``'s units of global micro-batch ``micro``."""
        return self.batch(micro)[rank :: self.world]


def triplet_accuracy(embedder: Any, rows: list[dict[str, Any]], name: str = "val") -> float:
    """Triplet accuracy through the evaluation library (the ``triplets`` task)."""
    from bindkit.tasks.base import EvalContext
    from bindkit.tasks.text.triplets import TripletTask

    dataset = Dataset(name, "", name, rows)
    result = TripletTask().evaluate(embedder, dataset, name, "tt", EvalContext())
    return float(result["scores"]["triplet_accuracy"])


def sts_spearman(embedder: Any, dataset: Dataset) -> float:
    """Spearman on an STS dataset through the evaluation library (the ``sts`` task)."""
    from bindkit.tasks.base import EvalContext
    from bindkit.tasks.text.sts import STSTask

    result = STSTask().evaluate(embedder, dataset, dataset.name, "tt", EvalContext())
    return float(result["scores"]["spearman"])


def load_trainable(spec: str, device: str | None) -> Any:
    """The spec's embedder, uncached, checked to expose the differentiable path."""
    from bindkit.embed.backends._torch import TorchEmbedder
    from bindkit.embed.registry import load_embedder

    options: dict[str, Any] = {"device": device} if device else {}
    embedder = load_embedder(spec, cache=False, progress=False, **options)
    if not isinstance(embedder, TorchEmbedder):
        raise BindkitError(
            f"--model {spec}: {type(embedder).__name__} has no trainable torch path; use an st: "
            "or mllm: model"
        )
    if getattr(embedder, "adapter", None):
        raise BindkitError(
            f"--model {spec}: already carries an adapter; train from the base model spec"
        )
    return embedder


def limit_tokens(embedder: Any, max_length: int | None) -> int | None:
    """Cut every input the run embeds at ``max_length`` tokens, or at the model's own limit
    when that is lower (``--max-length``); returns the limit in force (None: unchanged).

    Set before anything is embedded, so the model's description records it.

    Raises:
        BindkitError: the embedder has no token limit to set.
    """
    if max_length is None:
        return None
    if isinstance(getattr(embedder, "max_length", None), int):  # multimodal LLMs
        embedder.max_length = min(embedder.max_length, max_length)
        return int(embedder.max_length)
    model: Any = getattr(embedder, "model", None)
    if isinstance(getattr(model, "max_seq_length", None), int):  # sentence-transformers
        model.max_seq_length = min(model.max_seq_length, max_length)
        return int(model.max_seq_length)
    raise BindkitError(
        f"--max-length {max_length}: {embedder.spec} has no token limit to set; drop --max-length"
    )


def fix_image_size(embedder: Any, size: int) -> None:
    """Training images at ``size`` x ``size`` (``--image-size``): the model's
    ``fix_image_size`` squashes each image to that size and sets its resizes and image
    processor to keep it. A model without images has none to resize (text clusters train as
    they are); an image file in such a run fails where it is embedded."""
    fix = getattr(embedder, "fix_image_size", None)
    if fix is not None and "image" in embedder.modalities:
        fix(size)


@dataclass
class Inputs:
    """Everything a run reads, read and checked before the model loads."""

    objective: Objective
    val: list[dict[str, Any]] | None
    sts: Dataset | None
    preserve: list[str] | None


def check_inputs(config: BaseTrainConfig, *, reuse: bool = False) -> Inputs:
    """Read and check every input and the output place, in seconds, before any model loads.

    With ``reuse``, a finished run in ``--out`` is left to :func:`train`'s identity check.

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


def run_identity(config: BaseTrainConfig, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a run's result depends on, the one rule for resuming and reusing a run
    (:mod:`bindkit.identity`).

    The objective, the base model's weights digest (:func:`bindkit.identity.model_weights`: a
    ``+weights=DIR`` or model folder edited in place is another model), the sha256 of every file
    the config reads (by option: ``train``/``clusters``, ``val``, ``sts``, ``preserve``; by
    content, so an input edited in place at the same path counts as another input, and a moved
    one as the same), every option except
    :data:`~bindkit.train.config.OUTPUT_ONLY_FIELDS`, and ``extra``: what auxiliary losses
    passed to :func:`train` depend on (their data's sha256, their weights), which the config
    cannot name.
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
    record = _finished_record(Path(config.out))
    if record is None:
        return None
    identity = {**run_identity(config, extra_identity), "world": process_state().num_processes}
    if record.get("identity") != identity:
        return None
    return record if changed_output(Path(config.out), record.get("files")) is None else None


def _finished_record(out: Path) -> dict[str, Any] | None:
    path = out / "train.json"
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # missing, or torn by hand: not a run to reuse
        return None
    return record if isinstance(record, dict) else None


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
    a rerun with the same identity (:func:`run_identity`) resumes from it.

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
    if reuse and (out / "train.json").exists():
        record = _finished_record(out)
        same = record is not None and record.get("identity") == identity
        # reuse what the run wrote only as it wrote it: a file edited since is not shipped
        changed = changed_output(out, record.get("files")) if record and same else None
        if record is not None and same and changed is None:
            if config.progress and state.is_main_process:
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
    # one writer per --out: rank 0, which alone writes there, holds the lock (taken by every
    # rank, it refused all but the first)
    main = state.is_main_process
    lock = directory_lock(out, f"bindkit train {inputs.objective.name}") if main else nullcontext()
    with lock:
        try:
            return _Run(config, out, inputs, list(auxiliary_losses), identity, reuse).run()
        except Exception as exc:
            from bindkit.embed.base import is_out_of_memory

            if not is_out_of_memory(exc):
                raise
            raise TrainingOutOfMemoryError(str(out), config) from None


def process_state() -> Any:
    """accelerate's process state, its ranks from the launcher's environment (``accelerate
    launch``, ``torchrun``): nccl on GPUs, gloo on CPUs, as :mod:`bindkit.embed.distributed`
    (accelerate's default ``cpu=False`` sees one process on a machine without CUDA)."""
    import torch
    from accelerate import PartialState

    return PartialState(cpu=not torch.cuda.is_available())


def train_triplets(
    config: TrainConfig,
    *,
    auxiliary_losses: Sequence[AuxiliaryLoss] = (),
    reuse: bool = False,
    extra_identity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`train` on triplets (hinge loss): ``bindkit train triplets``."""
    return train(
        config, auxiliary_losses=auxiliary_losses, reuse=reuse, extra_identity=extra_identity
    )


def train_clusters(
    config: ClusterTrainConfig,
    *,
    auxiliary_losses: Sequence[AuxiliaryLoss] = (),
    reuse: bool = False,
    extra_identity: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """:func:`train` on mined clusters (cluster InfoNCE): ``bindkit train clusters``."""
    return train(
        config, auxiliary_losses=auxiliary_losses, reuse=reuse, extra_identity=extra_identity
    )


def per_device(config: BaseTrainConfig) -> int:
    """Units per device per micro-batch: triplets, or clusters."""
    if isinstance(config, ClusterTrainConfig):
        return config.clusters_per_step
    assert isinstance(config, TrainConfig)
    return config.batch_size


class _Run:
    def __init__(
        self,
        config: BaseTrainConfig,
        out: Path,
        inputs: Inputs,
        auxiliary: list[AuxiliaryLoss],
        identity: dict[str, Any],
        reuse: bool,
    ) -> None:
        self.config, self.out, self.auxiliary = config, out, auxiliary
        self.identity, self.reuse = identity, reuse
        self.state = process_state()
        self.main = self.state.is_main_process
        self.objective = inputs.objective
        self.val, self.sts, self.preserve = inputs.val, inputs.sts, inputs.preserve

    # -- setup ---------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        import torch

        config = self.config
        device = None if self.state.device.type == "cpu" else str(self.state.device)
        embedder = load_trainable(config.model, device)
        limit_tokens(embedder, config.max_length)
        if isinstance(config, ClusterTrainConfig) and config.image_size:
            fix_image_size(embedder, config.image_size)
        self.embedder = embedder
        started = time.perf_counter()
        before = self.scores(embedder)
        preservation = None
        if self.preserve is not None and (
            config.preserve_weight > 0 or config.preserve_relational > 0
        ):
            # the teacher's embeddings come from the base model, before LoRA is added
            preservation = PreservationTerm(
                embedder,
                self.preserve,
                config.preserve_batch,
                config.preserve_weight,
                config.preserve_relational,
            )
        from bindkit.adapters.lora import add_lora

        self.model = add_lora(
            embedder.module,
            rank=config.lora_r,
            alpha=config.lora_alpha,
            dropout=config.lora_dropout,
            seed=config.seed,
        )
        self.checkpointed = (
            enable_checkpointing(embedder.module) if config.gradient_checkpointing else []
        )
        if config.attn_loss:
            self.auxiliary.append(AttentionTerm(embedder, config.attn_tau, config.attn_weight))
        if preservation is not None:
            self.auxiliary.append(preservation)
        trainable = [p for p in embedder.module.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=config.lr, weight_decay=config.weight_decay)
        plan = Plan(
            self.objective.units,
            per_device(config),
            self.state.num_processes,
            config.epochs,
            config.seed,
        )
        micro_total = plan.total
        if config.max_steps is not None:
            micro_total = min(micro_total, config.max_steps * config.grad_accum)
        scheduler = self.scheduler(optimizer, -(-micro_total // config.grad_accum))
        history: list[dict[str, Any]] = []
        start_micro = self.resume(trainable, optimizer, scheduler, history)
        self.train_loop(plan, start_micro, micro_total, trainable, optimizer, scheduler, history)
        train_seconds = time.perf_counter() - started
        return self.finish(before, history, micro_total, train_seconds)

    def scheduler(self, optimizer: Any, steps: int) -> Any:
        """The learning-rate schedule (None: a constant rate, the optimizer's own)."""
        config = self.config
        if config.schedule == "constant" and config.warmup_steps == 0:
            return None
        from transformers import get_constant_schedule_with_warmup, get_linear_schedule_with_warmup

        if config.schedule == "linear":
            return get_linear_schedule_with_warmup(optimizer, config.warmup_steps, steps)
        return get_constant_schedule_with_warmup(optimizer, config.warmup_steps)

    def scores(self, embedder: Any) -> dict[str, float]:
        embedder.module.eval()
        scores: dict[str, float] = {}
        if self.val is not None:
            scores["val_triplet_accuracy"] = triplet_accuracy(embedder, self.val)
        if self.sts is not None:
            scores["sts_spearman"] = sts_spearman(embedder, self.sts)
        return scores

    # -- checkpoints ---------------------------------------------------------------------
    def resume(
        self, trainable: list[Any], optimizer: Any, scheduler: Any, history: list[dict[str, Any]]
    ) -> int:
        import torch

        path = self.out / CHECKPOINT / "state.pt"
        if not path.is_file() or (self.config.overwrite and not self.reuse):
            return 0
        try:
            state = torch.load(path, map_location="cpu", weights_only=False)
        except Exception:  # a torn or foreign file: torch raises many kinds
            raise BindkitError(
                f"{path}: not a readable checkpoint; pass --overwrite to start over"
            ) from None
        stored = state.get("identity") if isinstance(state, dict) else None
        if stored != self.identity:
            if self.config.overwrite:  # reuse mode: a checkpoint of another run starts over
                return 0
            change = identity_change(self.config, stored, self.identity)
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
        self.say(f"resuming from {path} at micro-batch {state['micro']}")
        return int(state["micro"])

    def save_checkpoint(
        self,
        micro: int,
        trainable: list[Any],
        optimizer: Any,
        scheduler: Any,
        history: list[dict[str, Any]],
    ) -> None:
        import torch

        if not self.main:
            return
        folder = self.out / CHECKPOINT
        folder.mkdir(parents=True, exist_ok=True)
        state = {
            "identity": self.identity,
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

    # -- the loop ------------------------------------------------------------------------
    def collate(self, micro: int, plan: Plan) -> Batch:
        units = plan.shard(micro, self.state.process_index)
        return self.objective.collate(self.embedder, units, self.config.chunk_size)

    def autocast(self) -> Any:
        import contextlib

        import torch

        device = self.state.device.type
        wanted = self.config.precision == "bf16" or (
            self.config.precision == "auto" and device == "cuda"
        )
        if wanted:
            return torch.autocast(device_type=device, dtype=torch.bfloat16)
        return contextlib.nullcontext()

    def micro_step(self, batch: Batch, micro: int) -> tuple[float, int]:
        """Forward and backward of one micro-batch; returns (global loss, rows correct here)."""
        import torch

        from bindkit.train.batches import encode
        from bindkit.train.gradcache import GradCache
        from bindkit.train.losses import global_count

        config, embedder, objective = self.config, self.embedder, self.objective
        global_rows = global_count(len(batch.rows), self.state.device)

        def step(embeddings: list[Any]) -> Step:
            return Step(
                self.model,
                embedder,
                batch.rows,
                {"query": batch.sides[0], "documents": batch.sides[1]},
                objective.named(embeddings, batch),
                micro,
                global_rows,
            )

        extra: Any = 0.0
        with self.autocast():
            if config.chunk_size:
                encoders = [lambda chunk: encode(embedder, chunk)] * len(batch.sides)
                main, embeddings = GradCache(config.chunk_size).backward_chunks(
                    encoders,
                    batch.sides,
                    lambda *e: objective.loss(list(e), batch, global_rows) / config.grad_accum,
                )
                main = main * config.grad_accum
                context = step(embeddings)
                for auxiliary in self.auxiliary:
                    extra = extra + auxiliary(context)
                if isinstance(extra, torch.Tensor) and extra.requires_grad:
                    (extra / config.grad_accum).backward()
                loss = None
            else:
                embeddings = [encode(embedder, side[0]) for side in batch.sides]
                main = objective.loss(embeddings, batch, global_rows)
                loss = main
                context = step(embeddings)
                for auxiliary in self.auxiliary:
                    term = auxiliary(context)
                    loss = loss + term
                    extra = extra + term
        if loss is not None:
            (loss / config.grad_accum).backward()
        with torch.no_grad():
            correct = objective.correct([e.detach() for e in embeddings], batch)
            value = objective.share(main.detach().float()) + (
                extra.detach().float() if isinstance(extra, torch.Tensor) else extra
            )
            value = torch.as_tensor(value, dtype=torch.float32, device=self.state.device)
            if self.state.num_processes > 1:
                import torch.distributed as dist

                dist.all_reduce(value)
        return float(value), correct

    def train_loop(
        self,
        plan: Plan,
        start: int,
        total: int,
        trainable: list[Any],
        optimizer: Any,
        scheduler: Any,
        history: list[dict[str, Any]],
    ) -> None:
        from tqdm.auto import tqdm

        config, embedder = self.config, self.embedder
        train_mode(embedder.module, config.model_dropout, self.checkpointed)
        bar = tqdm(
            total=total,
            initial=start,
            desc="train",
            unit="batch",
            disable=not (config.progress and self.main),
            file=sys.stderr,
        )
        correct = seen = 0
        running = 0.0
        # Collate the next micro-batch on a thread while this one runs (tokenisers release
        # the GIL), so the device does not wait on Python.
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(self.collate, start, plan) if start < total else None
            for micro in range(start, total):
                assert pending is not None
                batch = pending.result()
                pending = pool.submit(self.collate, micro + 1, plan) if micro + 1 < total else None
                value, right = self.micro_step(batch, micro)
                steps = (micro + 1 + config.grad_accum - 1) // config.grad_accum
                if not math.isfinite(value):
                    raise TrainingDivergedError(
                        f"{self.out}: the loss became {value} at step {steps}; lower --lr "
                        f"(now {config.lr:g}) or check the data; no adapter written"
                    )
                correct += right
                seen += len(batch.rows)
                running = value if micro == start else 0.9 * running + 0.1 * value
                last = micro + 1 == total
                if (micro + 1) % config.grad_accum == 0 or last:
                    self.all_reduce(trainable)
                    optimizer.step()
                    if scheduler is not None:
                        scheduler.step()
                    optimizer.zero_grad(set_to_none=True)
                    self.check_finite(trainable, steps)
                    entry: dict[str, Any] = {"step": steps, "loss": running}
                    if config.eval_every and steps % config.eval_every == 0 and self.val:
                        entry["val_triplet_accuracy"] = triplet_accuracy(embedder, self.val)
                        train_mode(embedder.module, config.model_dropout, self.checkpointed)
                        bar.write(f"step {steps}: val accuracy {entry['val_triplet_accuracy']:.3f}")
                    history.append(entry)
                    if config.save_every and steps % config.save_every == 0 and not last:
                        self.save_checkpoint(micro + 1, trainable, optimizer, scheduler, history)
                bar.set_postfix(loss=f"{running:.4f}", acc=f"{correct / max(seen, 1):.3f}")
                bar.update(1)
        bar.close()
        embedder.module.eval()

    def check_finite(self, trainable: list[Any], steps: int) -> None:
        import torch

        if not all(bool(torch.isfinite(p).all()) for p in trainable):
            raise TrainingDivergedError(
                f"{self.out}: the LoRA weights became non-finite at step {steps}; lower --lr "
                f"(now {self.config.lr:g}); no adapter written"
            )

    def all_reduce(self, trainable: list[Any]) -> None:
        """Sum the ranks' gradients: each rank's loss is its share of the global loss."""
        if self.state.num_processes == 1:
            return
        import torch.distributed as dist

        for parameter in trainable:
            if parameter.grad is not None:
                dist.all_reduce(parameter.grad)

    # -- after training ------------------------------------------------------------------
    def finish(
        self,
        before: dict[str, float],
        history: list[dict[str, Any]],
        micro_total: int,
        train_seconds: float,
    ) -> dict[str, Any]:
        from bindkit.adapters.lines import apply_lines, lines_factors, scale_live
        from bindkit.adapters.lora import layer_index, lora_layers, save_adapter
        from bindkit.train.card import write_card

        config = self.config
        self.state.wait_for_everyone()
        raw_scores = self.scores(self.embedder)
        depth = 1 + max(
            i for i in (layer_index(name) for name, _ in lora_layers(self.model)) if i is not None
        )
        lines: dict[str, Any] | None = None
        lines_scores: dict[str, float] | None = None
        sweep: list[dict[str, float]] = []
        if config.lines:
            if config.lines_alpha is not None:
                alpha = config.lines_alpha
            else:
                alpha, sweep = self.sweep(depth, raw_scores)
            scale_live(self.model, lines_factors(depth, alpha), alpha)
            lines_scores = self.scores(self.embedder)
            scale_live(self.model, None)
            lines = {"alpha": alpha, "beta": 1.0 - alpha, "num_layers": depth, "sweep": sweep}
        record: dict[str, Any] = {
            "schema": SCHEMA,
            "objective": self.objective.name,
            "config": config.record(),
            "base_model": self.embedder.describe(),
            "base_fingerprint": self.embedder.fingerprint,
            "data": {
                name: {"path": path, "sha256": sha256_file(Path(path))}
                for name, path in config.inputs().items()
            },
            "examples": self.objective.counts(),
            "micro_batches": micro_total,
            "optimizer_steps": (micro_total + config.grad_accum - 1) // config.grad_accum,
            "world": self.state.num_processes,
            "train_seconds": round(train_seconds, 1),
            "scores": {
                "base": before,
                "raw": raw_scores,
                **({"lines": lines_scores} if lines_scores else {}),
            },
            "lines": lines,
            "history": history,
            "identity": self.identity,
            "version": _version(),
            "versions": versions(),
        }
        if self.main:
            save_adapter(self.model, self.out / RAW)
            write_card(self.out / RAW, record, variant="raw")
            if lines is not None:
                apply_lines(  # the run owns OUT (it holds its lock): replace an earlier copy
                    self.out / RAW,
                    self.out / LINES,
                    alpha=lines["alpha"],
                    num_layers=depth,
                    overwrite=True,
                )
                write_card(self.out / LINES, record, variant="lines")
            # what reuse re-checks: the adapters as this run wrote them
            record["files"] = output_digests(self.out, (RAW, LINES))
            write_card(self.out, record, variant=None)
            atomic_write_text(self.out / "train.json", json.dumps(record, indent=2) + "\n")
            checkpoint = self.out / CHECKPOINT / "state.pt"
            checkpoint.unlink(missing_ok=True)
        return record

    def sweep(self, depth: int, raw: dict[str, float]) -> tuple[float, list[dict[str, float]]]:
        """Choose LiNeS α: among the αs whose val accuracy is within the tolerance of the raw
        adapter's, the best STS Spearman when an STS file is given, else the smallest α."""
        from bindkit.adapters.lines import lines_factors, scale_live

        points: list[dict[str, float]] = []
        for alpha in SWEEP:
            scale_live(self.model, lines_factors(depth, alpha), alpha)
            points.append({"alpha": alpha, **self.scores(self.embedder)})
            # each point is a full validation pass: a long, otherwise silent phase
            shown = ", ".join(f"{k} {v:.4f}" for k, v in points[-1].items() if k != "alpha")
            self.say(f"LiNeS: alpha {alpha} ({len(points)}/{len(SWEEP)}): {shown}")
        scale_live(self.model, None)
        points.append({"alpha": 1.0, **raw})
        floor = raw["val_triplet_accuracy"] - self.config.lines_tolerance / 100
        kept = [p for p in points if p["val_triplet_accuracy"] >= floor]
        if "sts_spearman" in raw:
            best = max(kept, key=lambda p: (p["sts_spearman"], -p["alpha"]))
        else:
            best = min(kept, key=lambda p: p["alpha"])
        self.say(f"LiNeS: alpha {best['alpha']} chosen from {len(points)} points")
        return float(best["alpha"]), points

    def say(self, text: str) -> None:
        if self.config.progress and self.main:
            print(text, file=sys.stderr)


def _version() -> str:
    from bindkit import __version__

    return __version__
