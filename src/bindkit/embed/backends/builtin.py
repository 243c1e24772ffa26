"""Models that ship inside bindkit: ``builtin:tiny-clip`` and ``builtin:tiny-vlm``.

tiny-clip is a few-MB image–text dual encoder trained by ``scripts/train_tiny_clip.py`` on
procedurally rendered shapes scenes (``bindkit saber render --backend procedural``) so that all
four SABER pairings run offline with no download. It is a fixture for the shapes vocabulary,
not a general model: see ``data/tiny_clip/README.md`` (its model card).

``+weights=DIR`` loads another checkpoint directory of the same format (``config.json`` and
``model.safetensors``), e.g. the output of the training script; ``+adapter=DIR`` loads a peft
LoRA adapter of the text tower written by ``bindkit train triplets --model builtin:tiny-clip``.

tiny-vlm is a few-MB Qwen3-VL (transformers' own architecture: vision tower, merger, language
model) trained by ``scripts/train_tiny_vlm.py`` on the same kind of scenes. Its folder is an
ordinary checkpoint (``config.json``, fp16 ``model.safetensors``, tokenizer with the chat
template, ``preprocessor_config.json``) plus :data:`EMBEDDER_FILE`, which names the backend
family and its options; ``builtin:tiny-vlm`` is :class:`~bindkit.embed.backends.mllm.
MLLMEmbedder` on that folder with those options, exactly as a user's
``qwen3-vl-embedding:/path/to/Qwen3-VL-Embedding-2B`` loads (prompts, resizing, positions,
pooling, ``+adapter=DIR``). See ``data/tiny_vlm/README.md`` (its model card).
"""

from __future__ import annotations

import difflib
import hashlib
import json
from collections.abc import Sequence
from importlib.resources import as_file, files
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.embed.backends._torch import TorchEmbedder, normalize
from bindkit.embed.protocol import Modality, Role
from bindkit.embed.weights import weights_identity
from bindkit.errors import BindkitError

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
#: built-in model name → its folder under ``bindkit/embed/backends/``
BUILTIN_MODELS = {"tiny-clip": "data/tiny_clip", "tiny-vlm": "data/tiny_vlm"}
#: in a multimodal-LLM built-in's folder: ``{"family": ..., "options": {...}}``, the backend
#: family and the :class:`~bindkit.embed.backends.mllm.MLLMEmbedder` options it loads with
EMBEDDER_FILE = "embedder.json"
#: the built-ins that are multimodal LLMs (folders with :data:`EMBEDDER_FILE`)
MLLM_BUILTINS = frozenset({"tiny-vlm"})
#: the options an ``embedder.json`` may set (what the model was trained with)
EMBEDDER_OPTIONS = frozenset({"min_pixels", "max_pixels", "max_length"})


def builtin_dir(name: str) -> Path:
    """The packaged checkpoint folder of a built-in model (the package is installed unzipped)."""
    if name not in BUILTIN_MODELS:
        close = difflib.get_close_matches(name, list(BUILTIN_MODELS), n=1)
        hint = f"; did you mean builtin:{close[0]}?" if close else ""
        raise BindkitError(
            f"unknown built-in model {name!r}{hint} (available: "
            f"{', '.join('builtin:' + n for n in BUILTIN_MODELS)})"
        )
    with as_file(files("bindkit.embed.backends").joinpath(BUILTIN_MODELS[name])) as path:
        return Path(path)


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def load_checkpoint(directory: Path) -> Any:
    """``config.json`` + ``model.safetensors`` in ``directory`` → an eval-mode float32
    :class:`~bindkit.embed.backends.tiny_clip.TinyClip`.

    Raises:
        BindkitError: a file is missing, unreadable, corrupt, or its tensors do not fit the
            configured architecture (one line naming the file).
    """
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from bindkit.embed.backends.tiny_clip import TinyClip, TinyClipConfig

    config_path, weights_path = directory / CONFIG_FILE, directory / WEIGHTS_FILE
    for path in (config_path, weights_path):
        if not path.is_file():
            raise BindkitError(
                f"{path}: missing; a tiny-clip checkpoint folder holds {CONFIG_FILE} and "
                f"{WEIGHTS_FILE} (train one with scripts/train_tiny_clip.py)"
            )
    try:
        config = TinyClipConfig.from_json(json.loads(config_path.read_text("utf-8")))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError, TypeError) as exc:
        raise BindkitError(f"{config_path}: not a tiny-clip config ({exc}); retrain it") from exc
    try:
        state = load_file(str(weights_path))
    except (OSError, SafetensorError, ValueError, RuntimeError) as exc:
        raise BindkitError(
            f"{weights_path}: unreadable safetensors file ({exc}); retrain or reinstall it"
        ) from exc
    model = TinyClip(config)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    extra = sorted(set(state) - set(expected))
    wrong = sorted(k for k in set(expected) & set(state) if state[k].shape != expected[k].shape)
    if missing or extra or wrong:
        name = (missing or extra or wrong)[0]
        what = "missing" if missing else "unexpected" if extra else "has the wrong shape"
        raise BindkitError(
            f"{weights_path}: tensor {name!r} {what} for the architecture in {CONFIG_FILE} "
            f"({len(missing)} missing, {len(extra)} unexpected, {len(wrong)} mis-shaped); "
            "the weights and config do not belong together"
        )
    model.load_state_dict({k: v.to(torch.float32) for k, v in state.items()})
    return model.eval()


def save_checkpoint(model: Any, directory: Path, *, half: bool = True) -> None:
    """Write ``config.json`` and ``model.safetensors`` (fp16 by default) atomically."""
    import torch
    from safetensors.torch import save

    from bindkit._io import atomic_write_bytes, atomic_write_text

    dtype = torch.float16 if half else torch.float32
    state = {k: v.detach().to("cpu", dtype).contiguous() for k, v in model.state_dict().items()}
    directory.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(directory / WEIGHTS_FILE, save(state, metadata={"format": "pt"}))
    config = json.dumps(model.config.to_json(), indent=1, sort_keys=True) + "\n"
    atomic_write_text(directory / CONFIG_FILE, config)


def open_builtin(
    name: str,
    *,
    spec: str,
    weights: str | None = None,
    adapter: str | None = None,
    device: str | None = None,
    dim: int | None = None,
    dtype: str | None = None,
    batch_size: int | None = None,
    cache: Any = None,
    progress: bool | None = None,
) -> TorchEmbedder:
    """The ``builtin:NAME`` embedder: :class:`BuiltinEmbedder` for tiny-clip, the family's
    :class:`~bindkit.embed.backends.mllm.MLLMEmbedder` for a folder with :data:`EMBEDDER_FILE`.

    Raises:
        BindkitError: an unknown name (with the closest one), a ``weights`` folder that is not
            there, an option the model does not take, or a malformed ``embedder.json``.
    """
    common = {"spec": spec, "batch_size": batch_size, "cache": cache, "progress": progress}
    directory = builtin_dir(name)
    if weights is not None:
        directory = Path(str(weights)).expanduser()
        if not directory.is_dir():
            raise BindkitError(
                f"builtin:{name}+weights={weights}: not a directory; give the folder that "
                f"holds {CONFIG_FILE} and {WEIGHTS_FILE}"
            )
    if name not in MLLM_BUILTINS:
        for option, value in (("dim", dim), ("dtype", dtype)):
            if value is not None:
                raise BindkitError(f"builtin:{name}+{option}={value}: only builtin:tiny-vlm")
        return BuiltinEmbedder(name, weights=weights, adapter=adapter, device=device, **common)
    from bindkit.embed.backends.mllm import MLLMEmbedder

    family, options = read_embedder_file(directory)
    check_weights_files(directory)
    return MLLMEmbedder(
        str(directory),
        family=family,  # type: ignore[arg-type]
        adapter=adapter,
        device=device,
        dim=dim,
        dtype=dtype,
        **options,
        **common,
    )


def check_weights_files(directory: Path) -> None:
    """Every ``*.safetensors`` of a multimodal-LLM built-in's folder opens (its header and
    size agree): transformers would end a truncated file in a traceback.

    Raises:
        BindkitError: no weights file, or one that is truncated or not safetensors, named.
    """
    from safetensors import SafetensorError, safe_open

    files = sorted(directory.glob("*.safetensors"))
    if not files:
        raise BindkitError(
            f"{directory}: no {WEIGHTS_FILE}; give the folder scripts/train_tiny_vlm.py wrote"
        )
    for path in files:
        try:
            with safe_open(str(path), framework="pt"):
                pass
        except (OSError, SafetensorError) as exc:
            raise BindkitError(
                f"{path}: unreadable safetensors file ({exc}); retrain or reinstall it"
            ) from exc


def read_embedder_file(directory: Path) -> tuple[str, dict[str, Any]]:
    """The family and options of a multimodal-LLM built-in's folder (:data:`EMBEDDER_FILE`).

    Raises:
        BindkitError: the file is missing or malformed, or names an unknown family or option.
    """
    from bindkit.embed.backends.mllm import FAMILY_DEFAULTS

    path = directory / EMBEDDER_FILE
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError as exc:
        raise BindkitError(
            f"{path}: missing; a tiny-vlm folder holds {EMBEDDER_FILE} (train one with "
            "scripts/train_tiny_vlm.py)"
        ) from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BindkitError(f"{path}: unreadable ({exc}); retrain or reinstall it") from exc
    family = data.get("family") if isinstance(data, dict) else None
    options = data.get("options", {}) if isinstance(data, dict) else None
    if family not in FAMILY_DEFAULTS or not isinstance(options, dict):
        raise BindkitError(
            f'{path}: needs {{"family": one of {", ".join(FAMILY_DEFAULTS)}, "options": '
            "{...}}; retrain or reinstall it"
        )
    unknown = sorted(set(options) - EMBEDDER_OPTIONS)
    if unknown:
        raise BindkitError(
            f"{path}: unknown option {unknown[0]!r} (valid: {', '.join(sorted(EMBEDDER_OPTIONS))})"
        )
    return str(family), dict(options)


class BuiltinEmbedder(TorchEmbedder):
    """A model shipped with bindkit (roles and instructions are ignored: no prompts)."""

    modalities = frozenset({"text", "image"})

    def __init__(
        self,
        name: str,
        *,
        weights: str | None = None,
        adapter: str | None = None,
        device: str | None = None,
        **kwargs: Any,
    ) -> None:
        directory = builtin_dir(name)
        if weights is not None:
            directory = Path(str(weights)).expanduser()
            if not directory.is_dir():
                raise BindkitError(
                    f"builtin:{name}+weights={weights}: not a directory; give the folder that "
                    f"holds {CONFIG_FILE} and {WEIGHTS_FILE}"
                )
        super().__init__(**kwargs)
        from bindkit.embed.backends.tiny_clip import Tokenizer

        self.name = name
        self.directory = directory
        self.device = device or "cpu"
        self.model = load_checkpoint(directory).to(self.device)
        self.config = self.model.config
        self.tokenizer = Tokenizer(self.config)
        self.adapter = str(adapter) if adapter else None
        if self.adapter:
            from bindkit.adapters.lora import attach_adapter

            self.model = attach_adapter(self.model, self.adapter).eval()

    def _describe(self) -> dict[str, Any]:
        # the adapter key only when there is one: the base model's fingerprint (and its cached
        # vectors) stay what they were before adapters existed
        adapter = {"adapter": weights_identity(self.adapter)} if self.adapter else {}
        return {
            "backend": "builtin",
            **adapter,
            "model": self.name,
            "weights": sha256_file(self.directory / WEIGHTS_FILE),
            "config": sha256_file(self.directory / CONFIG_FILE),
            "images": {
                "size": self.config.image_size,
                "resize": "squash/box",
                "mean": self.config.mean,
                "std": self.config.std,
                "exif": self.image_policy.exif,
                "alpha_on_white": self.image_policy.alpha_on_white,
            },
        }

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        return modality

    def text_length(self, text: str) -> int:
        return len(self.tokenizer.ids(text))

    def collate(
        self,
        inputs: Sequence[Any],
        *,
        modality: Modality,
        role: Role,
        instruction: str | None,
    ) -> dict[str, Any]:
        from bindkit.embed.backends.tiny_clip import image_array, pixels

        if modality == "text":
            return {"text": self.tokenizer(list(inputs)).to(self.device)}
        arrays = np.stack([image_array(im, self.config.image_size) for im in inputs])
        return {"image": pixels(arrays, self.config).to(self.device)}

    def forward(self, batch: dict[str, Any]) -> Any:
        if "text" in batch:
            return normalize(self.model.encode_text(batch["text"]))
        return normalize(self.model.encode_image(batch["image"]))
