"""Embedder edges as their references handle them (issue 20, finding 13): VLM2Vec's tiny-image
rule, transparency per family, open_clip's resize-then-convert order, and a full-file weights
digest that stays cheap."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("PIL")
from PIL import Image

from bindkit.embed.images import load_image


def _rgba(path: Path) -> Path:
    """Left half opaque blue, right half fully transparent red."""
    image = Image.new("RGBA", (40, 30), (255, 0, 0, 0))
    image.paste((0, 0, 255, 255), (0, 0, 20, 30))
    image.save(path)
    return path


def test_vlm2vec_squares_an_image_with_a_side_under_28_pixels() -> None:
    from bindkit.embed.backends.mllm import vlm2vec_min_side

    assert vlm2vec_min_side(Image.new("RGB", (20, 90))).size == (56, 56)
    assert vlm2vec_min_side(Image.new("RGB", (90, 27))).size == (56, 56)
    kept = Image.new("RGB", (28, 90))
    assert vlm2vec_min_side(kept) is kept


def test_vlm2vec_prepare_image_applies_the_rule_and_other_families_do_not() -> None:
    pytest.importorskip("torch")
    from bindkit.embed.backends.mllm import FAMILY_DEFAULTS, MLLMEmbedder

    for family, expected in (("vlm2vec", (56, 56)), ("mllm", (20, 90))):
        embedder = object.__new__(MLLMEmbedder)  # prepare_image reads only these attributes
        embedder.defaults, embedder.square, embedder.stages = FAMILY_DEFAULTS[family], None, ()
        assert embedder.prepare_image(Image.new("RGB", (20, 90))).size == expected


def test_transparency_follows_each_reference(tmp_path: Path) -> None:
    from bindkit.embed.backends.mllm import FAMILY_DEFAULTS

    path = _rgba(tmp_path / "a.png")
    on_white = {"vlm2vec": True, "qwen3-vl-embedding": True, "gme": False}
    for family, white in on_white.items():
        policy = FAMILY_DEFAULTS[family].policy
        assert policy.alpha_on_white is white, family
        pixel = load_image(path, policy).getpixel((30, 10))  # the transparent red half
        assert pixel == ((255, 255, 255) if white else (255, 0, 0)), family


def test_open_clip_resizes_in_the_images_mode_then_converts(tmp_path: Path) -> None:
    from bindkit.embed.backends.open_clip import (
        OpenClipEmbedder,
        Preprocess,
        preprocess,
        resize_and_crop,
    )

    path = _rgba(tmp_path / "a.png")
    opened = load_image(path, OpenClipEmbedder.image_policy)
    assert opened.mode == "RGBA"  # the backend converts after its resize, as open_clip does
    cfg = Preprocess(size=(16, 16))
    reference = resize_and_crop(opened, cfg).convert("RGB")  # Resize, CenterCrop, to RGB
    expected = (np.asarray(reference, np.float32) / 255 - cfg.mean) / cfg.std
    np.testing.assert_allclose(preprocess(opened, cfg), expected.transpose(2, 0, 1), atol=1e-6)
    converted_first = resize_and_crop(opened.convert("RGB"), cfg)
    assert not np.array_equal(np.asarray(reference), np.asarray(converted_first))
    padded = Preprocess(size=(16, 16), resize_mode="longest", fill_color=7)
    assert preprocess(Image.new("L", (30, 10), 200), padded).shape == (3, 16, 16)


def test_weights_digest_reads_every_byte_and_is_remembered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import bindkit._io
    from bindkit.embed import weights

    monkeypatch.setenv("BINDKIT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(weights, "_remembered", {})
    path = tmp_path / "model.safetensors"
    data = bytearray(os.urandom(6 << 20))
    path.write_bytes(bytes(data))
    hashed: list[Path] = []
    real = bindkit._io.sha256_file
    monkeypatch.setattr(bindkit._io, "sha256_file", lambda p: hashed.append(p) or real(p))
    first = weights.file_digest(path)
    assert first == real(path)[:24] and len(hashed) == 1
    assert weights.file_digest(path) == first and len(hashed) == 1  # remembered in memory
    monkeypatch.setattr(weights, "_remembered", {})  # a new process: read from the cache dir
    assert weights.file_digest(path) == first and len(hashed) == 1
    assert (tmp_path / "cache" / weights.DIGESTS_FILE).is_file()
    data[3 << 20] ^= 0xFF  # one byte in the middle, same size
    stat = path.stat()
    path.write_bytes(bytes(data))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))
    assert weights.file_digest(path) != first and len(hashed) == 2


def test_weights_digest_survives_a_read_only_cache_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.embed import weights

    blocked = tmp_path / "file-not-dir"
    blocked.write_text("x")
    monkeypatch.setenv("BINDKIT_CACHE_DIR", str(blocked))
    monkeypatch.setattr(weights, "_remembered", {})
    path = tmp_path / "w.bin"
    path.write_bytes(b"weights")
    assert len(weights.file_digest(path)) == 24


def test_an_image_ref_takes_a_str_path(tmp_path: Path) -> None:
    """The README's ImageRef("scene.png", flip=True): a str path is a Path, same key as one."""
    from bindkit.embed.images import ImageRef, content_key

    Image.new("RGB", (8, 6), (200, 10, 10)).save(tmp_path / "scene.png")
    text, path = (
        ImageRef(str(tmp_path / "scene.png"), flip=True),
        ImageRef(tmp_path / "scene.png", True),
    )
    assert isinstance(text.path, Path) and text == path
    assert content_key(text) == content_key(path) != content_key(ImageRef(tmp_path / "scene.png"))
