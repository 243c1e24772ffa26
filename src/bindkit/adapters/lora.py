"""Where LoRA goes: the attention projections of every layer of the language part.

Module names follow REFERENCE.md: Qwen-VL text layers are ``…layers.N.self_attn.{q,k,v,o}_proj``
(never under ``visual``), BERT-style encoders ``…layer.N.attention.self.{query,key,value}`` and
``…layer.N.attention.output.dense``, ``builtin:tiny-clip``'s text tower ``text.layers.N.{qkv,out}``
(its image tower is ``visual``). peft matches a string target with ``re.fullmatch``. A vision
tower built of the same names under another name (``vision_tower``, ``vision_model``: LLaVA-,
PaliGemma-, Idefics-style models) is left out too: such a model's adapter lists its text modules
by name instead of the pattern.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

TARGET_MODULES = (
    r"^(?!.*visual).*\.layers\.\d+\.self_attn\.(q|k|v|o)_proj"
    r"|^(?!.*visual).*\.layer\.\d+\.attention\.(self\.(query|key|value)|output\.dense)"
    r"|^text\.layers\.\d+\.(qkv|out)"
)
# The anchored layer index: "visual.blocks.3" or "layer_norm.3" never count as text layers.
_LAYER = re.compile(r"(?:^|\.)(?:layers|layer)\.(\d+)\.")


def layer_index(name: str) -> int | None:
    """The text layer a parameter or module name belongs to, or None (vision, embeddings, …).

    Example:
        >>> layer_index("language_model.layers.12.self_attn.q_proj.lora_B.weight")
        12
        >>> layer_index("visual.blocks.3.attn.qkv") is None
        True
    """
    if "visual" in name:
        return None
    match = _LAYER.search(name)
    return int(match.group(1)) if match else None


def _pattern_names(module: Any) -> list[str]:
    """Names of the linear modules of ``module`` that :data:`TARGET_MODULES` matches."""
    import torch

    pattern = re.compile(TARGET_MODULES)
    return [
        name
        for name, sub in module.named_modules()
        if isinstance(sub, torch.nn.Linear) and pattern.fullmatch(name)
    ]


def target_names(module: Any) -> list[str]:
    """Names of the linear modules of ``module`` that LoRA will adapt: the pattern's, less any
    in a vision tower (``vision_tower``, ``vision_model``, …) that the pattern does not name."""
    return [name for name in _pattern_names(module) if "vision" not in name]


def transformers_model(module: Any) -> Any:
    """The ``transformers.PreTrainedModel`` inside an embedder's module (st: the first module's
    ``auto_model``; mllm: the module itself), where peft adapters are added and saved; a plain
    ``nn.Module`` that declares ``supports_lora = True`` (builtin:tiny-clip) is its own host."""
    if getattr(module, "supports_lora", False) is True:  # before importing transformers
        return module
    from transformers import PreTrainedModel

    if isinstance(module, PreTrainedModel):
        return module
    first = next(iter(module), None) if hasattr(module, "__iter__") else None
    inner = getattr(first, "auto_model", None)
    if isinstance(inner, PreTrainedModel):
        return inner
    raise BindkitError(
        f"{type(module).__name__}: no transformers model inside to put LoRA on; train an st: or "
        "mllm: model, or builtin:tiny-clip"
    )


def add_lora(
    module: Any, *, rank: int = 4, alpha: float = 4.0, dropout: float = 0.0, seed: int = 0
) -> Any:
    """Freeze everything, then add LoRA (peft) on the text attention projections, in place.

    Returns the transformers model carrying the adapter (``save_pretrained`` writes peft format).

    Raises:
        BindkitError: the model has no attention projections with the known names.
    """
    import torch
    from peft import LoraConfig, inject_adapter_in_model

    model = transformers_model(module)
    targets = target_names(model)
    if not targets:
        raise BindkitError(
            f"{type(model).__name__}: no attention modules for LoRA (looked for "
            "layers.N.self_attn.{q,k,v,o}_proj, layer.N.attention.* or text.layers.N.{qkv,out}); "
            "this architecture is not supported for training"
        )
    for parameter in module.parameters():
        parameter.requires_grad_(False)
    torch.manual_seed(seed)  # LoRA A is random: the same seed gives the same start
    # the pattern where it names exactly the targets (every shipped model: the adapter_config.json
    # of earlier runs), else the targets by name, so loading the adapter adapts them alone
    pattern_fits = len(targets) == len(_pattern_names(model))
    config = LoraConfig(
        r=rank,
        lora_alpha=alpha,
        lora_dropout=dropout,
        target_modules=TARGET_MODULES if pattern_fits else targets,
        bias="none",
    )
    # peft directly (transformers' add_adapter demands a newer peft than some installs have)
    inject_adapter_in_model(config, model)
    for name, parameter in model.named_parameters():
        # on a bf16/fp16 base, peft makes LoRA bf16 too, where AdamW's small steps round away
        # (bf16 keeps 8 bits: a 1e-5 step on a 0.1 weight is lost); LoRA trains in fp32 and
        # peft casts each layer's input to it and the output back
        if ".lora_" in name and parameter.dtype in (torch.bfloat16, torch.float16):
            parameter.data = parameter.data.float()
    model._bindkit_lora_config = config
    return model


def save_adapter(model: Any, out: Path) -> None:
    """Write the LoRA weights of ``model`` in peft format (``PeftModel.from_pretrained`` loads it).

    peft stores keys under ``base_model.model.`` and without the adapter name.
    """
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    config = model._bindkit_lora_config
    config.base_model_name_or_path = getattr(model.config, "_name_or_path", None) or None
    state = get_peft_model_state_dict(model)
    tensors = {f"base_model.model.{k}": v.detach().cpu().contiguous() for k, v in state.items()}
    out.mkdir(parents=True, exist_ok=True)
    config.save_pretrained(str(out))
    tmp = out / ".adapter_model.safetensors.tmp"
    save_file(tensors, str(tmp), metadata={"format": "pt"})
    tmp.replace(out / "adapter_model.safetensors")


ADAPTER_WEIGHTS = "adapter_model.safetensors"


def read_lora_adapter(adapter: Path, purpose: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The peft config and tensors of a LoRA adapter directory, or a one-line error naming it
    (``purpose``: what needs it, e.g. "LiNeS")."""
    import json

    from safetensors import SafetensorError
    from safetensors.torch import load_file

    weights = adapter / ADAPTER_WEIGHTS
    if not (adapter / "adapter_config.json").is_file() or not weights.is_file():
        raise BindkitError(
            f"{adapter}: not a peft adapter directory (needs adapter_config.json and "
            f"{ADAPTER_WEIGHTS})"
        )
    try:
        config = json.loads((adapter / "adapter_config.json").read_text(encoding="utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise BindkitError(
            f"{adapter / 'adapter_config.json'}: not valid JSON; retrain or re-copy the adapter"
        ) from None
    if not isinstance(config, dict) or config.get("peft_type") != "LORA":
        raise BindkitError(
            f"{adapter}: {purpose} takes LoRA adapters; this one is "
            f"{config.get('peft_type') if isinstance(config, dict) else 'not a peft config'}"
        )
    try:
        tensors = load_file(str(weights))
    except (SafetensorError, OSError) as exc:
        raise BindkitError(
            f"{weights}: not a readable safetensors file ({exc}); retrain or re-copy the adapter"
        ) from None
    return config, tensors


def lora_layers(model: Any) -> list[tuple[str, Any]]:
    """(name, peft LoRA layer) pairs of a model carrying an adapter."""
    from peft.tuners.lora import LoraLayer

    return [(n, m) for n, m in model.named_modules() if isinstance(m, LoraLayer)]


def attach_adapter(model: Any, adapter: str | Path) -> Any:
    """Load a peft LoRA adapter onto ``model`` after checking it was trained on this architecture.

    Returns the ``PeftModel``. Checks every adapted module exists in ``model`` with the shapes the
    adapter's A and B expect (peft would otherwise warn, or fail deep inside, with a long message).

    Raises:
        BindkitError: not an adapter directory, or an adapter for another base model.
    """
    from peft import PeftModel
    from safetensors import safe_open

    adapter = Path(adapter)
    weights = adapter / "adapter_model.safetensors"
    if not (adapter / "adapter_config.json").is_file() or not weights.is_file():
        raise BindkitError(
            f"adapter {adapter}: not a peft adapter directory (needs adapter_config.json and "
            "adapter_model.safetensors)"
        )
    modules = dict(model.named_modules())
    with safe_open(str(weights), framework="pt") as handle:
        for key in handle.keys():  # noqa: SIM118 - safe_open is no dict
            name, _, part = key.removeprefix("base_model.model.").partition(".lora_")
            target = modules.get(name)
            shape = handle.get_slice(key).get_shape()
            in_features = getattr(target, "in_features", None)
            out_features = getattr(target, "out_features", None)
            fits = target is not None and (
                (part.startswith("A") and shape[1] == in_features)
                or (part.startswith("B") and shape[0] == out_features)
            )
            if not fits:
                raise BindkitError(
                    f"adapter {adapter}: made for another base model ({name} with "
                    f"{'A' if part.startswith('A') else 'B'} of shape {list(shape)} does not fit "
                    f"{type(model).__name__}); use the model it was trained on"
                )
    with warnings.catch_warnings():
        # peft reads model.is_gradient_checkpointing, which transformers >= 5.25 deprecates:
        # a FutureWarning per attached model that the user can do nothing about
        warnings.filterwarnings(
            "ignore", message="`is_gradient_checkpointing` is deprecated", category=FutureWarning
        )
        return PeftModel.from_pretrained(model, str(adapter))
