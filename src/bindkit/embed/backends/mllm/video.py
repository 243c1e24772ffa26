"""Videos through a multimodal LLM: each family's frame sampling, the video tokens and tensors.

:class:`VideoMLLM` is the third layer of :class:`~bindkit.embed.backends.mllm.MLLMEmbedder`;
the pure sampling rules, decoding and the frame cache live in :mod:`bindkit.embed.video`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit._io import canonical_json
from bindkit.embed.backends.mllm.images import ImagedMLLM
from bindkit.embed.backends.mllm.prompts import VIDEO_PAD
from bindkit.embed.images import smart_resize
from bindkit.embed.protocol import Role
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
from bindkit.errors import BindkitError

#: the model types whose video path this backend runs (transformers' Qwen-VL video towers)
VIDEO_MODEL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")


class VideoMLLM(ImagedMLLM):
    """The video path of the families whose reference takes videos."""

    video_settings: VideoSettings | None
    model_type: str
    video_token_id: int
    frame_cache: bool
    _norm: tuple[list[float], list[float]] | None

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
