"""Image inputs: paths or PIL images, EXIF orientation honoured, optional horizontal flip."""

from __future__ import annotations

import hashlib
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


ImageInput = Union[str, Path, ImageRef, "Image.Image"]


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


def load_image(image: ImageInput) -> Image.Image:
    """Open an image as RGB with its EXIF orientation applied and the flip, if asked, done."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    ref = as_ref(image)
    if not isinstance(ref, ImageRef):
        return ref.convert("RGB")
    try:
        with Image.open(ref.path) as handle:
            picture = ImageOps.exif_transpose(handle).convert("RGB")
    except FileNotFoundError as exc:
        raise BindkitError(f"{ref.path}: image not found; check the path") from exc
    except (UnidentifiedImageError, OSError) as exc:
        raise BindkitError(f"{ref.path}: unreadable image ({exc}); replace the file") from exc
    if ref.flip:
        picture = ImageOps.mirror(picture)
    return picture
