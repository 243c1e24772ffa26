"""Each multimodal-LLM family against its reference code (../shared/reviews/embedder-fidelity.md).

Where the reference function is importable (qwen-vl-utils' ``smart_resize``, ``fetch_image`` and
``to_rgb``; ``pip install qwen-vl-utils``, in the ``dev`` extra), the tests compare with it.
qwen-vl-utils imports torchvision at import time, which does not import beside the CPU torch
here, so stand-in torchvision modules are installed while it imports (it uses torchvision only
for videos). The token counts pinned below were computed from the reference definition (the
review's tables: merged tokens = resized height x width / factor^2) and agree with qwen-vl-utils.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("PIL")
from PIL import Image

from bindkit.embed import load_embedder
from bindkit.embed.backends.mllm import FAMILY_DEFAULTS
from bindkit.embed.images import ImagePolicy, ResizeStage, load_image, smart_resize
from bindkit.embed.prompts import qwen3_vl_embedding_messages, vlm2vec_prompt

pytestmark = pytest.mark.usefixtures("float32_exact")

SIZES = [(1024, 1024), (640, 480), (2048, 1536), (3000, 2000), (150, 100), (60, 90), (500, 375)]


def load(spec: str, **options: Any) -> Any:
    options.setdefault("dtype", "float32")
    return load_embedder(spec, cache=False, progress=False, **options)


def noise(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray((rng.random((height, width, 3)) * 255).astype("uint8"))


@pytest.fixture(scope="module")
def vision_process() -> Any:
    """qwen_vl_utils.vision_process, imported with stand-in torchvision modules."""
    if importlib.util.find_spec("qwen_vl_utils") is None:
        pytest.skip("qwen-vl-utils is not installed (pip install qwen-vl-utils)")
    from tests.test_embed_open_clip import _stand_in_torchvision

    with _stand_in_torchvision():
        from qwen_vl_utils import vision_process

    return vision_process


# -- resolution ------------------------------------------------------------------------------
def _tokens(stages: list[ResizeStage], width: int, height: int) -> int:
    for stage in stages:
        height, width = smart_resize(
            height, width, stage.factor, stage.min_pixels, stage.max_pixels
        )
    return height * width // stages[-1].factor ** 2


def test_qwen3_vl_embedding_token_counts_match_the_reference() -> None:
    stages = [ResizeStage(32, lo, hi) for lo, hi in FAMILY_DEFAULTS["qwen3-vl-embedding"].stages]
    got = {size: _tokens(stages, *size) for size in SIZES[:6]}
    assert got == {
        (1024, 1024): 1024,
        (640, 480): 300,
        (2048, 1536): 1728,
        (3000, 2000): 1734,
        (150, 100): 15,
        (60, 90): 6,
    }


def test_gme_two_stage_token_counts_match_the_reference() -> None:
    stages = [ResizeStage(28, lo, hi) for lo, hi in FAMILY_DEFAULTS["gme"].stages]
    got = {size: _tokens(stages, *size) for size in [SIZES[i] for i in (0, 1, 6, 2, 4)]}
    assert got == {
        (1024, 1024): 1225,
        (640, 480): 391,
        (500, 375): 266,
        (2048, 1536): 1271,
        (150, 100): 270,
    }


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("factor", [28, 32])
def test_smart_resize_equals_qwen_vl_utils(
    vision_process: Any, size: tuple[int, int], factor: int
) -> None:
    width, height = size
    for low, high in ((4 * factor**2, 16384 * factor**2), (200704, 1003520), (4096, 1843200)):
        expected = vision_process.smart_resize(height, width, factor, low, high)
        assert smart_resize(height, width, factor, low, high) == expected


@pytest.mark.parametrize("size", [(640, 480), (150, 100), (60, 90)])
def test_qwen3_vl_embedding_pixels_equal_fetch_image(
    vision_process: Any, tiny_qwen3_vl: Path, size: tuple[int, int]
) -> None:
    """The tiny Qwen3-VL has the real patch 16 x merge 2, so the reference's factor 32."""
    model = load(f"qwen3-vl-embedding:{tiny_qwen3_vl}")
    picture = noise(*size)
    reference = vision_process.fetch_image(
        {"image": picture, "min_pixels": 4096, "max_pixels": 1843200}, image_patch_size=16
    )
    ours = model.prepare_image(picture)
    assert ours.size == reference.size
    assert np.array_equal(np.asarray(ours), np.asarray(reference))
    ref_pixels = model.image_processor(images=[reference], do_resize=False, return_tensors="pt")
    batch = model.collate([picture], modality="image", role="query", instruction=None)
    np.testing.assert_array_equal(batch["pixel_values"].numpy(), ref_pixels["pixel_values"].numpy())


def test_gme_first_stage_equals_fetch_image(vision_process: Any) -> None:
    first, second = (ResizeStage(28, lo, hi) for lo, hi in FAMILY_DEFAULTS["gme"].stages)
    for size in ((150, 100), (700, 500)):
        picture = noise(*size)
        reference = vision_process.fetch_image({"image": picture})  # gme_inference's call
        assert np.array_equal(np.asarray(first(picture)), np.asarray(reference))
        height, width = vision_process.smart_resize(
            reference.height, reference.width, 28, 256 * 28 * 28, 1280 * 28 * 28
        )
        assert second(first(picture)).size == (width, height)


def test_caller_bounds_replace_the_last_stage(tiny_qwen2_vl: Path) -> None:
    gme = load(f"gme:{tiny_qwen2_vl}+min_pixels=784+max_pixels=3136")
    assert [(s.min_pixels, s.max_pixels) for s in gme.stages] == [(3136, 12845056), (784, 3136)]
    assert gme.max_length == 1800 and gme.positions == "1d"
    default = load(f"gme:{tiny_qwen2_vl}")
    assert default.stages[-1].min_pixels == 200704 and default.stages[-1].max_pixels == 1003520
    assert default.fingerprint != gme.fingerprint


def test_vlm2vec_square_pre_resize(tiny_qwen2_vl: Path) -> None:
    plain = load(f"vlm2vec:{tiny_qwen2_vl}+max_pixels=3136")
    square = load(f"vlm2vec:{tiny_qwen2_vl}+square=56+max_pixels=3136")
    picture = noise(90, 30)
    assert square.prepare_image(picture).size == (56, 56)
    assert plain.prepare_image(picture).size == (90, 30)
    assert plain.fingerprint != square.fingerprint
    assert not np.allclose(plain.embed_images([picture]), square.embed_images([picture]))


# -- image files -----------------------------------------------------------------------------
def test_rgba_is_composited_on_white_like_to_rgb(vision_process: Any, tmp_path: Path) -> None:
    rgba = np.zeros((4, 6, 4), dtype=np.uint8)
    rgba[..., 0] = 200  # hidden red under full transparency...
    rgba[:2, :, 3] = 255  # ...except the top half, which is opaque
    rgba[2, :3, 3] = 128
    Image.fromarray(rgba, "RGBA").save(tmp_path / "a.png")
    white = load_image(tmp_path / "a.png", ImagePolicy(exif=False, alpha_on_white=True))
    with Image.open(tmp_path / "a.png") as handle:
        expected = vision_process.to_rgb(handle)
    assert np.array_equal(np.asarray(white), np.asarray(expected))
    assert white.getpixel((0, 3)) == (255, 255, 255)
    dropped = load_image(tmp_path / "a.png")
    assert dropped.getpixel((0, 3)) == (200, 0, 0)


def test_family_image_policies(tiny_qwen2_vl: Path, tiny_qwen3_vl: Path, tmp_path: Path) -> None:
    picture = Image.new("RGB", (4, 2), (0, 0, 0))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° on display
    picture.save(tmp_path / "rot.jpg", exif=exif, quality=100)
    qwen3 = load(f"qwen3-vl-embedding:{tiny_qwen3_vl}")
    assert qwen3.image_policy == ImagePolicy(exif=False, alpha_on_white=True)
    assert load_image(tmp_path / "rot.jpg", qwen3.image_policy).size == (4, 2)  # as fetch_image
    generic = load(f"mllm:{tiny_qwen2_vl}")
    assert load_image(tmp_path / "rot.jpg", generic.image_policy).size == (2, 4)
    opted = load(f"mllm:{tiny_qwen2_vl}+exif=false")
    assert opted.image_policy.exif is False and opted.fingerprint != generic.fingerprint
    # gme_inference.py's fetch_image drops alpha (convert("RGB")); VLM2Vec hands the opened
    # image to the Qwen2-VL processor, whose convert_to_rgb composites RGBA on white
    assert load(f"gme:{tiny_qwen2_vl}").describe()["images"]["alpha_on_white"] is False
    vlm2vec = load(f"vlm2vec:{tiny_qwen2_vl}").describe()["images"]
    assert vlm2vec["exif"] is False and vlm2vec["alpha_on_white"] is True


# -- prompts and positions -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("instruction", "system"),
    [
        (None, "Represent the user's input."),
        ("   ", "Represent the user's input."),
        ("", "Represent the user's input."),
        ("Find the image", "Find the image."),
        ("  Answer the following question:  ", "Answer the following question:"),
        ("Retrieve (any)", "Retrieve (any)"),
        ('Say "yes"', 'Say "yes"'),
        ("Wait…", "Wait…"),
        ("Find it?", "Find it?"),
        ("找图片。", "找图片。"),
    ],
)
def test_qwen3_vl_embedding_instruction_rule(instruction: str | None, system: str) -> None:
    """The reference appends '.' unless the last character is Unicode punctuation (P*)."""
    messages = qwen3_vl_embedding_messages("x", False, instruction)
    assert messages[0]["content"][0]["text"] == system


@pytest.mark.parametrize(
    ("text", "has_image", "instruction", "expected"),
    [
        ("a cat", True, "Find a caption:", "<|image_pad|>\nFind a caption: a cat\n"),
        (None, True, None, "<|image_pad|>\nRepresent the given image.\n"),
        ("a cat", False, "Find an image:", "Find an image: a cat\n"),
        ("a cat", False, None, "a cat"),
    ],
)
def test_vlm2vec_mmeb_format(
    text: str | None, has_image: bool, instruction: str | None, expected: str
) -> None:
    assert vlm2vec_prompt(text, has_image, "query", instruction) == expected
    without = vlm2vec_prompt(text, has_image, "query", instruction, trailing_newline=False)
    assert without == expected.removesuffix("\n")


def test_vlm2vec_and_gme_use_1d_positions(tiny_qwen2_vl: Path) -> None:
    pictures = [noise(50, 40), noise(28, 56, seed=1)]
    for family in ("vlm2vec", "gme"):
        model = load(f"{family}:{tiny_qwen2_vl}+min_pixels=784+max_pixels=3136")
        batch = model.collate(pictures, modality="image", role="query", instruction=None)
        assert "mm_token_type_ids" not in batch
        mask = batch["attention_mask"]
        expected = (mask.cumsum(-1) - 1).clamp(min=0)
        assert bool((batch["position_ids"] == expected).all())
        mrope = load(f"{family}:{tiny_qwen2_vl}+min_pixels=784+max_pixels=3136+positions=mrope")
        assert "position_ids" not in mrope.collate(
            pictures, modality="image", role="query", instruction=None
        )
        assert mrope.fingerprint != model.fingerprint
        assert not np.allclose(model.embed_images(pictures), mrope.embed_images(pictures))
    vlm2vec = load(f"vlm2vec:{tiny_qwen2_vl}")
    ids = vlm2vec.collate([pictures[0]], modality="image", role="query", instruction=None)
    tokens = vlm2vec.tokenizer.convert_ids_to_tokens(ids["input_ids"][0].tolist())
    assert "<|vision_start|>" not in tokens and tokens[0] == "<|image_pad|>"


def test_qwen3_vl_embedding_keeps_mrope(tiny_qwen3_vl: Path) -> None:
    model = load(f"qwen3-vl-embedding:{tiny_qwen3_vl}")
    batch = model.collate([noise(50, 40)], modality="image", role="query", instruction=None)
    assert "position_ids" not in batch and "mm_token_type_ids" in batch


def test_chat_template_from_chat_template_json(tiny_qwen3_vl: Path, tmp_path: Path) -> None:
    """Checkpoints that keep the template beside the processor, not in the tokenizer config."""
    copy = tmp_path / "ckpt"
    shutil.copytree(tiny_qwen3_vl, copy)
    config_path = copy / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    template = config.pop("chat_template", None)
    (copy / "chat_template.jinja").unlink(missing_ok=True)
    if template is None:  # transformers 5 writes chat_template.jinja instead
        template = (tiny_qwen3_vl / "chat_template.jinja").read_text()
    config_path.write_text(json.dumps(config))
    (copy / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    model = load(f"qwen3-vl-embedding:{copy}")
    reference = load(f"qwen3-vl-embedding:{tiny_qwen3_vl}")
    assert model.render("x", False, "query", None) == reference.render("x", False, "query", None)
    (copy / "chat_template.json").unlink()
    with pytest.raises(Exception, match="no chat template"):
        load(f"qwen3-vl-embedding:{copy}")
