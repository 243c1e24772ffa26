"""``train_triplets``: LoRA finetuning on binding triplets through the embedder's own path.

The model is the evaluation embedder itself: its ``collate`` renders the same prompts (query role
for queries, document role for positives and negatives, the model's default instruction) and its
``forward`` pools and normalises as evaluation does; LoRA is added in place with peft, so the
embedder keeps working for validation and the LiNeS sweep.

Data order depends only on the seed and the epoch, so a run resumed from a checkpoint sees the
same batches as an uninterrupted one. With several processes (``accelerate launch``) each rank
takes its slice of every global batch and the LoRA gradients are averaged before each step.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text, sha256_file
from bindkit._lock import directory_lock
from bindkit.errors import BindkitError
from bindkit.tasks.base import Dataset
from bindkit.tasks.triplets import read_triplets
from bindkit.train.config import NON_RESULT_FIELDS, TrainConfig

CHECKPOINT = "checkpoint"
RAW, LINES = "adapter-raw", "adapter-lines"
SWEEP = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)


@dataclass
class Step:
    """What an auxiliary loss receives for one micro-batch.

    ``batches`` holds the collated inputs (``query``, ``documents``: positives then negatives),
    ``embeddings`` the pooled outputs (``query``, ``positive``, ``negative``), ``rows`` the
    triplet records (they carry ``type`` and any binding annotations).
    """

    model: Any
    embedder: Any
    rows: list[dict[str, Any]]
    batches: dict[str, Any]
    embeddings: dict[str, Any]


AuxiliaryLoss = Callable[[Step], Any]


@dataclass
class Plan:
    """The micro-batches of one run: which rows each rank sees, in which order."""

    rows: int
    batch_size: int
    world: int
    epochs: int
    seed: int
    order: list[list[int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        import torch

        per_step = self.batch_size * self.world
        for epoch in range(self.epochs):
            generator = torch.Generator().manual_seed(self.seed * 1000 + epoch)
            perm = torch.randperm(self.rows, generator=generator).tolist()
            batches = [perm[i : i + per_step] for i in range(0, len(perm), per_step)]
            # with several ranks, a last batch too small to give every rank a row is dropped
            self.order += [b for b in batches if len(b) >= self.world]

    def shard(self, micro: int, rank: int) -> list[int]:
        """Rank ``rank``'s rows of global micro-batch ``micro``."""
        return self.order[micro][rank :: self.world]


def attention_term(embedder: Any, tau: float, weight: float) -> AuxiliaryLoss:
    """The attention binding loss (:mod:`bindkit.train.attention`) on each micro-batch's
    queries, whose bindings are read from the rows (or parsed from the synthetic query)."""
    from bindkit.train.attention import AttentionBindingLoss, bound_text

    loss = AttentionBindingLoss(embedder, tau=tau, weight=weight)

    def term(step: Step) -> Any:
        items = [bound_text(row) for row in step.rows]
        _, penalty = loss(items, step.batches["query"], role="query")
        return penalty

    return term


def read_sentences(path: str | Path) -> list[str]:
    """Sentences for the preservation term: one per line, or JSONL rows with a ``text`` field
    (triplet rows give their query, positive and negative)."""
    path = Path(path)
    sentences: list[str] = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.strip()
        if not line:
            continue
        if line.startswith("{"):
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise BindkitError(f"{path}:{lineno}: not valid JSON ({exc})") from None
            texts = [row.get(k) for k in ("text", "query", "positive", "negative")]
            found = [t for t in texts if isinstance(t, str) and t.strip()]
            if not found:
                raise BindkitError(f"{path}:{lineno}: a JSON row needs a 'text' field")
            sentences += found
        else:
            sentences.append(line)
    if not sentences:
        raise BindkitError(f"{path}: no sentences found; give one sentence per line")
    return sentences


def triplet_accuracy(embedder: Any, rows: list[dict[str, Any]], name: str = "val") -> float:
    """Triplet accuracy through the evaluation library (the ``triplets`` task)."""
    from bindkit.tasks.base import EvalContext
    from bindkit.tasks.triplets import TripletTask

    dataset = Dataset(name, "", name, rows)
    result = TripletTask().evaluate(embedder, dataset, name, "tt", EvalContext())
    return float(result["scores"]["triplet_accuracy"])


def sts_spearman(embedder: Any, path: str) -> float:
    """Spearman on an STS file through the evaluation library (the ``sts`` task)."""
    from bindkit.tasks.base import EvalContext
    from bindkit.tasks.sts import STSTask

    task = STSTask()
    dataset = task.load(Path(path))
    result = task.evaluate(embedder, dataset, dataset.name, "tt", EvalContext())
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


def train_triplets(
    config: TrainConfig, *, auxiliary_losses: Sequence[AuxiliaryLoss] = ()
) -> dict[str, Any]:
    """Finetune ``config.model`` with LoRA on triplets; write adapters and a model card.

    Writes ``OUT/adapter-raw/`` (peft format), ``OUT/adapter-lines/`` (unless ``--no-lines``),
    ``OUT/model_card.md`` and ``OUT/train.json``; ``OUT/checkpoint/`` is kept while training and
    a rerun with the same options resumes from it.

    Args:
        config: The options (see :class:`TrainConfig`).
        auxiliary_losses: Extra terms; each gets a :class:`Step` and returns a scalar tensor that
            is added to the loss (e.g. an attention binding loss).

    Returns:
        The record written to ``OUT/train.json`` (scores before/after, LiNeS choice, timings).
    """
    out = Path(config.out)
    with directory_lock(out, "bindkit train triplets"):
        return _Run(config, out, list(auxiliary_losses)).run()


class _Run:
    def __init__(self, config: TrainConfig, out: Path, auxiliary: list[AuxiliaryLoss]) -> None:
        from accelerate import PartialState

        self.config, self.out, self.auxiliary = config, out, auxiliary
        self.state = PartialState()
        self.main = self.state.is_main_process
        self.rows = read_triplets(config.train)
        self.val = read_triplets(config.val) if config.val else None
        if config.lines and config.lines_alpha is None and self.val is None:
            raise BindkitError(
                "LiNeS: give --val to choose its alpha, or --lines-alpha A, or --no-lines"
            )
        self.preserve = read_sentences(config.preserve) if config.preserve else None
        done = out / "train.json"
        if done.is_file() and not config.overwrite:
            raise BindkitError(
                f"{out}: holds a finished run ({done}); pass --overwrite or another --out"
            )

    # -- setup ---------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        import torch

        config = self.config
        device = None if self.state.device.type == "cpu" else str(self.state.device)
        embedder = load_trainable(config.model, device)
        self.embedder = embedder
        started = time.perf_counter()
        before = self.scores(embedder)
        teacher = None
        if self.preserve is not None:
            embedder.module.eval()
            teacher = torch.from_numpy(embedder.embed_texts(self.preserve, role="document"))
        from bindkit.train.lora import add_lora

        self.model = add_lora(
            embedder.module,
            rank=config.lora_r,
            alpha=config.lora_alpha,
            dropout=config.lora_dropout,
            seed=config.seed,
        )
        if config.attn_loss:
            self.auxiliary.append(attention_term(embedder, config.attn_tau, config.attn_weight))
        trainable = [p for p in embedder.module.parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(trainable, lr=config.lr, weight_decay=config.weight_decay)
        plan = Plan(
            len(self.rows), config.batch_size, self.state.num_processes, config.epochs, config.seed
        )
        micro_total = len(plan.order)
        if config.max_steps is not None:
            micro_total = min(micro_total, config.max_steps * config.grad_accum)
        history: list[dict[str, Any]] = []
        start_micro = self.resume(trainable, optimizer, history)
        self.train_loop(plan, start_micro, micro_total, trainable, optimizer, teacher, history)
        train_seconds = time.perf_counter() - started
        return self.finish(before, history, micro_total, train_seconds)

    def scores(self, embedder: Any) -> dict[str, float]:
        embedder.module.eval()
        scores: dict[str, float] = {}
        if self.val is not None:
            scores["val_triplet_accuracy"] = triplet_accuracy(embedder, self.val)
        if self.config.sts:
            scores["sts_spearman"] = sts_spearman(embedder, self.config.sts)
        return scores

    # -- checkpoints ---------------------------------------------------------------------
    def identity(self) -> dict[str, Any]:
        record = {k: v for k, v in self.config.record().items() if k not in NON_RESULT_FIELDS}
        return {
            "options": record,
            "train_sha256": sha256_file(Path(self.config.train)),
            "world": self.state.num_processes,
        }

    def resume(self, trainable: list[Any], optimizer: Any, history: list[dict[str, Any]]) -> int:
        import torch

        path = self.out / CHECKPOINT / "state.pt"
        if self.config.overwrite or not path.is_file():
            return 0
        state = torch.load(path, map_location="cpu", weights_only=False)
        if state["identity"] != self.identity():
            raise BindkitError(
                f"{path}: a checkpoint of a run with other options or data; pass --overwrite "
                "or another --out"
            )
        with torch.no_grad():
            for parameter, saved in zip(trainable, state["trainable"], strict=True):
                parameter.copy_(saved.to(parameter.device))
        optimizer.load_state_dict(state["optimizer"])
        torch.set_rng_state(state["rng"])
        history += state["history"]
        self.say(f"resuming from {path} at micro-batch {state['micro']}")
        return int(state["micro"])

    def save_checkpoint(
        self, micro: int, trainable: list[Any], optimizer: Any, history: list[dict[str, Any]]
    ) -> None:
        import torch

        if not self.main:
            return
        folder = self.out / CHECKPOINT
        folder.mkdir(parents=True, exist_ok=True)
        state = {
            "identity": self.identity(),
            "micro": micro,
            "trainable": [p.detach().cpu().clone() for p in trainable],
            "optimizer": optimizer.state_dict(),
            "rng": torch.get_rng_state(),
            "history": history,
        }
        tmp = folder / ".state.pt.tmp"
        torch.save(state, tmp)
        tmp.replace(folder / "state.pt")

    # -- the loop ------------------------------------------------------------------------
    def collate(self, indices: list[int]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
        rows = [self.rows[i] for i in indices]
        embedder = self.embedder
        batches = {
            "query": embedder.collate(
                [r["query"] for r in rows], modality="text", role="query", instruction=None
            ),
            "documents": embedder.collate(
                [r["positive"] for r in rows] + [r["negative"] for r in rows],
                modality="text",
                role="document",
                instruction=None,
            ),
        }
        return rows, batches

    def preserve_indices(self, micro: int) -> list[int]:
        assert self.preserve is not None
        size = len(self.preserve)
        start = micro * self.config.preserve_batch
        return [(start + i) % size for i in range(self.config.preserve_batch)]

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

    def train_loop(
        self,
        plan: Plan,
        start: int,
        total: int,
        trainable: list[Any],
        optimizer: Any,
        teacher: Any,
        history: list[dict[str, Any]],
    ) -> None:
        import torch
        from tqdm.auto import tqdm

        from bindkit.train.losses import TripletHingeLoss, distillation

        config, embedder, rank = self.config, self.embedder, self.state.process_index
        loss_fn = TripletHingeLoss(config.margin)
        embedder.module.train(config.model_dropout)
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
            pending = pool.submit(self.collate, plan.shard(start, rank)) if start < total else None
            for micro in range(start, total):
                assert pending is not None
                rows, batches = pending.result()
                pending = (
                    pool.submit(self.collate, plan.shard(micro + 1, rank))
                    if micro + 1 < total
                    else None
                )
                with self.autocast():
                    query = embedder.forward(batches["query"]).float()
                    documents = embedder.forward(batches["documents"]).float()
                    positive, negative = documents[: len(rows)], documents[len(rows) :]
                    loss = loss_fn(query, positive, negative)
                    step = Step(
                        self.model,
                        embedder,
                        rows,
                        batches,
                        {"query": query, "positive": positive, "negative": negative},
                    )
                    for auxiliary in self.auxiliary:
                        loss = loss + auxiliary(step)
                    if teacher is not None and config.preserve_weight > 0:
                        chosen = self.preserve_indices(micro)
                        assert self.preserve is not None
                        student = embedder.forward(
                            embedder.collate(
                                [self.preserve[i] for i in chosen],
                                modality="text",
                                role="document",
                                instruction=None,
                            )
                        ).float()
                        target = teacher[chosen].to(student.device)
                        loss = loss + config.preserve_weight * distillation(student, target)
                (loss / config.grad_accum).backward()
                with torch.no_grad():
                    margin = (query * positive).sum(-1) - (query * negative).sum(-1)
                    correct += int((margin > 0).sum())
                    seen += len(rows)
                value = float(loss.detach())
                running = value if micro == start else 0.9 * running + 0.1 * value
                last = micro + 1 == total
                if (micro + 1) % config.grad_accum == 0 or last:
                    self.all_reduce(trainable)
                    optimizer.step()
                    optimizer.zero_grad(set_to_none=True)
                    steps = (micro + 1 + config.grad_accum - 1) // config.grad_accum
                    entry: dict[str, Any] = {"step": steps, "loss": running}
                    if config.eval_every and steps % config.eval_every == 0 and self.val:
                        entry["val_triplet_accuracy"] = triplet_accuracy(embedder, self.val)
                        embedder.module.train(config.model_dropout)
                        bar.write(f"step {steps}: val accuracy {entry['val_triplet_accuracy']:.3f}")
                    history.append(entry)
                    if config.save_every and steps % config.save_every == 0 and not last:
                        self.save_checkpoint(micro + 1, trainable, optimizer, history)
                bar.set_postfix(loss=f"{running:.4f}", acc=f"{correct / max(seen, 1):.3f}")
                bar.update(1)
        bar.close()
        embedder.module.eval()

    def all_reduce(self, trainable: list[Any]) -> None:
        if self.state.num_processes == 1:
            return
        import torch.distributed as dist

        for parameter in trainable:
            if parameter.grad is not None:
                dist.all_reduce(parameter.grad)
                parameter.grad /= self.state.num_processes

    # -- after training ------------------------------------------------------------------
    def finish(
        self,
        before: dict[str, float],
        history: list[dict[str, Any]],
        micro_total: int,
        train_seconds: float,
    ) -> dict[str, Any]:
        from bindkit.train.card import write_card
        from bindkit.train.lines import apply_lines, lines_factors, scale_live
        from bindkit.train.lora import layer_index, lora_layers, save_adapter

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
            "config": config.record(),
            "base_model": self.embedder.describe(),
            "base_fingerprint": self.embedder.fingerprint,
            "data": {
                name: {
                    "path": getattr(config, name),
                    "sha256": sha256_file(Path(getattr(config, name))),
                }
                for name in ("train", "val", "sts", "preserve")
                if getattr(config, name)
            },
            "triplets": len(self.rows),
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
            "version": _version(),
        }
        if self.main:
            save_adapter(self.model, self.out / RAW)
            write_card(self.out / RAW, record, variant="raw")
            if lines is not None:
                apply_lines(
                    self.out / RAW, self.out / LINES, alpha=lines["alpha"], num_layers=depth
                )
                write_card(self.out / LINES, record, variant="lines")
            write_card(self.out, record, variant=None)
            atomic_write_text(self.out / "train.json", json.dumps(record, indent=2) + "\n")
            checkpoint = self.out / CHECKPOINT / "state.pt"
            checkpoint.unlink(missing_ok=True)
        return record

    def sweep(self, depth: int, raw: dict[str, float]) -> tuple[float, list[dict[str, float]]]:
        """Choose LiNeS α: among the αs whose val accuracy is within the tolerance of the raw
        adapter's, the best STS Spearman when an STS file is given, else the smallest α."""
        from bindkit.train.lines import lines_factors, scale_live

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
