"""``TrainConfig``: one dataclass for the CLI flags, the validation and the model card's record.

Each field's ``metadata["help"]`` is its documentation; :func:`add_arguments` builds argparse
options from the fields, so the three can never drift apart.
"""

from __future__ import annotations

import argparse
import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

PRECISIONS = ("auto", "fp32", "bf16")


def _help(text: str, **extra: Any) -> Any:
    return {"help": text, **extra}


@dataclass
class TrainConfig:
    """Options of ``bindkit train triplets``; every field is a CLI flag (``--lora-r`` …)."""

    model: str = field(metadata=_help("model spec to finetune, e.g. st:default or mllm:PATH"))
    train: str = field(
        metadata=_help("triplet JSONL file (query/positive/negative rows, as bindkit synth writes)")
    )
    out: str = field(metadata=_help("output directory: adapters, model card, checkpoints"))
    val: str | None = field(
        default=None, metadata=_help("validation triplet JSONL: accuracy every --eval-every steps")
    )
    sts: str | None = field(
        default=None,
        metadata=_help("STS file (tsv/csv/jsonl) that the LiNeS sweep trades against val accuracy"),
    )
    lr: float = field(
        default=5e-5,
        metadata=_help(
            "AdamW learning rate (constant); 5e-5 suits 2B+ models, small ones need ~1e-3"
        ),
    )
    weight_decay: float = field(default=0.01, metadata=_help("AdamW weight decay"))
    epochs: int = field(default=1, metadata=_help("passes over the training file"))
    max_steps: int | None = field(
        default=None, metadata=_help("stop after this many optimizer steps (default: all)")
    )
    batch_size: int = field(default=32, metadata=_help("triplets per device per micro-batch"))
    grad_accum: int = field(default=1, metadata=_help("micro-batches per optimizer step"))
    margin: float = field(default=0.05, metadata=_help("hinge margin over cosine"))
    lora_r: int = field(default=4, metadata=_help("LoRA rank"))
    lora_alpha: float = field(default=4.0, metadata=_help("LoRA alpha (scaling alpha/r)"))
    lora_dropout: float = field(default=0.0, metadata=_help("LoRA dropout"))
    model_dropout: bool = field(
        default=True,
        metadata=_help(
            "keep the frozen model's own dropout active while training, as peft and "
            "sentence-transformers do (--no-model-dropout: a deterministic forward, faster on CPU)"
        ),
    )
    lines: bool = field(
        default=True, metadata=_help("apply LiNeS to the final adapter (--no-lines: raw update)")
    )
    lines_alpha: float | None = field(
        default=None,
        metadata=_help("LiNeS alpha (beta = 1 - alpha); default: chosen by a sweep on --val"),
    )
    lines_tolerance: float = field(
        default=1.0,
        metadata=_help("sweep: keep alphas whose val accuracy is within this many points of raw"),
    )
    preserve: str | None = field(
        default=None,
        metadata=_help(
            "text/JSONL file of sentences whose base-model embeddings are preserved (distillation)"
        ),
    )
    preserve_weight: float = field(
        default=1.0, metadata=_help("weight of the preservation (distillation) term")
    )
    preserve_batch: int = field(
        default=32, metadata=_help("preservation sentences mixed into each micro-batch")
    )
    attn_loss: bool = field(
        default=False,
        metadata=_help("add the attention binding loss on the queries (bindkit.train.attention)"),
    )
    attn_tau: float = field(default=0.1, metadata=_help("attention loss target margin tau"))
    attn_weight: float = field(default=0.1, metadata=_help("attention loss weight lambda"))
    eval_every: int = field(
        default=0, metadata=_help("validation accuracy every K optimizer steps (0: at the end)")
    )
    save_every: int = field(
        default=100,
        metadata=_help("checkpoint every K optimizer steps (0: never); resume reads it"),
    )
    precision: str = field(
        default="auto", metadata=_help("auto (bf16 autocast on GPU), fp32 or bf16")
    )
    seed: int = field(default=0, metadata=_help("seed of LoRA init and data order"))
    overwrite: bool = field(
        default=False, metadata=_help("start over even if OUT holds a checkpoint or a finished run")
    )
    progress: bool = field(default=True, metadata=_help("show a progress bar (--no-progress)"))

    def __post_init__(self) -> None:
        positive = {
            "lr": self.lr,
            "epochs": self.epochs,
            "batch_size": self.batch_size,
            "grad_accum": self.grad_accum,
            "lora_r": self.lora_r,
            "lora_alpha": self.lora_alpha,
            "preserve_batch": self.preserve_batch,
        }
        for name, value in positive.items():
            if not value > 0:
                raise BindkitError(f"--{_flag(name)} {value}: must be positive")
        nonnegative = {
            "weight_decay": self.weight_decay,
            "margin": self.margin,
            "preserve_weight": self.preserve_weight,
            "eval_every": self.eval_every,
            "save_every": self.save_every,
            "lines_tolerance": self.lines_tolerance,
            "attn_tau": self.attn_tau,
            "attn_weight": self.attn_weight,
        }
        for name, value in nonnegative.items():
            if value < 0:
                raise BindkitError(f"--{_flag(name)} {value}: must be zero or more")
        if self.max_steps is not None and self.max_steps < 1:
            raise BindkitError(f"--max-steps {self.max_steps}: must be at least 1")
        if not 0.0 <= self.lora_dropout < 1.0:
            raise BindkitError(f"--lora-dropout {self.lora_dropout}: give a value in [0, 1)")
        if self.lines_alpha is not None and not 0.0 <= self.lines_alpha <= 1.0:
            raise BindkitError(f"--lines-alpha {self.lines_alpha}: give a value in [0, 1]")
        if self.precision not in PRECISIONS:
            raise BindkitError(f"--precision {self.precision}: use {', '.join(PRECISIONS)}")
        for name in ("train", "val", "sts", "preserve"):
            value = getattr(self, name)
            if value is not None and not Path(value).is_file():
                raise BindkitError(f"--{name} {value}: file not found")

    def record(self) -> dict[str, Any]:
        """The options as written into the model card and checkpoints."""
        return dataclasses.asdict(self)


def _flag(name: str) -> str:
    return name.replace("_", "-")


# Options that change nothing about the result (resuming may change them freely).
NON_RESULT_FIELDS = frozenset({"out", "progress", "overwrite", "save_every", "eval_every"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add one option per :class:`TrainConfig` field (help from the field's metadata)."""
    hints = typing.get_type_hints(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        kind = hints[f.name]
        flag = f"--{_flag(f.name)}"
        help_text = f.metadata["help"]
        if kind is bool:
            if f.default is True:
                parser.add_argument(
                    f"--no-{_flag(f.name)}", dest=f.name, action="store_false", help=help_text
                )
            else:
                parser.add_argument(flag, dest=f.name, action="store_true", help=help_text)
            continue
        base = (
            next(a for a in typing.get_args(kind) if a is not type(None))
            if typing.get_args(kind)
            else kind
        )
        required = f.default is dataclasses.MISSING
        default = None if required else f.default
        shown = "" if required or default is None else f" (default: {default})"
        parser.add_argument(
            flag, dest=f.name, type=base, required=required, default=default, help=help_text + shown
        )


def from_args(args: argparse.Namespace) -> TrainConfig:
    """Build a :class:`TrainConfig` from parsed arguments (validated)."""
    return TrainConfig(**{f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)})
