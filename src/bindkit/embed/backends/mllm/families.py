"""The multimodal-LLM families as data: one row of :data:`FAMILY_DEFAULTS` per reference.

Every place where a family behaves differently from a plain Qwen-VL chat checkpoint reads its
row here (prompt format, image pipeline, positions, video sampling, which options apply), so a
new family is one new row, not a new ``if family == ...`` in the model code.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from bindkit.embed.images import ImagePolicy
from bindkit.embed.video import VideoSettings

Family = Literal["qwen3-vl-embedding", "gme", "vlm2vec", "mllm"]
Positions = Literal["1d", "mrope"]
#: how a family's prompt is built: its reference's own string builder, or the chat template
#: through a prompt layout (``mllm``) or Qwen3-VL-Embedding's messages
PromptFormat = Literal["gme", "vlm2vec", "qwen3-vl-embedding", "layout"]

_PLAIN = ImagePolicy()
_QWEN_VL_UTILS = ImagePolicy(exif=False, alpha_on_white=True)
_QWEN_VL_UTILS_VIDEO = VideoSettings()  # qwen-vl-utils fetch_video's defaults
VLM2VEC_MIN_SIDE = 28


@dataclass(frozen=True)
class FamilyDefaults:
    """What a family's reference code does, where it differs from a plain chat checkpoint.

    Attributes:
        prompt: How the prompt string is built (:data:`PromptFormat`).
        positions: ``1d`` (sequential position ids for every token, image patches included) or
            ``mrope`` (the model's 3-D multimodal rotary positions).
        stages: ``(min_pixels, max_pixels)`` of each ``smart_resize`` done before the image
            processor (factor = patch size x merge size); the caller's min/max replace the last.
        processor_resizes: Whether the image processor resizes again afterwards.
        min_pixels, max_pixels: Bounds for the processor's own resize (None: the checkpoint's).
        max_length: Token limit for text prompts.
        policy: EXIF and transparency handling when opening image files.
        video: The family's video reference (None: the reference takes no video).
        needs_chat_template: Whether the prompt is rendered through the tokenizer's chat template
            (so a checkpoint without one is refused).
        min_side: An image with a side under this is first resized to twice it, square (None:
            no such rule).
        square: Whether the ``square`` pre-resize option exists (the official MMEB eval's).
        trailing_newline: Whether the ``trailing_newline`` option exists (MMEB's ``\\n``).
    """

    prompt: PromptFormat = "layout"
    positions: Positions = "mrope"
    stages: tuple[tuple[int, int], ...] = ()
    processor_resizes: bool = True
    min_pixels: int | None = None
    max_pixels: int | None = None
    max_length: int = 8192
    policy: ImagePolicy = _PLAIN
    video: VideoSettings | None = _QWEN_VL_UTILS_VIDEO
    needs_chat_template: bool = True
    min_side: int | None = None
    square: bool = False
    trailing_newline: bool = False


FAMILY_DEFAULTS: dict[str, FamilyDefaults] = {
    # Qwen3-VL-Embedding src/models/qwen3_vl_embedding.py: fetch_image, then do_resize=False;
    # videos: FPS 1, MAX_FRAMES 64 for files (total budget left at qwen-vl-utils' default); a
    # frame list is cut to 64 by sample_frames and gets total_pixels = 10 x 768 x 32^2
    "qwen3-vl-embedding": FamilyDefaults(
        prompt="qwen3-vl-embedding",
        stages=((4 * 32 * 32, 1800 * 32 * 32),),
        processor_resizes=False,
        policy=_QWEN_VL_UTILS,
        video=VideoSettings(
            fps=1.0, max_frames=64, folder_max_frames=64, folder_total_pixels=10 * 768 * 32 * 32
        ),
    ),
    # gme_inference.py: fetch_image (4..16384 tokens of 28 px), then the processor's 256..1280;
    # it embeds texts and images only (no video argument, no <|video_pad|>)
    "gme": FamilyDefaults(
        prompt="gme",
        positions="1d",
        stages=((4 * 28 * 28, 16384 * 28 * 28), (256 * 28 * 28, 1280 * 28 * 28)),
        processor_resizes=False,
        max_length=1800,
        policy=ImagePolicy(exif=False, alpha_on_white=False),  # fetch_image: convert("RGB")
        video=None,
        needs_chat_template=False,
    ),
    # VLM2Vec src/arguments.py: min_pixels 3136, max_pixels 1003520; images opened by PIL;
    # MMEB-V2 eval (experiments/public/eval/video.yaml): num_frames 8 of a folder that
    # save_frames filled with at most 64; the processor resizes each frame (3,136..1,003,520)
    "vlm2vec": FamilyDefaults(
        prompt="vlm2vec",
        positions="1d",
        min_pixels=3136,
        max_pixels=1003520,
        policy=ImagePolicy(exif=False, alpha_on_white=True),  # the processor's convert_to_rgb
        video=VideoSettings(
            num_frames=8, saved_frames=64, resize="processor", min_pixels=3136, max_pixels=1003520
        ),
        needs_chat_template=False,
        min_side=VLM2VEC_MIN_SIDE,
        square=True,
        trailing_newline=True,
    ),
    # qwen-vl-utils fetch_video defaults: 2 fps, 4..768 frames, 128..768 tokens a frame
    "mllm": FamilyDefaults(),
}

#: Each family's video reference (README "Videos"), read from :data:`FAMILY_DEFAULTS`.
VIDEO_SETTINGS: dict[str, VideoSettings | None] = {
    name: row.video for name, row in FAMILY_DEFAULTS.items()
}


def vlm2vec_min_side(image: Any, side: int = VLM2VEC_MIN_SIDE) -> Any:
    """VLM2Vec's Qwen2-VL input function: an image with a side under 28 pixels becomes 56 x 56
    (PIL's default bicubic resize), whatever its aspect ratio."""
    from PIL import Image

    if min(image.size) < side:
        return image.resize((2 * side, 2 * side), Image.Resampling.BICUBIC)
    return image
