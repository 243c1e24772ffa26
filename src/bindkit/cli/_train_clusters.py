"""``bindkit train clusters``: wired into ``cli/train.py`` by ``add_parser(sub)``."""

from __future__ import annotations

import argparse
from typing import Any


def add_parser(train: Any) -> None:
    """Add ``clusters`` to the ``bindkit train`` sub-commands (flags from ClusterTrainConfig)."""
    from bindkit.train.config import ClusterTrainConfig, add_arguments

    p = train.add_parser(
        "clusters",
        help="LoRA finetuning with InfoNCE inside mined clusters (GradCache, multi-GPU)",
        description="Each step: B clusters from `bindkit mine`, InfoNCE whose denominator is the "
        "cluster, GradCache chunks, warm-up then linear decay; the same loop, flags, checkpoints "
        "and outputs as `bindkit train triplets` (OUT/adapter-raw, OUT/adapter-lines, "
        "OUT/model_card.md, OUT/train.json; a rerun resumes from OUT/checkpoint).",
    )
    add_arguments(p, ClusterTrainConfig)
    p.set_defaults(handler=_train_clusters)


def _train_clusters(args: argparse.Namespace) -> int:
    from bindkit.cli.train import report
    from bindkit.train.config import ClusterTrainConfig, from_args
    from bindkit.train.trainer import train

    return report(train(from_args(args, ClusterTrainConfig)), args.out)
