"""LiNeS (Wang et al., ICLR 2025): scale each layer's update by λ(ℓ) = α + β·ℓ/(L−1), post hoc.

Shallow layers keep little of the finetuned update (general features), the last layer keeps it
all when β = 1 − α (single-task editing). For a LoRA update ΔW = B·A·s, scaling B by λ(ℓ) scales
ΔW by λ(ℓ), so a LiNeS adapter is an ordinary peft adapter.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bindkit.adapters.lora import ADAPTER_WEIGHTS, layer_index, read_lora_adapter
from bindkit.errors import BindkitError

# The deepest text stacks in use have ~100 layers; a larger L is a typo, and would only build
# (and write to lines.json) a list of factors that long.
MAX_LAYERS = 1000


def lines_state(alpha: float) -> str:
    """How a report names LiNeS at ``alpha``: at α 1 every factor is 1 (β = 1 − α = 0), so the
    update is kept whole and LiNeS is off, not "applied".

    Example:
        >>> lines_state(1.0), lines_state(0.5)
        ('LiNeS off (α = 1)', 'LiNeS α 0.5')
    """
    return "LiNeS off (α = 1)" if alpha == 1.0 else f"LiNeS α {alpha:g}"


def lines_factors(num_layers: int, alpha: float, beta: float | None = None) -> list[float]:
    """λ(ℓ) = α + β·ℓ/(L−1) for ℓ = 0 … L−1; β defaults to 1 − α.

    Example:
        >>> [round(f, 6) for f in lines_factors(3, 0.2)]
        [0.2, 0.6, 1.0]
    """
    if not 1 <= num_layers <= MAX_LAYERS:
        raise BindkitError(
            f"--num-layers {num_layers}: give a whole number from 1 to {MAX_LAYERS} (the model "
            "depth)"
        )
    if not 0.0 <= alpha <= 1.0:
        raise BindkitError(f"--alpha {alpha}: give a finite number in [0, 1]")
    if beta is not None and not -1.0 <= beta <= 1.0:
        raise BindkitError(f"--beta {beta}: give a finite number in [-1, 1]")
    beta = 1.0 - alpha if beta is None else beta
    if num_layers == 1:
        return [alpha + beta]
    return [alpha + beta * layer / (num_layers - 1) for layer in range(num_layers)]


def factor_for(name: str, factors: list[float], alpha: float) -> float:
    """The factor of one parameter: its layer's λ, or α outside the layers (as in LiNeS)."""
    layer = layer_index(name)
    return alpha if layer is None else factors[layer]


def num_layers_of(names: list[str]) -> int:
    layers = {i for i in map(layer_index, names) if i is not None}
    if not layers:
        raise BindkitError("LiNeS: the adapter has no per-layer weights (…layer(s).N.…)")
    return max(layers) + 1


def apply_lines(
    adapter: str | Path,
    out: str | Path,
    *,
    alpha: float,
    beta: float | None = None,
    num_layers: int | None = None,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write a copy of a peft LoRA adapter whose layer-ℓ update is scaled by λ(ℓ).

    Only B is scaled, so the copy keeps the source's config and scale (plain or rsLoRA alike).

    Args:
        adapter: A peft adapter directory (``adapter_config.json`` + ``adapter_model.safetensors``).
        out: The new adapter directory, written whole or not at all
            (:mod:`bindkit.adapters.out`); the source's other files are copied into it.
        alpha, beta: LiNeS coefficients; β defaults to 1 − α.
        num_layers: L, the depth of the model (at most :data:`MAX_LAYERS`); default: highest
            layer index in the adapter + 1.
        overwrite: replace an existing adapter at ``out`` (refused otherwise).

    Returns:
        The LiNeS record (α, β, L, factors) also written to ``OUT/lines.json``.
    """
    from safetensors.torch import save_file

    from bindkit.adapters.out import check_finite, check_out, staged
    from bindkit.adapters.soup import lora_scale

    adapter, out = Path(adapter), Path(out)
    if out.resolve() == adapter.resolve():
        raise BindkitError(
            f"--out {out}: is the input adapter; write the copy to another directory"
        )
    lines_factors(1 if num_layers is None else num_layers, alpha, beta)  # options, before reading
    config, tensors = read_lora_adapter(adapter, "LiNeS")
    lora_scale(config, adapter)  # the copy keeps the config: a NaN lora_alpha would stay NaN
    check_finite(tensors, adapter / ADAPTER_WEIGHTS)
    check_out(out, [adapter], overwrite=overwrite)
    found = num_layers_of(list(tensors))
    depth = found if num_layers is None else num_layers
    if depth < found:
        raise BindkitError(
            f"--num-layers {depth}: the adapter has weights for {found} layers; "
            f"give at least {found}"
        )
    factors = lines_factors(depth, alpha, beta)
    scaled = {
        name: tensor * factor_for(name, factors, alpha) if ".lora_B." in name else tensor
        for name, tensor in tensors.items()
    }
    record = {
        "alpha": alpha,
        "beta": 1.0 - alpha if beta is None else beta,
        "num_layers": depth,
        "factors": factors,
        "source": str(adapter),
    }
    with staged(out, overwrite=overwrite) as stage:
        for item in adapter.iterdir():
            if item.is_file() and item.name not in (ADAPTER_WEIGHTS, "lines.json"):
                shutil.copy2(item, stage / item.name)
        weights = {k: v.contiguous() for k, v in scaled.items()}
        save_file(weights, str(stage / ADAPTER_WEIGHTS), metadata={"format": "pt"})
        (stage / "lines.json").write_text(json.dumps(record, indent=2) + "\n")
    return record


def scale_live(model: Any, factors: list[float] | None, alpha: float = 1.0) -> None:
    """Scale the LoRA layers of a live model by LiNeS factors (None restores the raw update).

    Used by the α sweep: it changes peft's per-layer ``scaling`` instead of the weights, through
    peft's own ``set_scale`` (factor × the configured scale: lora_alpha/r, or lora_alpha/√r for
    rsLoRA), so the live model equals :func:`apply_lines`' adapter for either kind.
    """
    from bindkit.adapters.lora import lora_layers

    for name, layer in lora_layers(model):
        factor = 1.0 if factors is None else factor_for(name, factors, alpha)
        for key in list(layer.scaling):
            layer.set_scale(key, factor)
