"""Multimodal-LLM embedders through transformers: Qwen3-VL-Embedding, GME, VLM2Vec, and any
Qwen-VL-style chat model turned into an embedder by a prompt layout (``mllm:``).

The embedding is the last layer's hidden state at the last non-padding position (found from the
attention mask, so left and right padding give the same vector), L2-normalised; ``dim`` truncates
it first (Matryoshka) and the pipeline re-normalises.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from bindkit.embed import prompts
from bindkit.embed.backends._torch import TorchEmbedder, normalize
from bindkit.embed.protocol import Modality, Role
from bindkit.embed.weights import weights_identity
from bindkit.errors import BindkitError

Family = Literal["qwen3-vl-embedding", "gme", "vlm2vec", "mllm"]
IMAGE_PAD = "<|image_pad|>"
_SENTINEL = "\x00INPUT\x00"


def last_token_pool(hidden: Any, attention_mask: Any) -> Any:
    """Hidden state at each row's last position where ``attention_mask == 1``."""
    import torch

    positions = torch.arange(attention_mask.shape[1], device=hidden.device)
    last = positions.expand_as(attention_mask).masked_fill(attention_mask == 0, -1).max(1).values
    if bool((last < 0).any()):
        raise ValueError("cannot pool an empty sequence")
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


class MLLMEmbedder(TorchEmbedder):
    """Qwen-VL-family embedder.

    Args:
        name: Local directory or hub id of the checkpoint (tokenizer with a chat template,
            ``preprocessor_config.json`` for images).
        family: Prompt format: ``qwen3-vl-embedding``, ``gme``, ``vlm2vec`` or ``mllm``.
        layout: For ``mllm``: ``none``, ``user``, ``system`` or ``hierarchical`` (default), with
            ``system``/``user`` side overrides (none|q|d|qd) and ``system_prompt``.
        dim: Keep the first ``dim`` dimensions (Matryoshka truncation), then re-normalise.
        padding_side: ``right`` (the reference codes') or ``left``; pooling handles both.
        min_pixels, max_pixels: Image resolution bounds for the image processor.
        adapter: A peft adapter directory applied on top of the weights.
        device, dtype: Where and in which precision to run (default: cuda + bfloat16 when
            available, else cpu + float32).
    """

    def __init__(
        self,
        name: str,
        *,
        family: Family = "mllm",
        layout: str = "hierarchical",
        system: str | None = None,
        user: str | None = None,
        system_prompt: str | None = None,
        dim: int | None = None,
        padding_side: str = "right",
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        max_length: int = 8192,
        adapter: str | None = None,
        device: str | None = None,
        dtype: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise BindkitError(
                f"{family}: models need torch and transformers; pip install 'bindkit[mllm]'"
            ) from exc
        if padding_side not in ("left", "right"):
            raise BindkitError(f"padding_side={padding_side!r}: use left or right")
        self.name, self.family = name, family
        self.layout = (
            prompts.make_layout(layout, system=system, user=user, system_prompt=system_prompt)
            if family == "mllm"
            else None
        )
        self.dim = int(dim) if dim else None
        self.padding_side = padding_side
        self.max_length = int(max_length)
        self.adapter = adapter
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = dtype or ("bfloat16" if self.device.startswith("cuda") else "float32")
        self.dtype = dtype
        verbosity = transformers.logging.get_verbosity()
        transformers.logging.set_verbosity_error()  # the unused lm_head is expected, not news
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(name)
            model = transformers.AutoModel.from_pretrained(name, dtype=getattr(torch, dtype))
        except OSError as exc:
            raise BindkitError(
                f"{family}:{name}: cannot load ({exc}); give a local checkpoint directory or a "
                "cached hub id"
            ) from exc
        finally:
            transformers.logging.set_verbosity(verbosity)
        if adapter:
            from bindkit.train.lora import attach_adapter

            model = attach_adapter(model, adapter)
        self.model = model.to(self.device).eval()
        self.config = model.config
        self.image_processor = self._image_processor(name, min_pixels, max_pixels)
        self.modalities = frozenset({"text", "image"} if self.image_processor else {"text"})
        self.image_token_id = self.tokenizer.convert_tokens_to_ids(IMAGE_PAD)
        base = self.model.get_base_model() if adapter else self.model
        self._takes_mm_types = "mm_token_type_ids" in inspect.signature(base.forward).parameters

    def _image_processor(self, name: str, min_pixels: int | None, max_pixels: int | None) -> Any:
        from transformers import Qwen2VLImageProcessorPil

        options = {k: v for k, v in (("min_pixels", min_pixels), ("max_pixels", max_pixels)) if v}
        if (Path(name) / "preprocessor_config.json").is_file() or not Path(name).exists():
            try:
                return Qwen2VLImageProcessorPil.from_pretrained(name, **options)
            except OSError:
                pass
        vision = getattr(self.config, "vision_config", None)
        if vision is None:
            return None
        return Qwen2VLImageProcessorPil(
            patch_size=vision.patch_size,
            merge_size=vision.spatial_merge_size,
            temporal_patch_size=vision.temporal_patch_size,
            **options,
        )

    # -- identity ---------------------------------------------------------------------------
    def describe(self) -> dict[str, Any]:
        template = getattr(self.tokenizer, "chat_template", None) or ""
        processor = self.image_processor
        return {
            "backend": self.family,
            **weights_identity(self.name),
            "adapter": weights_identity(self.adapter) if self.adapter else None,
            "pooling": "last-token",
            "dim": self.dim,
            "layout": None
            if self.layout is None
            else {
                "system": sorted(self.layout.system),
                "user": sorted(self.layout.user),
                "system_prompt": self.layout.system_prompt,
            },
            "chat_template": hashlib.sha256(str(template).encode()).hexdigest()[:16],
            "max_length": self.max_length,
            "images": None
            if processor is None
            else {
                "min_pixels": getattr(processor, "min_pixels", None),
                "max_pixels": getattr(processor, "max_pixels", None),
                "patch_size": getattr(processor, "patch_size", None),
                "merge_size": getattr(processor, "merge_size", None),
            },
            "dtype": self.dtype,
        }

    # -- prompts ----------------------------------------------------------------------------
    def render(self, text: str | None, has_image: bool, role: Role, instruction: str | None) -> str:
        """The full prompt string for one input, with one ``<|image_pad|>`` per image."""
        if self.family == "gme":
            return prompts.gme_prompt(text, has_image, role, instruction)
        if self.family == "vlm2vec":
            return prompts.vlm2vec_prompt(text, has_image, role, instruction)
        if self.family == "qwen3-vl-embedding":
            messages = prompts.qwen3_vl_embedding_messages(text, has_image, instruction)
        else:
            assert self.layout is not None
            messages = self.layout.messages(text, has_image, role, instruction)
        rendered = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True
        )
        return str(rendered)

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        return self.render(
            _SENTINEL if modality == "text" else None, modality == "image", role, instruction
        )

    # -- encoding ---------------------------------------------------------------------------
    @property
    def module(self) -> Any:
        return self.model

    def collate(
        self,
        inputs: Sequence[Any],
        *,
        modality: Modality,
        role: Role,
        instruction: str | None,
    ) -> dict[str, Any]:
        """Render each input's prompt, expand the image tokens and tokenise (one batch)."""
        extra: dict[str, Any] = {}
        if modality == "image":
            if self.image_processor is None:
                raise BindkitError(f"{self.spec}: this checkpoint has no vision tower")
            rendered = [self.render(None, True, role, instruction) for _ in inputs]
            pixels = self.image_processor(images=list(inputs), return_tensors="pt")
            grids = pixels["image_grid_thw"]
            merge = int(getattr(self.image_processor, "merge_size", 1)) ** 2
            rendered = [
                p.replace(IMAGE_PAD, IMAGE_PAD * (int(g.prod()) // merge))
                for p, g in zip(rendered, grids, strict=True)
            ]
            extra = {
                "pixel_values": pixels["pixel_values"].to(self.device, self.model.dtype),
                "image_grid_thw": grids.to(self.device),
            }
        else:
            rendered = [self.render(t, False, role, instruction) for t in inputs]
        # never truncate prompts with image tokens: a cut would break the image alignment
        limits = {} if extra else {"truncation": True, "max_length": self.max_length}
        batch = self.tokenizer(
            rendered,
            return_tensors="pt",
            padding=True,
            padding_side=self.padding_side,
            add_special_tokens=False,
            **limits,
        ).to(self.device)
        if extra and self._takes_mm_types:
            extra["mm_token_type_ids"] = (batch["input_ids"] == self.image_token_id).long()
        return {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"], **extra}

    def forward(self, batch: dict[str, Any]) -> Any:
        out = self.model(**batch)
        pooled = last_token_pool(out.last_hidden_state, batch["attention_mask"])
        return normalize(pooled[:, : self.dim] if self.dim else pooled)
