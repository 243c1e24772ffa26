"""CLIP-style dual encoders through open_clip: ``open_clip:<arch>/<pretrained tag or checkpoint>``.

Images are preprocessed here with PIL from the model's own ``preprocess_cfg`` (resize the
shorter side to the input size with bicubic filtering, centre-crop, scale to [0, 1], normalise):
the same steps as open_clip's evaluation transform, without requiring torchvision.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from bindkit.embed.backends._torch import TorchEmbedder, normalize
from bindkit.embed.protocol import Modality, Role
from bindkit.embed.weights import file_digest
from bindkit.errors import BindkitError


def preprocess(
    image: Any, size: int, mean: tuple[float, ...], std: tuple[float, ...]
) -> np.ndarray:
    """One RGB PIL image → a (3, size, size) float32 array, open_clip's eval transform."""
    from PIL import Image

    width, height = image.size
    scale = size / min(width, height)
    resized = image.resize(
        (max(size, round(width * scale)), max(size, round(height * scale))),
        Image.Resampling.BICUBIC,
    )
    left = (resized.width - size) // 2
    top = (resized.height - size) // 2
    crop = resized.crop((left, top, left + size, top + size))
    pixels = np.asarray(crop, dtype=np.float32) / np.float32(255.0)
    scaled = (pixels - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)
    return np.ascontiguousarray(scaled.transpose(2, 0, 1), dtype=np.float32)


class OpenClipEmbedder(TorchEmbedder):
    """Text and image towers of an open_clip model (roles and instructions are ignored)."""

    modalities = frozenset({"text", "image"})

    def __init__(
        self,
        name: str,
        *,
        device: str | None = None,
        model: Any = None,
        tokenizer: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        arch, _, pretrained = name.partition("/")
        self.arch, self.pretrained = arch, pretrained or None
        import torch

        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        if model is None:
            try:
                import open_clip
            except ImportError as exc:
                raise BindkitError(
                    "open_clip: models need open_clip_torch; pip install 'bindkit[clip]'"
                ) from exc
            try:
                model = open_clip.create_model(arch, pretrained=self.pretrained, device=self.device)
            except RuntimeError as exc:
                raise BindkitError(f"open_clip:{name}: cannot load ({exc})") from exc
            tokenizer = open_clip.get_tokenizer(arch)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        cfg = getattr(self.model.visual, "preprocess_cfg", {}) or {}
        size = cfg.get("size", getattr(self.model.visual, "image_size", 224))
        self.image_size = int(size[0] if isinstance(size, list | tuple) else size)
        self.mean = tuple(cfg.get("mean", (0.48145466, 0.4578275, 0.40821073)))
        self.std = tuple(cfg.get("std", (0.26862954, 0.26130258, 0.27577711)))

    def describe(self) -> dict[str, Any]:
        from pathlib import Path

        weights = self.pretrained
        if weights and Path(weights).is_file():
            weights = f"{Path(weights).name}:{file_digest(Path(weights))}"
        return {
            "backend": "open_clip",
            "model": self.arch,
            "weights": weights,
            "images": {
                "size": self.image_size,
                "mean": self.mean,
                "std": self.std,
                "resize": "shortest-bicubic-centercrop",
            },
        }

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        return modality

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
        import torch

        if modality == "text":
            return {"text": self.tokenizer(list(inputs)).to(self.device)}
        batch = np.stack([preprocess(im, self.image_size, self.mean, self.std) for im in inputs])
        return {"image": torch.from_numpy(batch).to(self.device)}

    def forward(self, batch: dict[str, Any]) -> Any:
        if "text" in batch:
            return normalize(self.model.encode_text(batch["text"]))
        return normalize(self.model.encode_image(batch["image"]))
