"""Training memory: activation checkpointing, the out-of-memory advice, and the peak estimate.

- :func:`enable_checkpointing`: each decoder/encoder layer of the transformers model keeps only
  its input and recomputes its insides during the backward pass (non-reentrant
  ``torch.utils.checkpoint``), so activation memory falls from every layer's tensors to one
  layer's; the loss and the gradients are those of the plain forward (tested).
- :func:`out_of_memory_advice`: the one line an out-of-memory error becomes, naming the knobs.
- :func:`estimate_peak`: a pure estimate of a training step's peak memory from the model's
  sizes and the batch, so ``bindkit memory`` can say before a run whether it fits. It counts
  what the autograd graph of a decoder layer under LoRA on q/k/v/o keeps per token
  (:func:`layer_bytes_per_token`: float32 copies of the norms' and LoRA's inputs, attention's
  q/k/v/output and the MLP's three tensors in the weights' precision), or with checkpointing one
  hidden vector per layer plus one layer recomputed; the backward's gradients of one layer; and a
  measured fixed part (:data:`RUNTIME_BYTES`). Attention is taken as a fused kernel (no
  sequence² matrix), as SDPA runs on GPUs and on the CPU. Measured against training steps on
  the CPU: within 15 % of the tensors' peak at 8 or more triplets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bindkit.errors import BindkitError

GIB = 1 << 30


def checkpointed_layers(module: Any) -> list[Any]:
    """The layers of ``module`` that recompute themselves in the backward pass."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    return [
        m
        for m in module.modules()
        if isinstance(m, GradientCheckpointingLayer) and m.gradient_checkpointing is True
    ]


def enable_checkpointing(module: Any) -> list[Any]:
    """Turn on activation checkpointing in the transformers model inside an embedder's module.

    Returns the checkpointed layers: they recompute only while ``training`` is set on them,
    which :func:`train_mode` does without switching the model's dropout on.

    Raises:
        BindkitError: the model has no checkpointable layers (``builtin:tiny-clip``).
    """
    from bindkit.adapters.lora import transformers_model

    model = transformers_model(module)
    if not getattr(model, "supports_gradient_checkpointing", False):
        raise BindkitError(
            f"{type(model).__name__}: no gradient checkpointing for this architecture; drop "
            "--gradient-checkpointing (train.gradient_checkpointing) or use --chunk-size"
        )
    # transformers renamed the call (activation_checkpointing_enable, 5.x); both take the kwargs
    enable = getattr(model, "activation_checkpointing_enable", None)
    if enable is not None:
        enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return checkpointed_layers(model)


def train_mode(module: Any, dropout: bool, checkpointed: list[Any]) -> None:
    """``module.train(dropout)``, with the checkpointed layers' own flag set: transformers
    recomputes a layer only in training mode, and a layer's flag leaves its submodules' dropout
    as ``dropout`` says."""
    module.train(dropout)
    for layer in checkpointed:
        layer.training = True


def out_of_memory_advice(where: str, config: Any, *, prefix: str = "--") -> str:
    """The line an out-of-memory error in training becomes: the knobs that lower the peak, in
    the order that keeps the result (checkpointing and GradCache give the same gradients; a
    smaller batch with accumulation changes only the in-batch negatives of InfoNCE).

    ``config`` is a train config (its batch option: ``batch_size`` or ``clusters_per_step``);
    ``prefix`` names options as flags (``--``) or as a recipe's keys (``train.``).
    """
    flags = prefix == "--"

    def option(name: str, value: Any = None) -> str:
        named = f"--{name.replace('_', '-')}" if flags else f"{prefix}{name}"
        if value is None:
            return named if flags else f"{named} = true"
        return f"{named} {value}" if flags else f"{named} = {value}"

    batch_option = "batch_size" if hasattr(config, "batch_size") else "clusters_per_step"
    batch = int(getattr(config, batch_option))
    half = max(1, batch // 2)
    steps = []
    if not config.gradient_checkpointing:
        steps.append(option("gradient_checkpointing"))
    if config.chunk_size != 1:
        chunk = max(1, (config.chunk_size or batch) // 2)
        steps.append(option("chunk_size", chunk) + " (GradCache)")
    steps.append(f"{option(batch_option, half)} with {option('grad_accum', 2 * config.grad_accum)}")
    return (
        f"{where}: out of memory at {batch_option.replace('_', ' ')} {batch}; lower the peak "
        f"with {', or '.join(steps)}; `bindkit memory` estimates a setting's peak before a run"
    )


class TrainingOutOfMemoryError(BindkitError):
    """Training ran out of memory; the message names the knobs (:func:`out_of_memory_advice`)."""

    def __init__(self, where: str, config: Any) -> None:
        super().__init__(out_of_memory_advice(where, config))
        self.config = config


@dataclass(frozen=True)
class ModelSizes:
    """What the estimate needs of a model: parameters and the text layers' widths."""

    parameters: int
    layers: int
    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    norm_qk: bool = False

    @property
    def lora_targets(self) -> tuple[int, ...]:
        """(in, out) sums of the q, k, v, o projections: LoRA adds r·(in + out) each."""
        q = self.heads * self.head_dim
        kv = self.kv_heads * self.head_dim
        return (self.hidden + q, self.hidden + kv, self.hidden + kv, q + self.hidden)


def text_sizes(config: Mapping[str, Any], parameters: int) -> ModelSizes:
    """The text part's sizes from a ``config.json`` (nested ``text_config`` or flat; BERT or
    Qwen names)."""
    text = config.get("text_config") or config
    heads = int(text["num_attention_heads"])
    hidden = int(text["hidden_size"])
    return ModelSizes(
        parameters=parameters,
        layers=int(text["num_hidden_layers"]),
        hidden=hidden,
        intermediate=int(text["intermediate_size"]),
        heads=heads,
        kv_heads=int(text.get("num_key_value_heads") or heads),
        head_dim=int(text.get("head_dim") or hidden // heads),
        norm_qk=str(text.get("model_type", "")).startswith("qwen3"),
    )


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes by part, and their sum (the peak of one optimizer step)."""

    weights: int
    lora: int
    activations: int
    workspace: int

    @property
    def peak(self) -> int:
        return self.weights + self.lora + self.activations + self.workspace

    def lines(self) -> list[str]:
        parts = [
            ("frozen weights", self.weights),
            ("LoRA weights, gradients, AdamW state", self.lora),
            ("activations kept for the backward pass", self.activations),
            ("backward working space and runtime", self.workspace),
            ("estimated peak", self.peak),
        ]
        return [f"{label}: {value / GIB:.2f} GiB" for label, value in parts]


FLOAT32 = 4
# what a training step allocates beside its tensors' per-token sizes, whatever the batch: the
# autograd engine, the kernels' scratch, the loss and optimizer bookkeeping (measured on the
# CPU: 28-48 MiB above the tensors counted here, at 2 to 32 triplets)
RUNTIME_BYTES = 40 << 20


def layer_bytes_per_token(sizes: ModelSizes, weight_bytes: int) -> int:
    """Bytes one decoder layer under LoRA on q/k/v/o keeps per token for the backward pass.

    Read off the autograd graph (``torch.autograd.graph.saved_tensors_hooks``) of a Qwen3-VL
    text layer: the RMSNorms compute in float32, so each keeps a float32 copy of its input (the
    two layer norms, and the q/k norms of Qwen3); LoRA runs in float32, so each of q/k/v/o keeps
    a float32 copy of its input; the attention kernel keeps the rotated q, k, v and its output,
    the MLP its gate, up and activated gate, in the weights' precision. In float32 the copies
    are the tensors themselves: one normed input shared by q/k/v, and o's input is the
    attention output.
    """
    q = sizes.heads * sizes.head_dim
    kv = sizes.kv_heads * sizes.head_dim
    kept = (2 * q + 2 * kv + 3 * sizes.intermediate) * weight_bytes
    if sizes.norm_qk:
        kept += (q + kv) * FLOAT32
    if weight_bytes == FLOAT32:
        return kept + 3 * sizes.hidden * FLOAT32
    # two norm inputs, q/k/v's LoRA input three times, o's once: float32 copies
    return kept + (5 * sizes.hidden + q) * FLOAT32


def estimate_peak(
    sizes: ModelSizes,
    *,
    sequences: int,
    tokens: int,
    weight_bytes: int = 2,
    lora_r: int = 4,
    gradient_checkpointing: bool = False,
) -> MemoryEstimate:
    """Peak memory of one training step: ``sequences`` inputs of ``tokens`` tokens each held
    for one backward pass (triplets: 3 x batch size, or 2 x chunk size under GradCache: a chunk
    of one side at a time, with its gradient cache), weights of ``weight_bytes`` bytes each.

    Activations: every layer's kept tensors (:func:`layer_bytes_per_token`), or with
    checkpointing each layer's input plus one layer recomputed; beside the layers, the final
    norm's float32 input and the rotary cos/sin. Working space: without checkpointing, the
    backward's gradients of one layer's tensors, as large as what the layer keeps (with it, the
    recomputed layer frees its tensors as its backward runs: nothing beyond it); and
    :data:`RUNTIME_BYTES`. Measured against one training step on the CPU
    (``benchmarks/bench_memory_estimate.py``): within the band docs/performance-real-shapes.md
    states.

    Example:
        >>> sizes = ModelSizes(1000, layers=2, hidden=4, intermediate=8, heads=2, kv_heads=1,
        ...                    head_dim=2)
        >>> estimate_peak(sizes, sequences=1, tokens=10, weight_bytes=4).activations
        4160
    """
    positions = sequences * tokens
    layer = layer_bytes_per_token(sizes, weight_bytes) * positions
    # outside the layers: the final norm's float32 input, the rotary cos and sin
    outside = (FLOAT32 * sizes.hidden + 2 * sizes.head_dim * weight_bytes) * positions
    if gradient_checkpointing:
        kept = sizes.layers * sizes.hidden * positions * weight_bytes + layer + outside
    else:
        kept = sizes.layers * layer + outside
    lora_parameters = sizes.layers * lora_r * sum(sizes.lora_targets)
    # fp32 LoRA weight, its gradient and AdamW's two moments; LoRA-B's r-wide fp32 inputs
    lora = 16 * lora_parameters + sizes.layers * 4 * lora_r * positions * FLOAT32
    return MemoryEstimate(
        weights=sizes.parameters * weight_bytes,
        lora=lora,
        activations=kept,
        workspace=(0 if gradient_checkpointing else layer) + RUNTIME_BYTES,
    )


def count_parameters(config: Mapping[str, Any]) -> int:
    """Parameters of the base model a ``config.json`` describes (built on the meta device:
    no memory, no weights)."""
    import torch
    from transformers import AutoConfig, AutoModel

    document = dict(config)
    model_type = document.pop("model_type", None)
    if model_type is None:
        raise BindkitError("config.json has no model_type; give a transformers config")
    built = AutoConfig.for_model(model_type, **document)
    with torch.device("meta"):
        model = AutoModel.from_config(built)
    return int(sum(p.numel() for p in model.parameters()))


@dataclass(frozen=True)
class StepSetting:
    """What a training step holds at once: the options of the train config that decide it."""

    batch_size: int
    chunk_size: int = 0
    gradient_checkpointing: bool = False
    lora_r: int = 4

    @property
    def sequences(self) -> int:
        """Inputs whose activations are alive together: a triplet batch's three sides, or one
        GradCache chunk."""
        return self.chunk_size if self.chunk_size else 3 * self.batch_size


def estimate_for_config(
    config: Mapping[str, Any], setting: StepSetting, *, tokens: int, weight_bytes: int
) -> MemoryEstimate:
    """:func:`estimate_peak` for a model ``config.json`` and a training setting."""
    sizes = text_sizes(config, count_parameters(config))
    return estimate_peak(
        sizes,
        sequences=setting.sequences,
        tokens=tokens,
        weight_bytes=weight_bytes,
        lora_r=setting.lora_r,
        gradient_checkpointing=setting.gradient_checkpointing,
    )
