"""open_clip dual encoders on a tiny random model built from a config.

open_clip imports torchvision at import time; where torchvision cannot be imported (the CPU torch
wheels of CI), a stand-in module lets open_clip import. bindkit itself never calls torchvision:
it preprocesses with PIL (tested below against the definition of open_clip's eval transform).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("PIL")
from PIL import Image

from bindkit.embed.backends.open_clip import (
    Preprocess,
    import_open_clip,
    preprocess,
    resize_and_crop,
    stand_in_torchvision,
)

TINY = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32, "heads": 4, "layers": 1},
}


_stand_in_torchvision = stand_in_torchvision  # other test modules import these names
_import_open_clip = import_open_clip


@pytest.fixture(scope="module")
def tiny_clip(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if importlib.util.find_spec("open_clip") is None:
        pytest.skip("open_clip_torch is not installed (pip install 'bindkit[clip]')")
    open_clip = _import_open_clip()

    config = tmp_path_factory.mktemp("clip") / "TinyCLIP.json"
    config.write_text(json.dumps(TINY))
    open_clip.add_model_config(config)
    from bindkit.embed import load_embedder

    return load_embedder("open_clip:TinyCLIP", cache=False, progress=False)


def test_text_and_image_embeddings(tiny_clip: Any, tmp_path: Path) -> None:
    texts = tiny_clip.embed_texts(["a red cube", "a blue kite"])
    rng = np.random.default_rng(0)
    pic = Image.fromarray((rng.random((48, 64, 3)) * 255).astype("uint8"))
    pic.save(tmp_path / "p.png")
    pics = tiny_clip.embed_images([pic, tmp_path / "p.png"])
    assert texts.shape == (2, 16) and pics.shape == (2, 16)
    np.testing.assert_allclose(pics[0], pics[1], atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(texts, axis=1), 1, atol=1e-5)
    assert tiny_clip.describe()["images"]["size"] == [32, 32]


def test_preprocess_matches_the_eval_transform_definition() -> None:
    mean, std = (0.5, 0.4, 0.3), (0.2, 0.25, 0.5)
    cfg = Preprocess(size=(32, 32), mean=mean, std=std)
    flat = Image.new("RGB", (64, 48), (255, 128, 0))
    out = preprocess(flat, cfg)
    assert out.shape == (3, 32, 32)
    expected = (np.array([255, 128, 0]) / 255 - np.array(mean)) / np.array(std)
    np.testing.assert_allclose(out[:, 16, 16], expected, atol=1e-2)
    # torchvision Resize(32) on 64 x 48: the long side is int(32 * 64 / 48) = int(42.67) = 42
    # (truncated, not rounded); CenterCrop(32): left = int(round((42 - 32) / 2)) = 5
    rng = np.random.default_rng(1)
    pic = Image.fromarray((rng.random((48, 64, 3)) * 255).astype("uint8"))
    resized = pic.resize((42, 32), Image.Resampling.BICUBIC).crop((5, 0, 37, 32))
    manual = (np.asarray(resized, dtype=np.float32) / 255 - mean) / std
    np.testing.assert_allclose(preprocess(pic, cfg), manual.transpose(2, 0, 1), atol=1e-5)
    # an odd margin: 64 x 45 -> 45 x 32 (int(45.5)); left = int(round(13 / 2)) = round(6.5) = 6
    odd = Image.fromarray((rng.random((45, 64, 3)) * 255).astype("uint8"))
    expected_odd = odd.resize((45, 32), Image.Resampling.BICUBIC).crop((6, 0, 38, 32))
    assert np.array_equal(np.asarray(resize_and_crop(odd, cfg)), np.asarray(expected_odd))


def test_resize_modes_interpolation_and_fill() -> None:
    rng = np.random.default_rng(2)
    pic = Image.fromarray((rng.random((30, 60, 3)) * 255).astype("uint8"))
    squash = resize_and_crop(pic, Preprocess(size=(32, 32), resize_mode="squash"))
    assert np.array_equal(
        np.asarray(squash), np.asarray(pic.resize((32, 32), Image.Resampling.BICUBIC))
    )
    bilinear = resize_and_crop(
        pic, Preprocess(size=(32, 32), resize_mode="squash", interpolation="bilinear")
    )
    assert np.array_equal(
        np.asarray(bilinear), np.asarray(pic.resize((32, 32), Image.Resampling.BILINEAR))
    )
    # longest: 60 x 30 -> 32 x 16, padded with fill_color to 32 x 32 (8 rows above, 8 below)
    longest = resize_and_crop(pic, Preprocess(size=(32, 32), resize_mode="longest", fill_color=7))
    inner = pic.resize((32, 16), Image.Resampling.BICUBIC)
    array = np.asarray(longest)
    assert array.shape == (32, 32, 3)
    assert (array[:8] == 7).all() and (array[24:] == 7).all()
    assert np.array_equal(array[8:24], np.asarray(inner))


def test_preprocess_cfg_is_read_and_recorded(tiny_clip: Any) -> None:
    cfg = Preprocess.from_cfg(
        {"size": 32, "resize_mode": "squash", "interpolation": "bilinear", "fill_color": 3}
    )
    assert (cfg.resize_mode, cfg.interpolation, cfg.fill_color) == ("squash", "bilinear", 3)
    from bindkit.errors import BindkitError

    with pytest.raises(BindkitError, match="resize_mode='crop'"):
        Preprocess.from_cfg({"size": 32, "resize_mode": "crop"})
    images = tiny_clip.describe()["images"]
    assert (images["resize_mode"], images["interpolation"]) == ("shortest", "bicubic")
    assert (images["exif"], images["alpha_on_white"]) == (False, False)  # open_clip's loaders


def test_open_clip_loads_without_a_working_torchvision(tmp_path: Path) -> None:
    """The README's install (open_clip without its dependencies) gives a working open_clip in a
    fresh interpreter: bindkit's backend imports it, not only the tests' stand-in."""
    import subprocess
    import sys

    if importlib.util.find_spec("open_clip") is None:
        pytest.skip("open_clip_torch is not installed")
    config = tmp_path / "TinyCLIP.json"
    config.write_text(json.dumps(TINY))
    code = (
        "import sys\n"
        "from bindkit import load_embedder\n"
        "from bindkit.errors import BindkitError\n"
        "try:\n"
        "    load_embedder('open_clip:TinyCLIP', cache=False)\n"
        "except BindkitError as exc:\n"
        "    print('first:', exc)\n"
        "import open_clip\n"
        "open_clip.add_model_config(sys.argv[1])\n"
        "e = load_embedder('open_clip:TinyCLIP', cache=False, progress=False)\n"
        "print('shape:', e.embed_texts(['a red cube']).shape)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(config)], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "cannot load" in done.stdout and "needs open_clip_torch" not in done.stdout
    assert "shape: (1, 16)" in done.stdout
