"""``bindkit memory``: a training step's estimated peak memory, before a run (a dry run)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "memory",
        help="estimate a training step's peak memory for a model shape and batch (dry run)",
        description="Estimate the peak memory of one LoRA training step (weights, LoRA and "
        "AdamW state, the activations kept for the backward pass, the backward's working space) "
        "for a model's config.json and a recipe's or the given batch, without loading weights. "
        "Activations are for a fused attention kernel. Within 15 % of a measured step's tensors "
        "at 8 or more triplets; the CPU's resident peak is higher (the allocator keeps freed "
        "memory): see docs/performance-real-shapes.md.",
    )
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument(
        "--shape",
        default=None,
        help="a published shape (bindkit.embed.shapes), e.g. qwen3-vl-embedding-2b",
    )
    model.add_argument(
        "--config", type=Path, default=None, help="a checkpoint folder or its config.json"
    )
    parser.add_argument(
        "--recipe",
        default=None,
        metavar="NAME|RECIPE.toml",
        help="take batch_size, chunk_size, gradient_checkpointing and lora_r from this recipe's "
        "[train] (a packaged name or a file)",
    )
    parser.add_argument("--batch-size", type=int, default=None, help="triplets per micro-batch")
    parser.add_argument("--chunk-size", type=int, default=None, help="GradCache chunk (0: off)")
    parser.add_argument(
        "--gradient-checkpointing",
        action="store_true",
        default=None,
        help="recompute layers in the backward pass",
    )
    parser.add_argument("--lora-r", type=int, default=None, help="LoRA rank")
    parser.add_argument(
        "--tokens", type=int, default=64, help="tokens per input (prompt and caption)"
    )
    parser.add_argument(
        "--dtype", default="bfloat16", choices=sorted(DTYPE_BYTES), help="the weights' precision"
    )
    parser.set_defaults(handler=_memory)


def _model_config(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    if args.shape is not None:
        from bindkit.embed.shapes import get_shape

        return args.shape, get_shape(args.shape).read_config()
    path = args.config / "config.json" if args.config.is_dir() else args.config
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise BindkitError(
            f"--config {args.config}: cannot read {path.name} ({exc}); give a checkpoint folder "
            "or its config.json"
        ) from None
    if not isinstance(config, dict):
        raise BindkitError(f"--config {path}: not a JSON object; give a transformers config.json")
    return str(args.config), config


def _setting(args: argparse.Namespace) -> Any:
    from dataclasses import fields

    from bindkit.train.config import TrainConfig
    from bindkit.train.memory import StepSetting

    names = [f.name for f in fields(StepSetting)]
    values: dict[str, Any] = {f.name: f.default for f in fields(TrainConfig) if f.name in names}
    if args.recipe is not None:
        from bindkit.recipes.recipe import Recipe, packaged_recipe

        recipe = (
            Recipe.from_toml(args.recipe)
            if args.recipe.endswith(".toml")
            else packaged_recipe(args.recipe)
        )
        values.update({k: v for k, v in recipe.train.items() if k in names})
    for name in names:
        given = getattr(args, name)
        if given is not None:
            values[name] = given
    for name, low in (("batch_size", 1), ("chunk_size", 0), ("lora_r", 1)):
        if values[name] < low:
            raise BindkitError(f"--{name.replace('_', '-')} {values[name]}: use {low} or more")
    return StepSetting(**values)


def _memory(args: argparse.Namespace) -> int:
    from bindkit.train.memory import estimate_for_config

    if args.tokens < 1:
        raise BindkitError(f"--tokens {args.tokens}: use 1 or more")
    name, config = _model_config(args)
    setting = _setting(args)
    estimate = estimate_for_config(
        config, setting, tokens=args.tokens, weight_bytes=DTYPE_BYTES[args.dtype]
    )
    print(
        f"{name}, {args.dtype} weights; batch {setting.batch_size}, chunk {setting.chunk_size}, "
        f"gradient checkpointing {'on' if setting.gradient_checkpointing else 'off'}, LoRA r "
        f"{setting.lora_r}, {args.tokens} tokens per input ({setting.sequences} inputs at once)"
    )
    for line in estimate.lines():
        print(f"  {line}")
    return 0
