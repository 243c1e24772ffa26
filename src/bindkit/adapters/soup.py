"""A soup of LoRA adapters: their weighted mean update ΔW = Σ wᵢ·ΔWᵢ as one peft adapter.

Each adapter's update of a module is ΔWᵢ = sᵢ·Bᵢ·Aᵢ (sᵢ = lora_alpha/r, or lora_alpha/√r for an
rsLoRA adapter, as peft applies it). Stacking the ranks,
A = [A₁; A₂; …] and B = [w₁s₁/s·B₁, w₂s₂/s·B₂, …] with s = s₁ gives s·B·A = Σ wᵢ·ΔWᵢ exactly, so
the soup is an ordinary adapter of rank Σ rᵢ (no merge into the base weights, no approximation).
Averaging the adapters of two training seeds keeps what they share and halves what is
idiosyncratic to each (docs/experiments/, issue 18 session 5).

Inputs are checked before anything is written: finite tensors whose shapes match their ``r`` and
each other, a finite scale in (0, MAX_SCALE], weights in [−MAX_WEIGHT, MAX_WEIGHT] and not all 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit.adapters.lora import ADAPTER_WEIGHTS, read_lora_adapter
from bindkit.errors import BindkitError

SOUP_RECORD = "soup.json"
MAX_WEIGHT = 10.0  # |wᵢ| bound: extrapolating an update tenfold is already far outside any recipe
MAX_SCALE = 1000.0  # bound on an input's lora_alpha/r (or /√r): a larger one is a corrupt config


def lora_scale(config: dict[str, Any], adapter: Path) -> float:
    """The adapter's LoRA scale sᵢ as peft applies it: lora_alpha/r, or lora_alpha/√r with
    rsLoRA, checked (one rank for every module, finite, in (0, MAX_SCALE]).

    Raises:
        BindkitError: naming the adapter's config and what is wrong with it.
    """
    if config.get("rank_pattern") or config.get("alpha_pattern"):
        raise BindkitError(
            f"{adapter}: per-module ranks or alphas (rank_pattern/alpha_pattern) are not "
            "supported; retrain with one rank"
        )
    r, alpha = config.get("r"), config.get("lora_alpha")
    if (
        isinstance(r, bool)
        or not isinstance(r, int)
        or r < 1
        or isinstance(alpha, bool)
        or not isinstance(alpha, int | float)
    ):
        raise BindkitError(f"{adapter}/adapter_config.json: needs an integer r and a lora_alpha")
    scale = float(alpha) / (math.sqrt(r) if config.get("use_rslora") else r)
    if not (math.isfinite(scale) and 0 < scale <= MAX_SCALE):
        raise BindkitError(
            f"{adapter}/adapter_config.json: lora_alpha {alpha} with r {r} gives the scale "
            f"{scale:g}; a LoRA scale must be finite and in (0, {MAX_SCALE:g}]; retrain or "
            "re-copy the adapter"
        )
    return scale


def check_weights(weights: Sequence[float], count: int) -> list[float]:
    """The soup weights, checked: one per adapter, finite, each in [-MAX_WEIGHT, MAX_WEIGHT],
    not all zero (that soup would be no update at all).

    Raises:
        BindkitError: one line naming ``--weights``.
    """
    weights = list(weights)
    if len(weights) != count:
        raise BindkitError(f"--weights: give one per adapter ({count}), not {len(weights)}")
    if not all(math.isfinite(w) for w in weights):
        raise BindkitError(f"--weights {weights}: give finite numbers")
    if any(abs(w) > MAX_WEIGHT for w in weights):
        raise BindkitError(
            f"--weights {weights}: give each weight in [-{MAX_WEIGHT:g}, {MAX_WEIGHT:g}]"
        )
    if not any(weights):
        raise BindkitError(
            f"--weights {weights}: all zero, the soup would change nothing; give at least one "
            "non-zero weight"
        )
    return weights


def check_shapes(tensors: dict[str, Any], rank: int, first: dict[str, Any], where: Path) -> None:
    """Each LoRA pair has the config's rank (A is r × in, B is out × r) and the shape of the first
    adapter's pair, so the stacked matrices are one valid adapter of rank Σ rᵢ.

    Raises:
        BindkitError: naming the adapter, the tensor and both shapes.
    """
    for key in sorted(tensors):
        shape, want = tuple(tensors[key].shape), tuple(first[key].shape)
        if len(shape) != 2:
            raise BindkitError(f"{where}: {key} has shape {list(shape)}; a LoRA matrix is 2-D")
        is_a = ".lora_A." in key
        if not is_a and ".lora_B." not in key:
            continue  # soup_tensors refuses what is not a LoRA matrix
        if (shape[0] if is_a else shape[1]) != rank:
            raise BindkitError(
                f"{where}: {key} has shape {list(shape)}, but its adapter_config.json says r "
                f"{rank}; retrain or re-copy the adapter"
            )
        if (shape[1] if is_a else shape[0]) != (want[1] if is_a else want[0]):
            raise BindkitError(
                f"{where}: {key} has shape {list(shape)}, the first adapter's {list(want)}; a "
                "soup needs adapters of one base model"
            )


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
    *,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write the soup of peft LoRA ``adapters`` (same base model, same adapted modules) to
    ``out``: one adapter whose update is Σ wᵢ·ΔWᵢ, the mean by default.

    ``out`` is written whole or not at all (:mod:`bindkit.adapters.out`); an existing
    adapter there is replaced only with ``overwrite``. rsLoRA adapters (``use_rslora``, scale
    lora_alpha/√r) are handled: each input's scale is the one peft applies, and the soup's
    lora_alpha is set so that peft's scale of the soup is the first input's.

    Returns the record also written to ``OUT/soup.json`` (sources, weights, rank).

    Raises:
        BindkitError: fewer than two adapters; bad ``weights`` (:func:`check_weights`); ``out``
            an input, inside one, or an existing adapter without ``overwrite``; an input that
            is not a LoRA adapter, has a bad scale, NaN/inf tensors, tensors that disagree with
            its rank, or another model or modules than the first; a soup that overflows.
    """
    from safetensors.torch import save_file

    from bindkit.adapters.out import check_finite, check_out, staged

    paths, out = [Path(a) for a in adapters], Path(out)
    if len(paths) < 2:
        raise BindkitError("soup: give two or more adapter directories")
    weights = check_weights(
        [1.0 / len(paths)] * len(paths) if weights is None else weights, len(paths)
    )
    if any(out.resolve() == p.resolve() for p in paths):
        raise BindkitError(f"--out {out}: is an input adapter; write the soup to another directory")
    configs, parts = [], []
    for path in paths:
        config, tensors = read_lora_adapter(path, "a soup")
        scale = lora_scale(config, path)
        check_finite(tensors, path / ADAPTER_WEIGHTS)
        configs.append(config)
        parts.append((tensors, scale))
    first = configs[0]
    for index, (path, config, (tensors, _)) in enumerate(zip(paths, configs, parts, strict=True)):
        if index:
            for field in ("base_model_name_or_path", "target_modules"):
                if _comparable(config.get(field)) != _comparable(first.get(field)):
                    raise BindkitError(
                        f"{path}: {field} {config.get(field)!r} differs from {paths[0]}'s "
                        f"{first.get(field)!r}; a soup needs adapters of one model and modules"
                    )
            if set(tensors) != set(parts[0][0]):
                raise BindkitError(f"{path}: adapts other modules than {paths[0]}; retrain alike")
        check_shapes(tensors, int(config["r"]), parts[0][0], path / ADAPTER_WEIGHTS)
    check_out(out, paths, overwrite=overwrite)
    tensors = soup_tensors(parts, weights)
    check_finite_soup(tensors, weights)
    rank = sum(int(c["r"]) for c in configs)
    config = dict(first)
    config["r"] = rank
    config["lora_alpha"] = soup_alpha(parts[0][1], rank, bool(first.get("use_rslora")))
    record = {"sources": [str(p) for p in paths], "weights": weights, "rank": rank}
    with staged(out, overwrite=overwrite) as stage:
        (stage / "adapter_config.json").write_text(json.dumps(config, indent=2) + "\n")
        save_file(tensors, str(stage / ADAPTER_WEIGHTS), metadata={"format": "pt"})
        (stage / SOUP_RECORD).write_text(json.dumps(record, indent=2) + "\n")
    return record


def soup_alpha(scale: float, rank: int, rslora: bool) -> float:
    """The lora_alpha that makes peft's scale of a rank-``rank`` adapter equal ``scale``:
    s·r (peft: lora_alpha/r), or s·√r with rsLoRA (peft: lora_alpha/√r).

    Example:
        >>> soup_alpha(2.0, 4, False), soup_alpha(2.0, 4, True)
        (8.0, 4.0)
    """
    return scale * (math.sqrt(rank) if rslora else rank)


def check_finite_soup(tensors: dict[str, Any], weights: Sequence[float]) -> None:
    """Refuse a soup whose stacked B overflowed (finite inputs, large weights and scale ratios).

    Raises:
        BindkitError: naming the tensor and ``--weights``.
    """
    import torch

    for key in sorted(tensors):
        if not bool(torch.isfinite(tensors[key]).all()):
            raise BindkitError(
                f"--weights {list(weights)}: the soup's {key} overflows to inf; give smaller "
                "weights"
            )


def _comparable(value: Any) -> Any:
    return sorted(value) if isinstance(value, list) else value
