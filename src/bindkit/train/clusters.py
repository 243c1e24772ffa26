"""``bindkit train clusters``: LoRA finetuning with InfoNCE inside mined clusters (seed 002).

Each step takes B clusters (``bindkit mine`` output, k+1 pairs each), embeds the queries with the
query role and each pair's instruction and the positives with the document role, through the
embedder's own ``collate``/``forward`` (so the hierarchical prompt is exactly evaluation's), and
minimises :func:`~bindkit.train.cluster.cluster_infonce` (or the in-batch baseline) with GradCache,
so the effective batch B·(k+1) does not depend on accelerator memory. LoRA (rank 8) on the text
attention projections, AdamW 5e-5, linear decay after a 100-step warm-up. Under ``accelerate
launch`` each rank takes its share of clusters, embeddings are gathered across ranks for the loss
(local shard kept for gradients) and the adapter gradients are summed across ranks.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError, DataFormatError
from bindkit.mining.data import IMAGE_SUFFIXES
from bindkit.train.lora import add_lora, save_adapter

# Text attention projections only (never the vision tower): Qwen-VL names, then BERT names.


@dataclass(frozen=True)
class ClusterTrainConfig:
    """Options of ``bindkit train clusters``.

    Attributes:
        clusters_per_step: B, clusters per optimisation step (effective batch B·(k+1)).
        epochs: passes over the clusters.
        max_steps: stop after this many steps (None: all epochs).
        lr: AdamW learning rate.
        warmup_steps: linear warm-up steps before the linear decay.
        weight_decay: AdamW weight decay.
        temperature: InfoNCE τ.
        in_batch: the baseline: every positive of the step is a negative (clusters ignored).
        lora_rank: LoRA rank r (alpha = 2r).
        lora_dropout: dropout inside the LoRA layers.
        chunk_size: GradCache chunk (inputs per forward with gradients).
        seed: shuffling and initialisation seed.
    """

    clusters_per_step: int = 8
    epochs: int = 1
    max_steps: int | None = None
    lr: float = 5e-5
    warmup_steps: int = 100
    weight_decay: float = 0.0
    temperature: float = 0.02
    in_batch: bool = False
    lora_rank: int = 8
    lora_dropout: float = 0.0
    chunk_size: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("clusters_per_step", "epochs", "lora_rank", "chunk_size"):
            if getattr(self, name) < 1:
                raise BindkitError(f"--{name.replace('_', '-')} must be at least 1")
        if self.max_steps is not None and self.max_steps < 1:
            raise BindkitError("--max-steps must be at least 1")
        if self.lr <= 0 or self.temperature <= 0:
            raise BindkitError("--lr and --temperature must be positive")
        if self.warmup_steps < 0:
            raise BindkitError("--warmup-steps must be 0 or more")


Item = tuple[str, str, str | None]  # (modality, text or image path, instruction)


def read_clusters(path: str | Path) -> list[list[dict[str, Any]]]:
    """The ``pairs`` of each cluster line of a ``bindkit mine`` file, validated."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise DataFormatError(f"--clusters {path}: no such file") from None
    clusters = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataFormatError(f"{path}:{number}: not valid JSON ({exc.msg})") from None
        pairs = record.get("pairs") if isinstance(record, dict) else None
        if (
            not isinstance(pairs, list)
            or not pairs
            or not all(
                isinstance(p, dict)
                and isinstance(p.get("query"), str)
                and isinstance(p.get("positive"), str)
                for p in pairs
            )
        ):
            raise DataFormatError(
                f"{path}:{number}: expected {{'pairs': [{{'query', 'positive'}}, ...]}} "
                "(the output of `bindkit mine`)"
            )
        clusters.append(pairs)
    if not clusters:
        raise DataFormatError(f"--clusters {path}: no clusters")
    return clusters


def _item(value: str, instruction: str | None, base: Path) -> Item:
    if Path(value).suffix.lower() in IMAGE_SUFFIXES:
        path = Path(value) if Path(value).is_absolute() else base / value
        return ("image", str(path), instruction)
    return ("text", value, instruction)


def encode_items(embedder: Any, items: Sequence[Item], role: str) -> Any:
    """Embeddings (with gradients) of mixed items, in input order: one collate per group."""
    import torch

    from bindkit.embed.images import load_image

    groups: dict[tuple[str, str | None], list[int]] = {}
    for i, (modality, _, instruction) in enumerate(items):
        groups.setdefault((modality, instruction), []).append(i)
    parts, order = [], []
    for (modality, instruction), index in groups.items():
        values = [items[i][1] for i in index]
        inputs = values if modality == "text" else [load_image(v) for v in values]
        batch = embedder.collate(inputs, modality=modality, role=role, instruction=instruction)
        parts.append(embedder.forward(batch))
        order += index
    stacked = torch.cat(parts)
    inverse = torch.empty(len(order), dtype=torch.long)
    inverse[torch.tensor(order)] = torch.arange(len(order))
    return stacked[inverse.to(stacked.device)]


def train_clusters(
    model: str,
    clusters: str | Path,
    out: str | Path,
    config: ClusterTrainConfig | None = None,
    *,
    log: Callable[[str], None] | None = print,
) -> dict[str, Any]:
    """Finetune ``model`` on mined clusters; write the LoRA adapter and ``train.json`` to ``out``.

    Returns:
        The record in ``out/train.json`` (losses per step, options, provenance). Load the result
        as ``SPEC+adapter=OUT``.
    """
    import torch
    from accelerate import Accelerator
    from transformers import get_linear_schedule_with_warmup

    from bindkit import __version__
    from bindkit._io import atomic_write_text, sha256_file
    from bindkit._lock import directory_lock
    from bindkit.embed.registry import load_embedder
    from bindkit.train.cluster import ClusterInfoNCELoss
    from bindkit.train.gradcache import GradCache

    config = config or ClusterTrainConfig()
    out = Path(out)
    data = read_clusters(clusters)
    base = Path(clusters).parent
    accelerator = Accelerator()
    rank, world = accelerator.process_index, accelerator.num_processes
    random.seed(config.seed)
    torch.manual_seed(config.seed)

    embedder: Any = load_embedder(model, cache=False, progress=False)
    if not all(hasattr(embedder, a) for a in ("collate", "forward", "module")):
        raise BindkitError(f"--model {model}: this backend has no differentiable path to train")
    module = embedder.module
    # the same LoRA placement and peft file layout as `bindkit train triplets`
    hf = add_lora(
        module,
        rank=config.lora_rank,
        alpha=2.0 * config.lora_rank,
        dropout=config.lora_dropout,
        seed=config.seed,
    )
    module.train()
    params = [p for p in module.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=config.weight_decay)

    per_step = config.clusters_per_step * world
    steps_per_epoch = max(1, len(data) // per_step)
    total = steps_per_epoch * config.epochs
    if config.max_steps is not None:
        total = min(total, config.max_steps)
    scheduler = get_linear_schedule_with_warmup(optimizer, config.warmup_steps, total)
    loss_fn = ClusterInfoNCELoss(config.temperature, in_batch=config.in_batch)
    cache = GradCache(config.chunk_size)
    losses: list[float] = []
    step = 0
    with directory_lock(out, "bindkit train clusters"):
        for _epoch in range(config.epochs):
            order = list(range(len(data)))
            random.shuffle(order)
            for start in range(0, steps_per_epoch * per_step, per_step):
                if step >= total:
                    break
                mine = order[start : start + per_step][rank::world]
                queries, docs, groups = [], [], []
                for g, c in enumerate(mine):
                    for pair in data[c]:
                        instruction = pair.get("instruction") or None
                        queries.append(_item(pair["query"], instruction, base))
                        docs.append(_item(pair["positive"], None, base))
                        groups.append(g)
                group_ids = torch.tensor(groups, device=accelerator.device)
                loss = cache.backward(
                    [
                        lambda chunk: encode_items(embedder, chunk, "query"),
                        lambda chunk: encode_items(embedder, chunk, "document"),
                    ],
                    [queries, docs],
                    lambda q, d, g=group_ids: loss_fn(q, d, g),
                )
                if world > 1:
                    for p in params:
                        if p.grad is not None:
                            torch.distributed.all_reduce(p.grad)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                losses.append(float(loss))
                step += 1
                if log is not None and accelerator.is_main_process and step % 10 == 1:
                    log(f"step {step}/{total} loss {losses[-1]:.4f}")
        record = {
            "schema": "bindkit.train_clusters/1",
            "provenance": {
                "bindkit_version": __version__,
                "model": model,
                "model_fingerprint": embedder.fingerprint,
                "clusters": str(clusters),
                "clusters_sha256": sha256_file(Path(clusters)),
                "options": asdict(config),
                "world_size": world,
            },
            "steps": step,
            "losses": losses,
        }
        if accelerator.is_main_process:
            save_adapter(hf, out)
            atomic_write_text(out / "train.json", json.dumps(record, indent=2) + "\n")
    accelerator.wait_for_everyone()
    return record
