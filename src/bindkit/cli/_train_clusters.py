"""``bindkit train clusters``: wired into ``cli/train.py`` by ``add_parser(sub)``."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any


def add_parser(train: Any) -> None:
    """Add ``clusters`` to the ``bindkit train`` sub-commands."""
    p = train.add_parser(
        "clusters",
        help="LoRA finetuning with InfoNCE inside mined clusters (GradCache, multi-GPU)",
        description="Each step: B clusters from `bindkit mine`, InfoNCE (τ 0.02) whose "
        "denominator is the cluster, GradCache chunks; writes a peft adapter and train.json.",
    )
    p.add_argument("--model", required=True, help="a spec with a torch backend (st:, mllm:, ...)")
    p.add_argument("--clusters", type=Path, required=True, help="the JSONL of `bindkit mine`")
    p.add_argument("--out", type=Path, required=True, help="adapter directory to write")
    p.add_argument("--clusters-per-step", type=int, default=8, help="B (default 8)")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--max-steps", type=int, default=None)
    p.add_argument("--lr", type=float, default=5e-5)
    p.add_argument("--warmup-steps", type=int, default=100)
    p.add_argument("--temperature", type=float, default=0.02)
    p.add_argument("--in-batch", action="store_true", help="baseline: in-batch negatives")
    p.add_argument("--lora-rank", type=int, default=8)
    p.add_argument("--chunk-size", type=int, default=32, help="GradCache chunk (inputs)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(handler=_train_clusters)


def _train_clusters(args: argparse.Namespace) -> int:
    from bindkit.train.clusters import ClusterTrainConfig, train_clusters

    config = ClusterTrainConfig(
        clusters_per_step=args.clusters_per_step,
        epochs=args.epochs,
        max_steps=args.max_steps,
        lr=args.lr,
        warmup_steps=args.warmup_steps,
        temperature=args.temperature,
        in_batch=args.in_batch,
        lora_rank=args.lora_rank,
        chunk_size=args.chunk_size,
        seed=args.seed,
    )
    record = train_clusters(args.model, args.clusters, args.out, config)
    print(f"{record['steps']} steps, last loss {record['losses'][-1]:.4f}; wrote {args.out}")
    return 0
