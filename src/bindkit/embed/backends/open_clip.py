"""CLIP-style dual encoders through open_clip: ``open_clip:<arch>/<pretrained tag or checkpoint>``.

Images are preprocessed here with PIL from the model's own ``preprocess_cfg``, following
open_clip's eval transform (``open_clip.transform.image_transform``) and the torchvision
functions it calls, without requiring torchvision:

- ``resize_mode="shortest"`` (CLIP): resize the shorter side to the input size (torchvision
  ``Resize(int)``: the long side becomes ``int(size * long / short)``), then ``CenterCrop``
  (offset ``int(round(delta / 2))``);
- ``"longest"``: resize the longer side to the input size (timm's ``ResizeKeepRatio``, sides
  rounded), then centre-pad with ``fill_color`` and crop;
- ``"squash"`` (SigLIP, CLIPA, PE): resize to the input size, ignoring the aspect ratio;

with ``interpolation`` ``bilinear`` or ``bicubic`` (``random`` means bicubic at eval time), then
scale to [0, 1] and normalise with ``mean``/``std``.

open_clip imports torchvision at import time, and torchvision's PyPI wheels do not import beside
the CPU build of torch. Since bindkit calls no torchvision function, :func:`import_open_clip`
lets open_clip import with stand-in torchvision modules when the real one cannot be imported
(``pip install --no-deps open_clip_torch ftfy wcwidth`` is then a working install).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bindkit.embed.backends._torch import TorchEmbedder, normalize
from bindkit.embed.images import ImagePolicy
from bindkit.embed.protocol import Modality, Role
from bindkit.embed.weights import file_digest
from bindkit.errors import BindkitError

_CLIP_MEAN = (0.48145466, 0.4578275, 0.40821073)
_CLIP_STD = (0.26862954, 0.26130258, 0.27577711)


_TORCHVISION_MODULES = (
    "torchvision",
    "torchvision.io",
    "torchvision.transforms",
    "torchvision.transforms.functional",
    "torchvision.ops",
    "torchvision.ops.misc",
)


@contextlib.contextmanager
def stand_in_torchvision() -> Iterator[None]:
    """Stand-in torchvision modules while a package that imports torchvision is imported
    (unless the real one imports); removed afterwards. Any attribute of them is an inert
    class, so module-level ``from torchvision... import X`` lines succeed."""
    import importlib
    import importlib.machinery
    import sys
    import types

    try:
        importlib.import_module("torchvision")
    except Exception:  # missing, or a wheel built for another torch (RuntimeError)
        for name in [m for m in sys.modules if m.split(".")[0] == "torchvision"]:
            sys.modules.pop(name)
    else:
        yield
        return

    class AnyAttribute(type):
        def __getattr__(cls, attr: str) -> Any:
            if attr.startswith("__"):
                raise AttributeError(attr)
            return cls

    class Anything(metaclass=AnyAttribute):
        def __init__(self, *args: Any, **kwargs: Any) -> None: ...

    def anything(attr: str) -> type:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Anything

    for name in _TORCHVISION_MODULES:
        module = types.ModuleType(name)
        module.__getattr__ = anything  # type: ignore[method-assign]
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        sys.modules[name] = module
        parent, _, child = name.rpartition(".")
        if parent:
            setattr(sys.modules[parent], child, module)
    try:
        yield
    finally:
        for name in _TORCHVISION_MODULES:
            sys.modules.pop(name, None)


def import_open_clip() -> Any:
    """``open_clip``, importable without a working torchvision (see the module docstring)."""
    try:
        with stand_in_torchvision():
            import open_clip
    except ImportError as exc:
        raise BindkitError(
            "open_clip: models need open_clip_torch; pip install --no-deps "
            "'open_clip_torch>=3.3,<4' ftfy wcwidth (or pip install 'bindkit[clip]' where "
            "torchvision's wheels match your torch)"
        ) from exc
    return open_clip


@dataclass(frozen=True)
class Preprocess:
    """open_clip's ``PreprocessCfg`` fields that change the pixels."""

    size: tuple[int, int]  # (height, width)
    mean: tuple[float, ...] = _CLIP_MEAN
    std: tuple[float, ...] = _CLIP_STD
    interpolation: str = "bicubic"
    resize_mode: str = "shortest"
    fill_color: int = 0

    @classmethod
    def from_cfg(cls, cfg: dict[str, Any], default_size: Any = 224) -> Preprocess:
        size = cfg.get("size", default_size)
        height, width = (size, size) if isinstance(size, int) else tuple(size)
        made = cls(
            size=(int(height), int(width)),
            mean=tuple(float(v) for v in cfg.get("mean", _CLIP_MEAN)),
            std=tuple(float(v) for v in cfg.get("std", _CLIP_STD)),
            interpolation=str(cfg.get("interpolation") or "bicubic"),
            resize_mode=str(cfg.get("resize_mode") or "shortest"),
            fill_color=int(cfg.get("fill_color", 0) or 0),
        )
        if made.interpolation not in ("bicubic", "bilinear", "random"):
            raise BindkitError(f"interpolation={made.interpolation!r}: use bicubic or bilinear")
        if made.resize_mode not in ("shortest", "longest", "squash"):
            raise BindkitError(f"resize_mode={made.resize_mode!r}: use shortest, longest or squash")
        return made


def _pad_and_crop(image: Any, height: int, width: int, fill: int) -> Any:
    """open_clip ``center_crop_or_pad`` (and torchvision ``CenterCrop``) on a PIL image."""
    from PIL import Image

    if width > image.width or height > image.height:
        left = (width - image.width) // 2 if width > image.width else 0
        top = (height - image.height) // 2 if height > image.height else 0
        bands = len(image.getbands())  # the fill goes into every band, as torchvision's pad
        canvas = Image.new(
            image.mode,
            (max(width, image.width), max(height, image.height)),
            fill if bands == 1 else (fill,) * bands,
        )
        canvas.paste(image, (left, top))
        image = canvas
        if image.size == (width, height):
            return image
    top = round((image.height - height) / 2.0)  # torchvision: int(round(delta / 2))
    left = round((image.width - width) / 2.0)
    return image.crop((left, top, left + width, top + height))


def resize_and_crop(image: Any, cfg: Preprocess) -> Any:
    """One PIL image → the ``cfg.size`` PIL image (same mode) open_clip's eval transform makes."""
    from PIL import Image

    height, width = cfg.size
    resample = (
        Image.Resampling.BILINEAR if cfg.interpolation == "bilinear" else Image.Resampling.BICUBIC
    )
    if cfg.resize_mode == "squash":
        return image.resize((width, height), resample)
    if cfg.resize_mode == "longest":
        ratio = max(image.height / height, image.width / width)
        scaled = (round(image.width / ratio), round(image.height / ratio))
        return _pad_and_crop(image.resize(scaled, resample), height, width, cfg.fill_color)
    if height == width:  # torchvision Resize(int): shorter side to size, longer side truncated
        short, long = sorted(image.size)
        new_long = int(height * long / short)
        scaled = (height, new_long) if image.width <= image.height else (new_long, height)
    else:  # ResizeKeepRatio(size), shortest edge
        ratio = min(image.height / height, image.width / width)
        scaled = (round(image.width / ratio), round(image.height / ratio))
        resample = Image.Resampling.BICUBIC  # open_clip passes no interpolation here
    return _pad_and_crop(image.resize(scaled, resample), height, width, cfg.fill_color)


def preprocess(image: Any, cfg: Preprocess) -> np.ndarray:
    """One PIL image (any mode) → a (3, height, width) float32 array, open_clip's eval transform:
    resize and crop in the image's own mode, then ``convert("RGB")``, scale and normalise."""
    rgb = resize_and_crop(image, cfg).convert("RGB")
    pixels = np.asarray(rgb, dtype=np.float32) / np.float32(255.0)
    scaled = (pixels - np.asarray(cfg.mean, dtype=np.float32)) / np.asarray(
        cfg.std, dtype=np.float32
    )
    return np.ascontiguousarray(scaled.transpose(2, 0, 1), dtype=np.float32)


class OpenClipEmbedder(TorchEmbedder):
    """Text and image towers of an open_clip model (roles and instructions are ignored)."""

    modalities = frozenset({"text", "image"})
    #: open_clip's loaders open files with PIL (no EXIF transpose); its eval transform resizes
    #: and crops the image in its own mode and only then converts to RGB (alpha dropped)
    image_policy = ImagePolicy(exif=False, alpha_on_white=False, rgb=False)

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
            open_clip = import_open_clip()
            import logging

            quiet = logging.getLogger().level  # open_clip logs the failure before raising it
            logging.getLogger().setLevel(logging.CRITICAL)
            try:
                model = open_clip.create_model(arch, pretrained=self.pretrained, device=self.device)
            except RuntimeError as exc:
                hub = (open_clip.get_pretrained_cfg(arch, self.pretrained or "") or {}).get(
                    "hf_hub"
                )
                fetch = f"`hf download {hub.rstrip('/')}` once, or " if hub else ""
                raise BindkitError(
                    f"open_clip:{name}: cannot load ({exc}); {fetch}give a local checkpoint: "
                    f"open_clip:{arch}/PATH/open_clip_pytorch_model.bin"
                ) from exc
            finally:
                logging.getLogger().setLevel(quiet)
            tokenizer = open_clip.get_tokenizer(arch)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        cfg = getattr(self.model.visual, "preprocess_cfg", {}) or {}
        self.preprocess = Preprocess.from_cfg(cfg, getattr(self.model.visual, "image_size", 224))

    def suggested_batch_size(self) -> int:
        from bindkit.embed.backends._torch import default_batch_size

        return default_batch_size(self.device, self.model)

    def _describe(self) -> dict[str, Any]:
        from pathlib import Path

        weights = self.pretrained
        if weights and Path(weights).is_file():
            weights = f"{Path(weights).name}:{file_digest(Path(weights))}"
        return {
            "backend": "open_clip",
            "model": self.arch,
            "weights": weights,
            "images": {
                "size": list(self.preprocess.size),
                "mean": list(self.preprocess.mean),
                "std": list(self.preprocess.std),
                "interpolation": self.preprocess.interpolation,
                "resize_mode": self.preprocess.resize_mode,
                "fill_color": self.preprocess.fill_color,
                "exif": self.image_policy.exif,
                "alpha_on_white": self.image_policy.alpha_on_white,
                "rgb_after_resize": not self.image_policy.rgb,
            },
        }

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        return modality

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
        batch = np.stack([preprocess(im, self.preprocess) for im in inputs])
        return {"image": torch.from_numpy(batch).to(self.device)}

    def forward(self, batch: dict[str, Any]) -> Any:
        if "text" in batch:
            return normalize(self.model.encode_text(batch["text"]))
        return normalize(self.model.encode_image(batch["image"]))
