"""The training loop of one run (:class:`Run`): load the model and add LoRA, the plan, the
prefetching collate, GradCache (``--chunk-size``), auxiliary terms (preservation, attention), the
schedule, summed gradients across ranks, the non-finite stop, checkpoints every ``--save-every``
steps and resume (:mod:`bindkit.train.checkpoints`), validation every ``--eval-every`` steps and
LiNeS (:mod:`bindkit.train.evaluation`); then the adapters, the model card and ``train.json``.

:func:`bindkit.train.trainer.train` checks the inputs, decides reuse and holds the lock first.
"""

from __future__ import annotations

import json
import math
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text, sha256_file
from bindkit.errors import TrainingDivergedError
from bindkit.identity import output_digests, versions
from bindkit.train.auxiliary import AttentionTerm, AuxiliaryLoss, PreservationTerm, Step
from bindkit.train.checkpoints import checkpoint_file, resume, save_checkpoint
from bindkit.train.config import BaseTrainConfig, ClusterTrainConfig
from bindkit.train.evaluation import choose_lines_alpha, scores, triplet_accuracy
from bindkit.train.inputs import Inputs
from bindkit.train.memory import enable_checkpointing, train_mode
from bindkit.train.model import fix_image_size, limit_tokens, load_trainable
from bindkit.train.objectives import Batch
from bindkit.train.plan import Plan, per_device, process_state

__all__ = ["LINES", "RAW", "SCHEMA", "Run"]

RAW, LINES = "adapter-raw", "adapter-lines"
SCHEMA = "bindkit.train/2"


class Run:
    """One training run into ``out``: :meth:`run` trains and writes it, returning its record."""

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
        before = self.score()
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
        start_micro = resume(
            config,
            self.identity,
            reuse=self.reuse,
            trainable=trainable,
            optimizer=optimizer,
            scheduler=scheduler,
            history=history,
            say=self.say,
        )
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

    def score(self) -> dict[str, float]:
        """The embedder's scores now (:func:`~bindkit.train.evaluation.scores`)."""
        return scores(self.embedder, self.val, self.sts)

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
                    saving = config.save_every and steps % config.save_every == 0
                    if saving and not last and self.main:
                        save_checkpoint(
                            self.out,
                            self.identity,
                            micro + 1,
                            trainable,
                            optimizer,
                            scheduler,
                            history,
                        )
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
        raw_scores = self.score()
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
                alpha, sweep = choose_lines_alpha(
                    self.model, depth, raw_scores, config.lines_tolerance, self.score, self.say
                )
            scale_live(self.model, lines_factors(depth, alpha), alpha)
            lines_scores = self.score()
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
            checkpoint_file(self.out).unlink(missing_ok=True)
        return record

    def say(self, text: str) -> None:
        if self.config.progress and self.main:
            print(text, file=sys.stderr)


def _version() -> str:
    from bindkit import __version__

    return __version__
