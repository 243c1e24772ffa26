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

import dataclasses
import hashlib
import inspect
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from bindkit._io import canonical_json
from bindkit.embed import prompts
from bindkit.embed.backends._torch import TorchEmbedder, normalize
from bindkit.embed.images import ImagePolicy, ResizeStage, smart_resize
from bindkit.embed.protocol import Modality, Role
from bindkit.embed.video import (
    PreparedVideo,
    VideoRef,
    VideoSettings,
    cached_prepare,
    file_indices,
    folder_indices,
    frame_bounds,
    list_frames,
    pad_even,
    probe_file,
    qwen3_timestamps,
    video_digest,
    video_patches,
)
from bindkit.embed.weights import require_checkpoint, weights_identity
from bindkit.errors import BindkitError

Family = Literal["qwen3-vl-embedding", "gme", "vlm2vec", "mllm"]
Positions = Literal["1d", "mrope"]
IMAGE_PAD = "<|image_pad|>"
VIDEO_PAD = prompts.VIDEO_PAD
#: the model types whose video path this backend runs (transformers' Qwen-VL video towers)
VIDEO_MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
_SENTINEL = "\x00INPUT\x00"


def last_token_pool(hidden: Any, attention_mask: Any) -> Any:
    """Hidden state at each row's last position where ``attention_mask == 1``."""
    import torch

    positions = torch.arange(attention_mask.shape[1], device=hidden.device)
    last = positions.expand_as(attention_mask).masked_fill(attention_mask == 0, -1).max(1).values
    if bool((last < 0).any()):
        raise ValueError("cannot pool an empty sequence")
    return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]


_PLAIN = ImagePolicy()
_QWEN_VL_UTILS = ImagePolicy(exif=False, alpha_on_white=True)


@dataclass(frozen=True)
class FamilyDefaults:
    """What a family's reference code does, where it differs from a plain chat checkpoint.

    Attributes:
        positions: ``1d`` (sequential position ids for every token, image patches included) or
            ``mrope`` (the model's 3-D multimodal rotary positions).
        stages: ``(min_pixels, max_pixels)`` of each ``smart_resize`` done before the image
            processor (factor = patch size x merge size); the caller's min/max replace the last.
        processor_resizes: Whether the image processor resizes again afterwards.
        min_pixels, max_pixels: Bounds for the processor's own resize (None: the checkpoint's).
        max_length: Token limit for text prompts.
        policy: EXIF and transparency handling when opening image files.
    """

    positions: Positions = "mrope"
    stages: tuple[tuple[int, int], ...] = ()
    processor_resizes: bool = True
    min_pixels: int | None = None
    max_pixels: int | None = None
    max_length: int = 8192
    policy: ImagePolicy = _PLAIN


FAMILY_DEFAULTS: dict[str, FamilyDefaults] = {
    # Qwen3-VL-Embedding src/models/qwen3_vl_embedding.py: fetch_image, then do_resize=False
    "qwen3-vl-embedding": FamilyDefaults(
        stages=((4 * 32 * 32, 1800 * 32 * 32),), processor_resizes=False, policy=_QWEN_VL_UTILS
    ),
    # gme_inference.py: fetch_image (4..16384 tokens of 28 px), then the processor's 256..1280
    "gme": FamilyDefaults(
        positions="1d",
        stages=((4 * 28 * 28, 16384 * 28 * 28), (256 * 28 * 28, 1280 * 28 * 28)),
        processor_resizes=False,
        max_length=1800,
        policy=ImagePolicy(exif=False, alpha_on_white=False),  # fetch_image: convert("RGB")
    ),
    # VLM2Vec src/arguments.py: min_pixels 3136, max_pixels 1003520; images opened by PIL
    "vlm2vec": FamilyDefaults(
        positions="1d",
        min_pixels=3136,
        max_pixels=1003520,
        policy=ImagePolicy(exif=False, alpha_on_white=True),  # the processor's convert_to_rgb
    ),
    "mllm": FamilyDefaults(),
}


#: Each family's video reference (README "Videos"); None: the reference takes no video.
VIDEO_SETTINGS: dict[str, VideoSettings | None] = {
    # src/models/qwen3_vl_embedding.py: FPS 1, MAX_FRAMES 64 for files (total budget left at
    # qwen-vl-utils' default); a frame list is cut to 64 by sample_frames and gets
    # total_pixels = 10 x 768 x 32^2
    "qwen3-vl-embedding": VideoSettings(
        fps=1.0, max_frames=64, folder_max_frames=64, folder_total_pixels=10 * 768 * 32 * 32
    ),
    # gme_inference.py embeds texts and images only (no video argument, no <|video_pad|>)
    "gme": None,
    # MMEB-V2 eval (experiments/public/eval/video.yaml): num_frames 8 of a folder that
    # save_frames filled with at most 64; the processor resizes each frame (3,136..1,003,520)
    "vlm2vec": VideoSettings(
        num_frames=8, saved_frames=64, resize="processor", min_pixels=3136, max_pixels=1003520
    ),
    # qwen-vl-utils fetch_video defaults: 2 fps, 4..768 frames, 128..768 tokens a frame
    "mllm": VideoSettings(),
}

VLM2VEC_MIN_SIDE = 28


def vlm2vec_min_side(image: Any) -> Any:
    """VLM2Vec's Qwen2-VL input function: an image with a side under 28 pixels becomes 56 x 56
    (PIL's default bicubic resize), whatever its aspect ratio."""
    from PIL import Image

    if min(image.size) < VLM2VEC_MIN_SIDE:
        return image.resize((2 * VLM2VEC_MIN_SIDE, 2 * VLM2VEC_MIN_SIDE), Image.Resampling.BICUBIC)
    return image


class MLLMEmbedder(TorchEmbedder):
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
        positions: ``1d`` or ``mrope`` (default: the family's; see :data:`FAMILY_DEFAULTS`).
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
        defaults = FAMILY_DEFAULTS[family]
        if positions not in (None, "1d", "mrope"):
            raise BindkitError(f"positions={positions!r}: use 1d or mrope")
        for option, value in (("min_pixels", min_pixels), ("max_pixels", max_pixels)):
            _check_int(option, value, 1, 1 << 30)
        _check_int("max_length", max_length, 1, 1 << 20)
        _check_int("square", square, 28, 16384)
        if square and family != "vlm2vec":
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
            if family == "mllm"
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
            model = transformers.AutoModel.from_pretrained(name, dtype=getattr(torch, dtype))
        except OSError as exc:
            raise BindkitError(
                f"{family}:{name}: cannot load ({exc}); give a local checkpoint directory or a "
                "cached hub id"
            ) from exc
        finally:
            transformers.logging.set_verbosity(verbosity)
        if getattr(self.tokenizer, "chat_template", None) is None:
            self.tokenizer.chat_template = _stored_chat_template(name)
        if family in ("mllm", "qwen3-vl-embedding") and not self.tokenizer.chat_template:
            raise BindkitError(
                f"{family}:{name}: the checkpoint has no chat template (tokenizer_config.json, "
                "chat_template.jinja or chat_template.json); add one"
            )
        if adapter:
            from bindkit.train.lora import attach_adapter

            model = attach_adapter(model, adapter)
        self.model = model.to(self.device).eval()
        self.config = model.config
        last_bounds = (min_pixels, max_pixels)
        processor_bounds = (
            (min_pixels or defaults.min_pixels, max_pixels or defaults.max_pixels)
            if defaults.processor_resizes
            else (None, None)
        )
        self.image_processor = self._image_processor(name, *processor_bounds)
        self.modalities = frozenset({"text", "image"} if self.image_processor else {"text"})
        self.processor_resizes = defaults.processor_resizes
        self.stages: tuple[ResizeStage, ...] = ()
        if self.image_processor is not None and defaults.stages:
            factor = int(self.image_processor.patch_size) * int(self.image_processor.merge_size)
            bounds = list(defaults.stages)
            bounds[-1] = (last_bounds[0] or bounds[-1][0], last_bounds[1] or bounds[-1][1])
            self.stages = tuple(ResizeStage(factor, low, high) for low, high in bounds)
        for stage in self.stages:
            if stage.min_pixels > stage.max_pixels:
                raise BindkitError(
                    f"min_pixels={stage.min_pixels} exceeds max_pixels={stage.max_pixels}"
                )
        self.image_token_id = self.tokenizer.convert_tokens_to_ids(IMAGE_PAD)
        self.video_token_id = self.tokenizer.convert_tokens_to_ids(VIDEO_PAD)
        self.model_type = str(getattr(self.config, "model_type", ""))
        self.video_settings = VIDEO_SETTINGS[family]
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
            "trailing_newline": self.trailing_newline if self.family == "vlm2vec" else None,
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

    # -- prompts ----------------------------------------------------------------------------
    def render(
        self,
        text: str | None,
        has_image: bool,
        role: Role,
        instruction: str | None,
        *,
        video: bool = False,
    ) -> str:
        """The full prompt string for one input, with one ``<|image_pad|>`` per image (one
        ``<|video_pad|>`` for a video)."""
        if self.family == "gme":
            return prompts.gme_prompt(text, has_image, role, instruction)
        if self.family == "vlm2vec":
            return prompts.vlm2vec_prompt(
                text,
                has_image,
                role,
                instruction,
                trailing_newline=self.trailing_newline,
                video=video,
            )
        if self.family == "qwen3-vl-embedding":
            messages = prompts.qwen3_vl_embedding_messages(
                text, has_image, instruction, video=video
            )
        else:
            assert self.layout is not None
            messages = self.layout.messages(text, has_image, role, instruction, video=video)
        rendered = str(
            self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        )
        if messages[0]["role"] != "system":
            # Qwen2/2.5-VL templates inject "You are a helpful assistant." before a first
            # non-system turn; a layout without a system prompt means none (the seed's "-" row)
            injected = self._injected_system()
            if injected and rendered.startswith(injected):
                rendered = rendered[len(injected) :]
        return rendered

    def _injected_system(self) -> str:
        """What the chat template puts before a conversation that starts with a user turn."""
        if self._injected is None:
            probe = str(
                self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": [{"type": "text", "text": _SENTINEL}]}],
                    tokenize=False,
                    add_generation_prompt=False,
                )
            )
            turn = probe.find("<|im_start|>user")
            self._injected = probe[:turn] if turn > 0 else ""
        return self._injected

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        if modality == "video":
            return self.render(None, False, role, instruction, video=True)
        return self.render(
            _SENTINEL if modality == "text" else None, modality == "image", role, instruction
        )

    # -- videos -----------------------------------------------------------------------------
    @property
    def video_factor(self) -> int:
        """What frame sides are multiples of: qwen-vl-utils' ``image_patch_size`` x 2 (its
        fixed ``SPATIAL_MERGE_SIZE``), or patch x merge size for the processor's own resize."""
        processor = self.image_processor
        settings = self._video_settings()
        merge = int(processor.merge_size) if settings.resize == "processor" else 2
        return int(processor.patch_size) * merge

    def _video_settings(self) -> VideoSettings:
        if self.video_settings is None or "video" not in self.modalities:
            raise BindkitError(
                f"{self.spec}: no video path ({self.family} takes no video, or the checkpoint "
                f"is {self.model_type or 'unknown'}, not one of {', '.join(VIDEO_MODEL_TYPES)})"
            )
        return self.video_settings

    def video_sampling(self) -> dict[str, Any]:
        """Everything besides the video's content that decides its frames (in its cache key)."""
        processor = self.image_processor
        mean, std = self._video_norm()
        return {
            "settings": dataclasses.asdict(self._video_settings()),
            "factor": self.video_factor,
            "temporal_patch_size": int(processor.temporal_patch_size),
            "mean": mean,
            "std": std,
            "resample": str(getattr(processor, "resample", None)),
        }

    def video_key(self, video: VideoRef) -> str:
        settings = canonical_json(self.video_sampling())
        every = "" if video.sample else "|every frame"  # VideoRef(sample=False)
        text = video_digest(video) + "|" + settings + every
        digest = hashlib.sha256(text.encode()).hexdigest()
        return "vid:" + digest

    def _video_norm(self) -> tuple[list[float], list[float]]:
        """The video processor's mean and std: ``video_preprocessor_config.json`` when the
        checkpoint has one (transformers falls back to ``preprocessor_config.json``)."""
        if self._norm is None:
            mean = [float(v) for v in self.image_processor.image_mean]
            std = [float(v) for v in self.image_processor.image_std]
            path = Path(self.name) / "video_preprocessor_config.json"
            if path.is_file():
                try:
                    config = json.loads(path.read_text(encoding="utf-8"))
                except json.JSONDecodeError as exc:
                    raise BindkitError(f"{path}: not JSON ({exc}); fix it") from exc
                mean = [float(v) for v in config.get("image_mean", mean)]
                std = [float(v) for v in config.get("image_std", std)]
            self._norm = (mean, std)
        return self._norm

    def _frame_resample(self, frame: Any) -> Any:
        """VLM2Vec: the image processor's resize of one frame (smart_resize, PIL bicubic)."""
        from PIL import Image

        settings = self._video_settings()
        low = settings.min_pixels or 3136
        high = settings.max_pixels or 1003520
        height, width = smart_resize(frame.height, frame.width, self.video_factor, low, high)
        if (width, height) == frame.size:
            return frame
        return frame.resize((width, height), Image.Resampling.BICUBIC)

    def prepare_video(self, video: VideoRef, key: str) -> PreparedVideo:
        """The sampled, resized frames of one video (from the frame cache when there)."""
        return cached_prepare(
            video,
            self._video_settings(),
            self.video_factor,
            key.removeprefix("vid:"),
            self._frame_resample,
            enabled=self.frame_cache,
        )

    def video_tokens(self, video: VideoRef) -> int:
        """Merged visual tokens of one video, from its header or first frame (no decoding)."""
        settings = self._video_settings()
        factor = self.video_factor
        if video.path.is_dir():
            from PIL import Image

            files = list_frames(video.path)
            count = len(folder_indices(len(files), settings, video.sample))
            if settings.resize == "qwen-vl-utils":
                count = len(pad_even(list(range(count))))
            with Image.open(files[0]) as first:
                width, height = first.size
            if settings.resize == "qwen-vl-utils":
                wide = 2 * factor
                height, width = smart_resize(
                    height, width, wide, 4 * wide * wide, 16384 * wide * wide
                )
            total = settings.folder_total_pixels
        else:
            info = probe_file(video.path)
            count = len(file_indices(info.frames, info.fps, settings, video.sample))
            height, width, total = info.height, info.width, settings.total_pixels
        low: int = settings.min_pixels or 3136
        high: float = settings.max_pixels or 1003520
        if settings.resize != "processor":
            low, high = frame_bounds(count, factor, settings, total)
        height, width = smart_resize(height, width, factor, low, high)
        processor = self.image_processor
        patch, merge = int(processor.patch_size), int(processor.merge_size)
        grid_t = -(-count // int(processor.temporal_patch_size))
        return grid_t * (height // patch) * (width // patch) // merge**2

    # -- encoding ---------------------------------------------------------------------------
    def prepare_image(self, image: Any) -> Any:
        """The family's resizes before the image processor (square squash, smart_resize)."""
        from PIL import Image

        if self.family == "vlm2vec":
            image = vlm2vec_min_side(image)
        if self.square:
            image = image.resize((self.square, self.square), Image.Resampling.BICUBIC)
        for stage in self.stages:
            image = stage(image)
        return image

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
            if self.image_processor is None:
                raise BindkitError(f"{self.spec}: this checkpoint has no vision tower")
            rendered = [self.render(None, True, role, instruction) for _ in inputs]
            options = {} if self.processor_resizes else {"do_resize": False}
            pixels = self.image_processor(
                images=[self.prepare_image(im) for im in inputs], return_tensors="pt", **options
            )
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

    def _collate_videos(
        self, inputs: Sequence[Any], role: Role, instruction: str | None
    ) -> tuple[list[str], dict[str, Any]]:
        """Prompts with each ``<|video_pad|>`` expanded and the video tensors, as the Qwen-VL
        processors of transformers 5.24 build them (``inputs``: (VideoRef, key) pairs or
        :class:`~bindkit.embed.video.PreparedVideo`)."""
        import torch

        self._video_settings()
        videos = [v if isinstance(v, PreparedVideo) else self.prepare_video(*v) for v in inputs]
        processor = self.image_processor
        merge = int(processor.merge_size)
        temporal = int(processor.temporal_patch_size)
        mean, std = self._video_norm()
        rendered, pixels, grids = [], [], []
        for video in videos:
            flat, grid = video_patches(
                video.frames,
                patch_size=int(processor.patch_size),
                merge_size=merge,
                temporal_patch_size=temporal,
                mean=mean,
                std=std,
            )
            pixels.append(flat)
            grids.append(grid)
            prompt = self.render(None, False, role, instruction, video=True)
            per_frame = grid[1] * grid[2] // merge**2
            if self.model_type == "qwen3_vl":
                # Qwen3VLProcessor.replace_video_token: a timestamp and a vision block per
                # temporal patch, put in place of the <|video_pad|> token
                stamps = qwen3_timestamps(video.indices, video.fps, temporal)
                expanded = "".join(
                    f"<{stamps[t]:.1f} seconds><|vision_start|>{VIDEO_PAD * per_frame}"
                    "<|vision_end|>"
                    for t in range(grid[0])
                )
            else:
                expanded = VIDEO_PAD * (grid[0] * per_frame)
            rendered.append(prompt.replace(VIDEO_PAD, expanded, 1))
        extra: dict[str, Any] = {
            "pixel_values_videos": torch.cat(pixels).to(self.device, self.model.dtype),
            "video_grid_thw": torch.tensor(grids, dtype=torch.long).to(self.device),
        }
        if self.model_type == "qwen2_5_vl":
            # Qwen2_5_VLProcessor: temporal_patch_size / the sampled frame rate
            extra["second_per_grid_ts"] = torch.tensor(
                [temporal / v.sample_fps for v in videos], device=self.device
            )
        return rendered, extra

    def forward(self, batch: dict[str, Any]) -> Any:
        out = self.model(**batch)
        pooled = last_token_pool(out.last_hidden_state, batch["attention_mask"])
        return normalize(pooled[:, : self.dim] if self.dim else pooled)


def _check_int(option: str, value: Any, low: int, high: int) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise BindkitError(f"{option}={value!r}: use a whole number from {low} to {high:,}")


def _stored_chat_template(name: str) -> str | None:
    """A chat template kept beside the tokenizer: ``chat_template.jinja`` or the legacy
    ``chat_template.json`` (which processors read and tokenizers do not)."""
    for filename in ("chat_template.jinja", "chat_template.json"):
        path = Path(name) / filename
        if not path.is_file():
            try:
                from huggingface_hub import try_to_load_from_cache

                cached = try_to_load_from_cache(name, filename)
            except Exception:  # not a hub id
                cached = None
            if not isinstance(cached, str):
                continue
            path = Path(cached)
        text = path.read_text(encoding="utf-8")
        if filename.endswith(".json"):
            try:
                template = json.loads(text).get("chat_template")
            except (json.JSONDecodeError, AttributeError) as exc:
                raise BindkitError(f"{path}: not a chat template JSON ({exc}); fix it") from exc
            return str(template) if template else None
        return text
    return None
