"""Multimodal-LLM embedders through transformers: Qwen3-VL-Embedding, GME, VLM2Vec, and any
Qwen-VL-style chat model turned into an embedder by a prompt layout (``mllm:``).

The embedding is the last layer's hidden state at the last non-padding position (found from the
attention mask, so left and right padding give the same vector), L2-normalised; ``dim`` truncates
it first (Matryoshka) and the pipeline re-normalises.

Each reference family runs with its reference code's image pipeline and positions
(:data:`FAMILY_DEFAULTS`; see docs/ARCHITECTURE.md and the README's Embedders section):

- ``qwen3-vl-embedding``: one ``smart_resize`` (factor 32, 4,096..1,843,200 pixels) as
  qwen-vl-utils ``fetch_image`` does, then the processor without its own resize; M-RoPE.
- ``gme``: ``fetch_image``'s pre-resize (3,136..12,845,056 pixels) and then the processor's resize
  to 200,704..1,003,520 pixels (256..1,280 tokens); 1-D positions, since the reference runs the
  text-only decoder of transformers <= 4.51; ``max_length`` 1800.
- ``vlm2vec``: the processor's resize with VLM2Vec's bounds (3,136..1,003,520), optionally after
  the official eval's squash to ``square`` x ``square``; an image with a side under 28 pixels is
  first resized to 56 x 56, as VLM2Vec's Qwen2-VL input function does; 1-D positions (a bare
  ``<|image_pad|>`` has no ``<|vision_start|>`` for M-RoPE to find).
- ``mllm``: the checkpoint's own processor bounds; M-RoPE.

The first three open images without EXIF transpose, as their references do. Transparency as
each reference: qwen3-vl-embedding composites RGBA on white (qwen-vl-utils ``to_rgb``); gme drops
alpha (its own copy of ``fetch_image`` calls ``convert("RGB")``); vlm2vec hands the opened image
to the Qwen2-VL processor, whose ``convert_to_rgb`` composites RGBA on white.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Sequence
from typing import Any

from bindkit.embed import prompts
from bindkit.embed.backends._torch import normalize
from bindkit.embed.backends.mllm.families import FAMILY_DEFAULTS, Family, Positions
from bindkit.embed.backends.mllm.prompts import IMAGE_PAD, VIDEO_PAD, stored_chat_template
from bindkit.embed.backends.mllm.video import VIDEO_MODEL_TYPES, VideoMLLM
from bindkit.embed.images import ImagePolicy
from bindkit.embed.protocol import Modality, Role
from bindkit.embed.shapes import build_random_model, random_weights
from bindkit.embed.weights import require_checkpoint, weights_identity
from bindkit.errors import BindkitError


def last_token_pool(hidden: Any, attention_mask: Any) -> Any:
    """Hidden state at each row's last position where ``attention_mask == 1``."""
    import torch

    positions = torch.arange(attention_mask.shape[1], device=hidden.device)
    last = positions.expand_as(attention_mask).masked_fill(attention_mask == 0, -1).max(1).values
    if bool((last < 0).any()):
        raise ValueError("cannot pool an empty sequence")
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


class MLLMEmbedder(VideoMLLM):
    """Qwen-VL-family embedder.

    Args:
        name: Local directory or hub id of the checkpoint (tokenizer, a chat template in the
            tokenizer or in ``chat_template.jinja``/``chat_template.json``,
            ``preprocessor_config.json`` for images).
        family: Prompt format: ``qwen3-vl-embedding``, ``gme``, ``vlm2vec`` or ``mllm``.
        layout: For ``mllm``: ``none``, ``user``, ``system`` or ``hierarchical`` (default), with
            ``system``/``user`` side overrides (none|q|d|qd), ``system_prompt`` and
            ``user_prompt`` (the query-side user instruction when the caller gives none).
        dim: Keep the first ``dim`` dimensions (Matryoshka truncation), then re-normalise.
        padding_side: ``right`` (the reference codes') or ``left``; pooling handles both.
        min_pixels, max_pixels: Image resolution bounds (of the last resize stage).
        max_length: Token limit for text prompts (default: the family's, 1800 for gme).
        positions: ``1d`` or ``mrope`` (default: the family's; see
            :data:`~.families.FAMILY_DEFAULTS`).
        square: vlm2vec: squash every image to ``square`` x ``square`` first (the official MMEB
            eval uses 1344).
        trailing_newline: vlm2vec: end queries and image candidates with the MMEB ``\\n``
            (default True; the pooled token is then that newline).
        exif: Apply EXIF orientation when opening image files (default: the family's).
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
        user_prompt: str | None = None,
        dim: int | None = None,
        padding_side: str = "right",
        min_pixels: int | None = None,
        max_pixels: int | None = None,
        max_length: int | None = None,
        positions: str | None = None,
        square: int | None = None,
        trailing_newline: bool = True,
        exif: bool | None = None,
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
        defaults = self.defaults = FAMILY_DEFAULTS[family]
        if positions not in (None, "1d", "mrope"):
            raise BindkitError(f"positions={positions!r}: use 1d or mrope")
        for option, value in (("min_pixels", min_pixels), ("max_pixels", max_pixels)):
            _check_int(option, value, 1, 1 << 30)
        _check_int("max_length", max_length, 1, 1 << 20)
        _check_int("square", square, 28, 16384)
        if square and not defaults.square:
            raise BindkitError(f"square={square}: only vlm2vec has a square pre-resize")
        self.name, self.family = name, family
        self.layout = (
            prompts.make_layout(
                layout,
                system=system,
                user=user,
                system_prompt=system_prompt,
                user_prompt=user_prompt,
            )
            if defaults.prompt == "layout"
            else None
        )
        _check_int("dim", dim, 1, 1 << 16)
        self.dim = int(dim) if dim else None
        self.padding_side = padding_side
        self.max_length = int(max_length or defaults.max_length)
        self.positions: Positions = "1d" if (positions or defaults.positions) == "1d" else "mrope"
        self.square = int(square) if square else None
        self.trailing_newline = bool(trailing_newline)
        self.image_policy = ImagePolicy(
            exif=defaults.policy.exif if exif is None else bool(exif),
            alpha_on_white=defaults.policy.alpha_on_white,
        )
        self.adapter = adapter
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        dtype = dtype or ("bfloat16" if self.device.startswith("cuda") else "float32")
        if not isinstance(getattr(torch, str(dtype), None), torch.dtype):
            raise BindkitError(f"dtype={dtype!r}: use float32, bfloat16 or float16")
        self.dtype = dtype
        require_checkpoint(name, family)
        verbosity = transformers.logging.get_verbosity()
        transformers.logging.set_verbosity_error()  # the unused lm_head is expected, not news
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(name)
            if random_weights(name) is not None:  # a published shape, random weights
                model = build_random_model(name, getattr(torch, dtype))
            else:
                model = transformers.AutoModel.from_pretrained(name, dtype=getattr(torch, dtype))
        except OSError as exc:
            raise BindkitError(
                f"{family}:{name}: cannot load ({exc}); give a local checkpoint directory or a "
                "cached hub id"
            ) from exc
        finally:
            transformers.logging.set_verbosity(verbosity)
        if getattr(self.tokenizer, "chat_template", None) is None:
            self.tokenizer.chat_template = stored_chat_template(name)
        if defaults.needs_chat_template and not self.tokenizer.chat_template:
            raise BindkitError(
                f"{family}:{name}: the checkpoint has no chat template (tokenizer_config.json, "
                "chat_template.jinja or chat_template.json); add one"
            )
        if adapter:
            from bindkit.adapters.lora import attach_adapter

            model = attach_adapter(model, adapter)
        self.model = model.to(self.device).eval()
        self.config = model.config
        self._setup_images(min_pixels, max_pixels)
        self.modalities = frozenset({"text", "image"} if self.image_processor else {"text"})
        self.image_token_id = self.tokenizer.convert_tokens_to_ids(IMAGE_PAD)
        self.video_token_id = self.tokenizer.convert_tokens_to_ids(VIDEO_PAD)
        self.model_type = str(getattr(self.config, "model_type", ""))
        self.video_settings = defaults.video
        if (
            self.video_settings is not None
            and self.image_processor is not None
            and self.model_type in VIDEO_MODEL_TYPES
        ):
            self.modalities = self.modalities | {"video"}
        self.frame_cache = self.cache is not None
        self._norm: tuple[list[float], list[float]] | None = None
        base = self.model.get_base_model() if adapter else self.model
        self._takes_mm_types = "mm_token_type_ids" in inspect.signature(base.forward).parameters
        self._injected: str | None = None

    def suggested_batch_size(self) -> int:
        from bindkit.embed.backends._torch import default_batch_size

        return default_batch_size(self.device, self.model)

    # -- identity ---------------------------------------------------------------------------
    def _describe(self) -> dict[str, Any]:
        template = getattr(self.tokenizer, "chat_template", None) or ""
        processor = self.image_processor
        size = getattr(processor, "size", None)
        return {
            "backend": self.family,
            **weights_identity(self.name),
            "adapter": weights_identity(self.adapter) if self.adapter else None,
            "pooling": "last-token",
            "dim": self.dim,
            "positions": self.positions,
            "layout": None
            if self.layout is None
            else {
                "system": sorted(self.layout.system),
                "user": sorted(self.layout.user),
                "system_prompt": self.layout.system_prompt,
                "user_prompt": self.layout.user_prompt,
                "injected_system_removed": True,
            },
            "trailing_newline": self.trailing_newline if self.defaults.trailing_newline else None,
            "chat_template": hashlib.sha256(str(template).encode()).hexdigest()[:16],
            "max_length": self.max_length,
            "images": None
            if processor is None
            else {
                "shortest_edge": getattr(size, "shortest_edge", None),
                "longest_edge": getattr(size, "longest_edge", None),
                "processor_resizes": self.processor_resizes,
                "stages": [[s.factor, s.min_pixels, s.max_pixels] for s in self.stages],
                "square": self.square,
                "mean": [float(v) for v in getattr(processor, "image_mean", ()) or ()],
                "std": [float(v) for v in getattr(processor, "image_std", ()) or ()],
                "resample": str(getattr(processor, "resample", None)),
                "patch_size": getattr(processor, "patch_size", None),
                "merge_size": getattr(processor, "merge_size", None),
                "temporal_patch_size": getattr(processor, "temporal_patch_size", None),
                "exif": self.image_policy.exif,
                "alpha_on_white": self.image_policy.alpha_on_white,
            },
            "dtype": self.dtype,
        }

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
        if modality == "video":
            rendered, extra = self._collate_videos(inputs, role, instruction)
        elif modality == "image":
            rendered, extra = self._collate_images(inputs, role, instruction)
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
        mask = batch["attention_mask"]
        if self.positions == "1d":
            # the references' text-only decoder: position = index among the real tokens
            extra["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        elif "pixel_values" in extra and self._takes_mm_types:
            extra["mm_token_type_ids"] = (batch["input_ids"] == self.image_token_id).long()
        elif "pixel_values_videos" in extra and self._takes_mm_types:
            extra["mm_token_type_ids"] = 2 * (batch["input_ids"] == self.video_token_id).long()
        if self.positions == "1d":
            extra.pop("second_per_grid_ts", None)
        return {"input_ids": batch["input_ids"], "attention_mask": mask, **extra}

    def forward(self, batch: dict[str, Any]) -> Any:
        out = self.model(**batch)
        pooled = last_token_pool(out.last_hidden_state, batch["attention_mask"])
        return normalize(pooled[:, : self.dim] if self.dim else pooled)


def _check_int(option: str, value: Any, low: int, high: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BindkitError(f"{option}={value!r}: use a whole number from {low} to {high:,}")
