"""Images through a multimodal LLM: the family's resizes, the image processor, the image tokens.

:class:`ImagedMLLM` is the second layer of :class:`~bindkit.embed.backends.mllm.MLLMEmbedder`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit.embed.backends.mllm.families import vlm2vec_min_side
from bindkit.embed.backends.mllm.prompts import IMAGE_PAD, PromptedMLLM
from bindkit.embed.images import ResizeStage
from bindkit.embed.protocol import Role
from bindkit.errors import BindkitError


class ImagedMLLM(PromptedMLLM):
    """The image pipeline of each family (see :data:`~.families.FAMILY_DEFAULTS`)."""

    config: Any
    image_processor: Any
    processor_resizes: bool
    stages: tuple[ResizeStage, ...]
    square: int | None

    def _setup_images(self, min_pixels: int | None, max_pixels: int | None) -> None:
        """The image processor and the resize stages before it; the caller's bounds replace
        those of the last stage (or of the processor's own resize)."""
        defaults = self.defaults
        processor_bounds = (
            (min_pixels or defaults.min_pixels, max_pixels or defaults.max_pixels)
            if defaults.processor_resizes
            else (None, None)
        )
        self.image_processor = self._image_processor(self.name, *processor_bounds)
        self.processor_resizes = defaults.processor_resizes
        self.stages = ()
        if self.image_processor is not None and defaults.stages:
            factor = int(self.image_processor.patch_size) * int(self.image_processor.merge_size)
            bounds = list(defaults.stages)
            bounds[-1] = (min_pixels or bounds[-1][0], max_pixels or bounds[-1][1])
            self.stages = tuple(ResizeStage(factor, low, high) for low, high in bounds)
        for stage in self.stages:
            if stage.min_pixels > stage.max_pixels:
                raise BindkitError(
                    f"min_pixels={stage.min_pixels} exceeds max_pixels={stage.max_pixels}"
                )

    def fix_image_size(self, size: int) -> None:
        """Embed every image at ``size`` x ``size`` pixels from now on (training, seed 002
        §IV-A1: "resized to a fixed 448×448 resolution during training"): each image is
        squashed to that square (bicubic), and the family's resizes and its image processor are
        bounded to exactly ``size``² pixels, so they keep it. Changes nothing but images.

        Raises:
            BindkitError: ``size`` is not a multiple of the model's patch grid (the processor
                would round it), or the checkpoint has no vision tower.
        """
        if self.image_processor is None:
            raise BindkitError(f"{self.spec}: this checkpoint has no vision tower")
        grid = int(self.image_processor.patch_size) * int(self.image_processor.merge_size)
        if size % grid:
            raise BindkitError(
                f"--image-size {size}: not a multiple of {self.spec}'s patch grid ({grid} "
                f"pixels), which would round it; use {max(grid, size // grid * grid)}"
            )
        self._setup_images(size * size, size * size)
        self.square = size

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

    def prepare_image(self, image: Any) -> Any:
        """The family's resizes before the image processor (square squash, smart_resize)."""
        from PIL import Image

        if self.defaults.min_side:
            image = vlm2vec_min_side(image, self.defaults.min_side)
        if self.square:
            image = image.resize((self.square, self.square), Image.Resampling.BICUBIC)
        for stage in self.stages:
            image = stage(image)
        return image

    def _collate_images(
        self, inputs: Sequence[Any], role: Role, instruction: str | None
    ) -> tuple[list[str], dict[str, Any]]:
        """Prompts with each ``<|image_pad|>`` expanded to the image's tokens, and the pixels."""
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
        return rendered, extra
