"""The tiny-clip architecture: a small pure-torch dual encoder for procedurally rendered scenes.

Both towers end in a *mean* over local features, so an embedding is a bag of local parts; the
parts are what carry binding:

- the image tower is a small conv net (a 4×4 patch stem, then 3×3 conv blocks with GroupNorm);
  a cell of its last 6×6 feature map sees one object with its surface, so it can encode the
  pair (attribute, object) rather than each separately;
- the text tower is a two-layer pre-norm transformer over word tokens with learned positions;
  after attention the token of "heart" in "a striped heart" can carry "striped", so the mean of
  the tokens is a bag of bound pairs, and word order matters (a mean of word vectors could not
  tell "a red cube and a blue sphere" from "a blue cube and a red sphere").

Everything that changes a vector besides the weights is in :class:`TinyClipConfig`, which is
stored next to the weights as ``config.json``. This module imports torch: import it lazily.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional

FORMAT = "bindkit-tiny-clip"
FORMAT_VERSION = 1
PAD, UNK = "<pad>", "<unk>"
_WORD = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True)
class TinyClipConfig:
    """Architecture, tokenizer and preprocessing of a tiny-clip checkpoint.

    Attributes:
        vocabulary: Word list; index 0 must be ``<pad>`` and index 1 ``<unk>``.
        image_size: Images are resized (squashed) to this square size with a box filter.
        patch: Side of the stem's non-overlapping patches (the first feature map is
            ``image_size / patch`` cells wide).
        widths: Channels of the three conv stages; stages 2 and 3 halve the resolution.
        width: Text transformer width.
        layers: Text transformer layers.
        heads: Attention heads per layer.
        max_tokens: Longer texts are truncated to this many words (CLIP truncates at 77 tokens).
        embed_dim: Size of the shared embedding space.
        mean: Pixel mean subtracted after scaling to [0, 1].
        std: Pixel standard deviation divided by.
    """

    vocabulary: tuple[str, ...]
    image_size: int = 96
    patch: int = 4
    widths: tuple[int, int, int] = (32, 64, 128)
    width: int = 128
    layers: int = 2
    heads: int = 4
    max_tokens: int = 80
    embed_dim: int = 128
    mean: float = 0.5
    std: float = 0.25
    format: str = field(default=FORMAT)
    format_version: int = field(default=FORMAT_VERSION)

    def __post_init__(self) -> None:
        if len(self.vocabulary) < 3 or tuple(self.vocabulary[:2]) != (PAD, UNK):
            raise ValueError(f"vocabulary must start with {PAD!r}, {UNK!r} and hold words")
        if len(set(self.vocabulary)) != len(self.vocabulary):
            raise ValueError("vocabulary holds a word twice")
        if self.image_size % (self.patch * 4):
            raise ValueError(
                f"image_size {self.image_size} must be a multiple of 4 × patch ({self.patch})"
            )
        if len(self.widths) != 3 or min(self.widths) < 8 or any(w % 8 for w in self.widths):
            raise ValueError(f"widths {self.widths}: three multiples of 8")
        if self.width % self.heads:
            raise ValueError(f"width {self.width} must be a multiple of heads {self.heads}")
        for name in ("layers", "max_tokens", "embed_dim"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        if self.std <= 0:
            raise ValueError("std must be positive")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["vocabulary"] = list(self.vocabulary)
        data["widths"] = list(self.widths)
        return data

    @classmethod
    def from_json(cls, data: Any) -> TinyClipConfig:
        """Parse ``config.json``; raises ValueError naming the first bad field."""
        if not isinstance(data, dict):
            raise ValueError("config.json must hold a JSON object")
        if data.get("format") != FORMAT or data.get("format_version") != FORMAT_VERSION:
            raise ValueError(
                f"format {data.get('format')!r} version {data.get('format_version')!r} "
                f"(expected {FORMAT!r} version {FORMAT_VERSION})"
            )
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown field {unknown[0]!r}")
        values = dict(data)
        try:
            values["vocabulary"] = tuple(str(w) for w in data["vocabulary"])
            values["widths"] = tuple(int(w) for w in data["widths"])
        except (KeyError, TypeError) as exc:
            raise ValueError(f"vocabulary and widths must be lists ({exc})") from exc
        for name in ("image_size", "patch", "width", "layers", "heads", "max_tokens", "embed_dim"):
            if name in values and (type(values[name]) is not int):
                raise ValueError(f"{name} must be a whole number, got {values[name]!r}")
        return cls(**values)


def words(text: str) -> list[str]:
    """Lower-cased alphanumeric words; punctuation and hyphens separate words."""
    return _WORD.findall(text.lower())


class Tokenizer:
    """Word-level: known words → their index, others → ``<unk>``; pads with ``<pad>`` (0)."""

    def __init__(self, config: TinyClipConfig) -> None:
        self.index = {word: i for i, word in enumerate(config.vocabulary)}
        self.max_tokens = config.max_tokens

    def ids(self, text: str) -> list[int]:
        unk = self.index[UNK]
        found = [self.index.get(w, unk) for w in words(text)][: self.max_tokens]
        return found or [unk]  # an empty text still has one position to pool

    def __call__(self, texts: Sequence[str]) -> torch.Tensor:
        rows = [self.ids(t) for t in texts]
        out = torch.zeros((len(rows), max(len(r) for r in rows)), dtype=torch.long)
        for i, row in enumerate(rows):
            out[i, : len(row)] = torch.tensor(row, dtype=torch.long)
        return out


def image_array(image: Any, size: int) -> np.ndarray:
    """One RGB PIL image → a (size, size, 3) uint8 array (squashed, box filter)."""
    from PIL import Image

    picture = image.convert("RGB") if image.mode != "RGB" else image
    if picture.size != (size, size):
        picture = picture.resize((size, size), Image.Resampling.BOX)
    return np.asarray(picture, dtype=np.uint8)


def pixels(arrays: np.ndarray | torch.Tensor, config: TinyClipConfig) -> torch.Tensor:
    """(B, H, W, 3) uint8 → the (B, 3, H, W) float32 input of the image tower."""
    batch = torch.as_tensor(arrays).permute(0, 3, 1, 2).float() / 255.0
    return (batch - config.mean) / config.std


def _block(cin: int, cout: int, stride: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, stride=stride, padding=1),
        nn.GroupNorm(8, cout),
        nn.GELU(),
    )


class ImageTower(nn.Module):  # type: ignore[misc]
    def __init__(self, config: TinyClipConfig) -> None:
        super().__init__()
        c1, c2, c3 = config.widths
        self.stem = nn.Sequential(
            nn.Conv2d(3, c1, config.patch, stride=config.patch), nn.GroupNorm(8, c1), nn.GELU()
        )
        self.body = nn.Sequential(
            _block(c1, c1, 1),
            _block(c1, c2, 2),
            _block(c2, c2, 1),
            _block(c2, c3, 2),
            _block(c3, c3, 1),
        )
        self.proj = nn.Linear(c3, config.embed_dim)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        features = self.body(self.stem(images))
        return self.proj(features.mean(dim=(2, 3)))


class _Layer(nn.Module):  # type: ignore[misc]
    """Pre-norm transformer layer; padding keys are masked out."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width)
        )

    def forward(self, x: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
        b, t, w = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, w // self.heads).unbind(2)
        attended = functional.scaled_dot_product_attention(
            q.transpose(1, 2),
            k.transpose(1, 2),
            v.transpose(1, 2),
            attn_mask=keep[:, None, None, :],
        )
        x = x + self.out(attended.transpose(1, 2).reshape(b, t, w))
        return x + self.mlp(self.norm2(x))


class TextTower(nn.Module):  # type: ignore[misc]
    def __init__(self, config: TinyClipConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(len(config.vocabulary), config.width, padding_idx=0)
        self.position = nn.Embedding(config.max_tokens, config.width)
        self.layers = nn.ModuleList(
            _Layer(config.width, config.heads) for _ in range(config.layers)
        )
        self.norm = nn.LayerNorm(config.width)
        self.proj = nn.Linear(config.width, config.embed_dim)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        keep = ids != 0
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.embed(ids) + self.position(positions)[None]
        for layer in self.layers:
            x = layer(x, keep)
        x = self.norm(x)
        weights = keep.unsqueeze(-1).to(x.dtype)
        pooled = (x * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1.0)
        return self.proj(pooled)


class TinyClip(nn.Module):  # type: ignore[misc]
    """The dual encoder; ``encode_*`` return unnormalised vectors, ``logit_scale`` is log(1/T)."""

    # bindkit.adapters.lora puts LoRA on this module itself (text.layers.N.{qkv,out}; never visual)
    supports_lora = True

    def __init__(self, config: TinyClipConfig) -> None:
        super().__init__()
        self.config = config
        self.visual = ImageTower(config)
        self.text = TextTower(config)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def encode_image(self, images: torch.Tensor) -> torch.Tensor:
        return self.visual(images)

    def encode_text(self, ids: torch.Tensor) -> torch.Tensor:
        return self.text(ids)


def parameter_count(model: nn.Module) -> int:
    return sum(int(p.numel()) for p in model.parameters())
