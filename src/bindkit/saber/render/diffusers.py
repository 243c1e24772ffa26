"""Text-to-image with a local diffusers pipeline (a model directory or a hub id you have cached).

``diffusers`` is imported only when a render starts. One image at a time on one device; each
item gets its own generator seed (from ``--seed`` and the item id), so a rerun of one item
reproduces it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bindkit.errors import BindkitError
from bindkit.saber.io import MCQ, Item


@dataclass
class DiffusersBackend:
    """A diffusers text-to-image pipeline.

    Attributes:
        model: Local path or hub id passed to ``DiffusionPipeline.from_pretrained``.
        size: Square image size in pixels (``height`` and ``width``).
        steps: ``num_inference_steps`` (None: the pipeline's default).
        guidance: ``guidance_scale`` (None: the pipeline's default).
        seed: Base seed of every item's generator.
        device: Torch device (default: cuda if available, else cpu).
        dtype: ``float16``, ``bfloat16``, ``float32`` or ``auto`` (half on cuda).
        extra: Further pipeline call arguments (``--option KEY=VALUE``).
        pipeline: An already built pipeline (tests, or callers who configure it themselves).
    """

    model: str
    size: int = 1024
    steps: int | None = None
    guidance: float | None = None
    seed: int = 0
    device: str | None = None
    dtype: str = "auto"
    extra: tuple[tuple[str, Any], ...] = ()
    pipeline: Any = field(default=None, repr=False)
    name: str = "diffusers"
    parallel: str = "none"

    def __post_init__(self) -> None:
        if not self.model:
            raise BindkitError("--model is required for --backend diffusers (a path or an id)")
        if self.dtype not in ("auto", "float16", "bfloat16", "float32"):
            raise BindkitError(f"--dtype {self.dtype}: use auto, float16, bfloat16 or float32")

    def describe(self) -> dict[str, Any]:
        options = {"size": self.size, "steps": self.steps, "guidance": self.guidance}
        return {
            "backend": self.name,
            "model": self.model,
            "options": {**options, "seed": self.seed, "dtype": self.dtype, **dict(self.extra)},
        }

    def check(self, mcqs: Sequence[MCQ]) -> None:
        import importlib.util

        if self.pipeline is None and importlib.util.find_spec("diffusers") is None:
            raise BindkitError("--backend diffusers needs diffusers; pip install diffusers torch")

    def _device(self) -> str:
        import torch

        return self.device or ("cuda" if torch.cuda.is_available() else "cpu")

    def _load(self) -> Any:
        if self.pipeline is None:
            import torch
            from diffusers import DiffusionPipeline

            device = self._device()
            name = (
                self.dtype
                if self.dtype != "auto"
                else ("float16" if device == "cuda" else "float32")
            )
            try:
                pipe = DiffusionPipeline.from_pretrained(
                    self.model, torch_dtype=getattr(torch, name)
                )
            except (OSError, ValueError) as exc:
                raise BindkitError(f"--model {self.model}: cannot load a pipeline ({exc})") from exc
            self.pipeline = pipe.to(device)
            self.pipeline.set_progress_bar_config(disable=True)
        return self.pipeline

    def render(self, item: Item, mcq: MCQ, variant: int = 0) -> Any:
        import torch

        from bindkit.saber.render.procedural import item_seed_key

        pipe = self._load()
        digest = item_seed_key(self.seed, item.id, variant)
        generator = torch.Generator(self._device()).manual_seed(
            int.from_bytes(digest[:4], "little")
        )
        kwargs: dict[str, Any] = {
            "prompt": item.image_prompt,
            "height": self.size,
            "width": self.size,
            "generator": generator,
        }
        if self.steps is not None:
            kwargs["num_inference_steps"] = self.steps
        if self.guidance is not None:
            kwargs["guidance_scale"] = self.guidance
        kwargs.update(dict(self.extra))
        return pipe(**kwargs).images[0]
