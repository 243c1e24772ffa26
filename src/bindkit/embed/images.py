"""Image inputs: paths or PIL images, an explicit policy for EXIF orientation and transparency,
optional horizontal flip, and the Qwen-VL ``smart_resize`` rule."""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Union

from bindkit.errors import BindkitError

if TYPE_CHECKING:
    from PIL import Image


@dataclass(frozen=True)
class ImageRef:
    """An image file plus whether to mirror it (SABER's ``flip`` flag, applied by the caller)."""

    path: Path
    flip: bool = False

    def __post_init__(self) -> None:
        # ImageRef("scene.png") as well as ImageRef(Path("scene.png")): every reader uses Path
        object.__setattr__(self, "path", Path(self.path))


ImageInput = Union[str, Path, ImageRef, "Image.Image"]

#: the suffixes that make a data value an image path rather than a text (mining and training rows)
IMAGE_SUFFIXES = frozenset({".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif", ".tif", ".tiff"})


def as_ref(image: ImageInput) -> ImageRef | Image.Image:
    if isinstance(image, ImageRef):
        return image
    if isinstance(image, str | Path):
        return ImageRef(Path(image))
    return image


def content_key(image: ImageInput) -> str:
    """Hash of what the model will see: file bytes (or pixels) plus the flip flag."""
    ref = as_ref(image)
    digest = hashlib.sha256()
    if isinstance(ref, ImageRef):
        try:
            digest.update(ref.path.read_bytes())
        except OSError as exc:
            raise BindkitError(
                f"{ref.path}: cannot read image ({exc.strerror}); check the path"
            ) from exc
        digest.update(b"|flip" if ref.flip else b"|")
    else:
        digest.update(f"{ref.mode}|{ref.size}|".encode())
        digest.update(ref.tobytes())
    return "img:" + digest.hexdigest()


@dataclass(frozen=True)
class ImagePolicy:
    """How an image file becomes RGB pixels; part of every image embedder's fingerprint.

    Attributes:
        exif: Apply the EXIF orientation tag (``ImageOps.exif_transpose``). The Qwen-VL reference
            codes (qwen-vl-utils ``fetch_image``, VLM2Vec) open images without it, so their
            families turn it off for parity.
        alpha_on_white: Composite RGBA onto white, as qwen-vl-utils ``to_rgb`` does; otherwise
            ``convert("RGB")`` drops the alpha channel (open_clip's ``_convert_to_rgb``).
        rgb: Convert to RGB when loading. False keeps the file's mode (after EXIF and flip) for
            a backend whose reference resizes first and converts after (open_clip's eval
            transform: resize, crop, then ``_convert_to_rgb``).
    """

    exif: bool = True
    alpha_on_white: bool = False
    rgb: bool = True


def to_rgb(picture: Image.Image, alpha_on_white: bool) -> Image.Image:
    """RGB pixels of ``picture``; RGBA is composited onto white when ``alpha_on_white``."""
    from PIL import Image

    if alpha_on_white and picture.mode == "RGBA":
        background = Image.new("RGB", picture.size, (255, 255, 255))
        background.paste(picture, mask=picture.split()[3])
        return background
    return picture.convert("RGB")


def load_image(image: ImageInput, policy: ImagePolicy | None = None) -> Image.Image:
    """Open an image as RGB under ``policy`` (default: EXIF honoured, alpha dropped; in its own
    mode when ``policy.rgb`` is off), mirrored when its reference asks for the flip."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    policy = policy or ImagePolicy()
    ref = as_ref(image)
    if not isinstance(ref, ImageRef):
        return to_rgb(ref, policy.alpha_on_white) if policy.rgb else ref
    try:
        with Image.open(ref.path) as handle:
            opened = ImageOps.exif_transpose(handle) if policy.exif else handle
            picture = to_rgb(opened, policy.alpha_on_white) if policy.rgb else opened.copy()
    except FileNotFoundError as exc:
        raise BindkitError(f"{ref.path}: image not found; check the path") from exc
    except (UnidentifiedImageError, OSError) as exc:
        raise BindkitError(f"{ref.path}: unreadable image ({exc}); replace the file") from exc
    if ref.flip:
        picture = ImageOps.mirror(picture)
    return picture


def smart_resize(
    height: int, width: int, factor: int, min_pixels: float, max_pixels: float
) -> tuple[int, int]:
    """qwen-vl-utils' ``smart_resize``: both sides multiples of ``factor``, the area within
    [``min_pixels``, ``max_pixels``], the aspect ratio kept as closely as possible.

    Example:
        >>> smart_resize(100, 150, 32, 4096, 1843200)
        (96, 160)
    """
    if max(height, width) / min(height, width) > 200:
        raise BindkitError(
            f"image of {width}x{height}: aspect ratio above 200 cannot be resized; crop it"
        )
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = math.floor(height / beta / factor) * factor
        w_bar = math.floor(width / beta / factor) * factor
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


@dataclass(frozen=True)
class ResizeStage:
    """One ``smart_resize`` pass done with PIL's bicubic filter (qwen-vl-utils ``fetch_image``)."""

    factor: int
    min_pixels: int
    max_pixels: int

    def __call__(self, picture: Image.Image) -> Image.Image:
        from PIL import Image

        height, width = smart_resize(
            picture.height, picture.width, self.factor, self.min_pixels, self.max_pixels
        )
        if (width, height) == picture.size:
            return picture
        return picture.resize((width, height), Image.Resampling.BICUBIC)
