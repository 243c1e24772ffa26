"""A soup of LoRA adapters: their weighted mean update ΔW = Σ wᵢ·ΔWᵢ as one peft adapter.

Each adapter's update of a module is ΔWᵢ = sᵢ·Bᵢ·Aᵢ (sᵢ = lora_alpha/r). Stacking the ranks,
A = [A₁; A₂; …] and B = [w₁s₁/s·B₁, w₂s₂/s·B₂, …] with s = s₁ gives s·B·A = Σ wᵢ·ΔWᵢ exactly, so
the soup is an ordinary adapter of rank Σ rᵢ (no merge into the base weights, no approximation).
Averaging the adapters of two training seeds keeps what they share and halves what is
idiosyncratic to each (docs/benchmarks.md, issue 18 session 5).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text
from bindkit.errors import BindkitError
from bindkit.train.lora import ADAPTER_WEIGHTS, read_lora_adapter

SOUP_RECORD = "soup.json"


def _scale(config: dict[str, Any], adapter: Path) -> float:
    if config.get("rank_pattern") or config.get("alpha_pattern"):
        raise BindkitError(
            f"{adapter}: per-module ranks or alphas (rank_pattern/alpha_pattern) are not "
            "supported; retrain with one rank"
        )
    r, alpha = config.get("r"), config.get("lora_alpha")
    if not isinstance(r, int) or r < 1 or not isinstance(alpha, int | float):
        raise BindkitError(f"{adapter}/adapter_config.json: needs an integer r and a lora_alpha")
    return float(alpha) / r * (math.sqrt(r) if config.get("use_rslora") else 1.0)


def soup_tensors(
    parts: Sequence[tuple[dict[str, Any], float]], weights: Sequence[float]
) -> dict[str, Any]:
    """The stacked LoRA tensors of Σ wᵢ·ΔWᵢ for ``parts`` = [(tensors, scale sᵢ), …], at the
    first part's scale (pure: the math of :func:`average_adapters`)."""
    import torch

    keys = set(parts[0][0])
    scale = parts[0][1]
    out: dict[str, Any] = {}
    for key in sorted(keys):
        if ".lora_A." in key:
            out[key] = torch.cat([tensors[key] for tensors, _ in parts], dim=0)
        elif ".lora_B." in key:
            out[key] = torch.cat(
                [
                    w * s / scale * tensors[key]
                    for (tensors, s), w in zip(parts, weights, strict=True)
                ],
                dim=1,
            )
        else:
            raise BindkitError(
                f"{key}: the adapters train more than LoRA matrices (modules_to_save); a soup "
                "needs LoRA-only adapters"
            )
    return {k: v.contiguous() for k, v in out.items()}


def average_adapters(
    adapters: Sequence[str | Path],
    out: str | Path,
    weights: Sequence[float] | None = None,
) -> dict[str, Any]:
    """Write the soup of peft LoRA ``adapters`` (same base model, same adapted modules) to
    ``out``: one adapter whose update is Σ wᵢ·ΔWᵢ, the mean by default.

    Returns the record also written to ``OUT/soup.json`` (sources, weights, rank).
    """
    from safetensors.torch import save_file

    paths, out = [Path(a) for a in adapters], Path(out)
    if len(paths) < 2:
        raise BindkitError("soup: give two or more adapter directories")
    weights = [1.0 / len(paths)] * len(paths) if weights is None else list(weights)
    if len(weights) != len(paths):
        raise BindkitError(f"--weights: give one per adapter ({len(paths)}), not {len(weights)}")
    if not all(math.isfinite(w) for w in weights):
        raise BindkitError(f"--weights {weights}: give finite numbers")
    if any(out.resolve() == p.resolve() for p in paths):
        raise BindkitError(f"--out {out}: is an input adapter; write the soup to another directory")
    configs, parts = [], []
    for path in paths:
        config, tensors = read_lora_adapter(path, "a soup")
        configs.append(config)
        parts.append((tensors, _scale(config, path)))
    first = configs[0]
    for path, config, (tensors, _) in zip(paths[1:], configs[1:], parts[1:], strict=True):
        for field in ("base_model_name_or_path", "target_modules"):
            if _comparable(config.get(field)) != _comparable(first.get(field)):
                raise BindkitError(
                    f"{path}: {field} {config.get(field)!r} differs from {paths[0]}'s "
                    f"{first.get(field)!r}; a soup needs adapters of one model and modules"
                )
        if set(tensors) != set(parts[0][0]):
            raise BindkitError(f"{path}: adapts other modules than {paths[0]}; retrain alike")
    tensors = soup_tensors(parts, weights)
    rank = sum(int(c["r"]) for c in configs)
    config = dict(first)
    config["r"] = rank
    config["lora_alpha"] = parts[0][1] * (
        rank / math.sqrt(rank) if first.get("use_rslora") else rank
    )
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "adapter_config.json", json.dumps(config, indent=2) + "\n")
    tmp = out / f".{ADAPTER_WEIGHTS}.tmp"
    save_file(tensors, str(tmp), metadata={"format": "pt"})
    tmp.replace(out / ADAPTER_WEIGHTS)
    record = {"sources": [str(p) for p in paths], "weights": weights, "rank": rank}
    atomic_write_text(out / SOUP_RECORD, json.dumps(record, indent=2) + "\n")
    return record


def _comparable(value: Any) -> Any:
    return sorted(value) if isinstance(value, list) else value
