"""The multimodal-LLM backends on tiny random Qwen2-VL / Qwen3-VL checkpoints.

Models run in exact float32 on any device (``float32_exact``; bfloat16 is the CUDA default), so
batched and one-by-one results agree to float32 rounding on a GPU too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("PIL")

from PIL import Image

from bindkit.embed import load_embedder
from bindkit.embed.prompts import make_layout

pytestmark = pytest.mark.usefixtures("float32_exact")

TEXTS = ["a red cube", "a striped cube and a transparent kite in a gray room", "kite"]


def images() -> list[Image.Image]:
    rng = np.random.default_rng(0)
    return [
        Image.fromarray((rng.random((h, w, 3)) * 255).astype("uint8"))
        for h, w in ((40, 50), (56, 28), (30, 30))
    ]


def load(spec: str, **options: Any) -> Any:
    options.setdefault("dtype", "float32")
    return load_embedder(spec, cache=False, progress=False, **options)


@pytest.mark.parametrize("family", ["mllm", "gme", "vlm2vec"])
def test_qwen2_vl_text_and_image_shapes(tiny_qwen2_vl: Path, family: str) -> None:
    model = load(f"{family}:{tiny_qwen2_vl}+min_pixels=784+max_pixels=3136")
    # GME's reference takes no video; the others run the Qwen2-VL video path
    assert model.modalities == ({"text", "image"} | ({"video"} if family != "gme" else set()))
    texts = model.embed_texts(TEXTS)
    pics = model.embed_images(images())
    assert texts.shape == (3, 32) and pics.shape == (3, 32)
    np.testing.assert_allclose(np.linalg.norm(pics, axis=1), 1, atol=1e-5)


@pytest.mark.parametrize("checkpoint", ["tiny_qwen2_vl", "tiny_qwen3_vl"])
def test_padding_side_does_not_move_the_pooled_token(
    checkpoint: str, request: pytest.FixtureRequest
) -> None:
    path = request.getfixturevalue(checkpoint)
    right = load(f"mllm:{path}", padding_side="right")
    left = load(f"mllm:{path}", padding_side="left")
    np.testing.assert_allclose(right.embed_texts(TEXTS), left.embed_texts(TEXTS), atol=1e-4)
    np.testing.assert_allclose(right.embed_images(images()), left.embed_images(images()), atol=1e-4)


@pytest.mark.parametrize("checkpoint", ["tiny_qwen2_vl", "tiny_qwen3_vl"])
def test_batched_equals_one_by_one(checkpoint: str, request: pytest.FixtureRequest) -> None:
    path = request.getfixturevalue(checkpoint)
    batched = load(f"mllm:{path}", batch_size=8)
    single = load(f"mllm:{path}", batch_size=1)
    np.testing.assert_allclose(batched.embed_texts(TEXTS), single.embed_texts(TEXTS), atol=1e-4)
    np.testing.assert_allclose(
        batched.embed_images(images()), single.embed_images(images()), atol=1e-4
    )


def test_qwen3_vl_embedding_prompt_and_mrl(tiny_qwen3_vl: Path) -> None:
    model = load(f"qwen3-vl-embedding:{tiny_qwen3_vl}")
    assert model.render("a red cube", False, "query", None) == (
        "<|im_start|>system\nRepresent the user's input.<|im_end|>\n"
        "<|im_start|>user\na red cube<|im_end|>\n<|im_start|>assistant\n"
    )
    with_instruction = model.render(None, True, "query", "Find the matching caption")
    assert with_instruction.startswith("<|im_start|>system\nFind the matching caption.<|im_end|>")
    assert "<|vision_start|><|image_pad|><|vision_end|>" in with_instruction
    full = model.embed_texts(TEXTS)
    short = load(f"qwen3-vl-embedding:{tiny_qwen3_vl}+dim=8").embed_texts(TEXTS)
    assert short.shape == (3, 8)
    truncated = full[:, :8] / np.linalg.norm(full[:, :8], axis=1, keepdims=True)
    np.testing.assert_allclose(short, truncated, atol=1e-5)
    assert model.embed_images(images()).shape == (3, 32)


def test_gme_documents_always_get_the_default_instruction(tiny_qwen2_vl: Path) -> None:
    model = load(f"gme:{tiny_qwen2_vl}")
    query = model.render("x", False, "query", "Find an image.")
    document = model.render("x", False, "document", "Find an image.")
    assert query.startswith("<|im_start|>system\nFind an image.<|im_end|>")
    assert document == (
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
        "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n<|endoftext|>"
    )
    q, d = (
        model.embed_texts(["x"], instruction="Find an image."),
        model.embed_texts(["x"], role="document", instruction="Find an image."),
    )
    assert not np.allclose(q, d)


def test_hierarchical_layout_puts_the_instruction_on_queries_only(tiny_qwen2_vl: Path) -> None:
    model = load(f"mllm:{tiny_qwen2_vl}")  # hierarchical by default
    system = "<|im_start|>system\nRepresent the given text/image in one word.<|im_end|>\n"
    assert model.render("x", False, "document", "Find it.") == (
        system + "<|im_start|>user\nx<|im_end|>\n<|im_start|>assistant\n"
    )
    assert model.render("x", False, "query", "Find it.") == (
        system + "<|im_start|>user\nFind it.\nx<|im_end|>\n<|im_start|>assistant\n"
    )
    # without an instruction the query still gets the user-level reinforcement (+ Q-Rein.)
    assert model.render("x", False, "query", None) == (
        system + "<|im_start|>user\nRepresent the given text/image in one word.\nx<|im_end|>\n"
        "<|im_start|>assistant\n"
    )
    # I_user comes before x for an image too
    assert model.render(None, True, "query", "Find it.") == (
        system + "<|im_start|>user\nFind it.\n<|vision_start|><|image_pad|><|vision_end|>"
        "<|im_end|>\n<|im_start|>assistant\n"
    )


def test_hierarchical_without_an_instruction_differs_from_system(tiny_qwen2_vl: Path) -> None:
    hierarchical = load(f"mllm:{tiny_qwen2_vl}")
    system = load(f"mllm:{tiny_qwen2_vl}+layout=system")
    for has_image, text in ((False, "x"), (True, None)):
        assert hierarchical.render(text, has_image, "query", None) != system.render(
            text, has_image, "query", None
        )
        assert hierarchical.render(text, has_image, "document", None) == system.render(
            text, has_image, "document", None
        )
    assert hierarchical.fingerprint != system.fingerprint
    custom = load(f"mllm:{tiny_qwen2_vl}+user_prompt=Find the caption.")
    assert "user\nFind the caption.\nx" in custom.render("x", False, "query", None)
    assert custom.fingerprint != hierarchical.fingerprint


@pytest.mark.parametrize("layout", ["none", "user"])
def test_the_templates_injected_system_prompt_is_removed(tiny_qwen2_vl: Path, layout: str) -> None:
    """The tiny Qwen2-VL template injects "You are a helpful assistant." like the real one."""
    model = load(f"mllm:{tiny_qwen2_vl}+layout={layout}")
    raw = model.tokenizer.apply_chat_template(
        [{"role": "user", "content": [{"type": "text", "text": "x"}]}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert raw.startswith("<|im_start|>system\nYou are a helpful assistant.<|im_end|>")
    for role in ("query", "document"):
        rendered = model.render("x", False, role, None)  # type: ignore[arg-type]
        assert rendered.startswith("<|im_start|>user\n")
        assert "helpful assistant" not in rendered


@pytest.mark.parametrize(
    ("layout", "query_has_system", "doc_has_system", "query_user", "doc_user"),
    [
        ("none", False, False, None, None),
        ("user", False, False, "Represent the given text/image in one word.", "same"),
        ("system", True, True, None, None),
        ("hierarchical", True, True, "Represent the given text/image in one word.", None),
    ],
)
def test_layouts(
    layout: str,
    query_has_system: bool,
    doc_has_system: bool,
    query_user: str | None,
    doc_user: str | None,
) -> None:
    spec = make_layout(layout)
    query = spec.messages("x", False, "query", None)
    document = spec.messages("x", False, "document", None)
    assert (query[0]["role"] == "system") == query_has_system
    assert (document[0]["role"] == "system") == doc_has_system
    expected_q = f"{query_user}\nx" if query_user else "x"
    assert query[-1]["content"][-1]["text"] == expected_q
    expected_d = expected_q if doc_user == "same" else "x"
    assert document[-1]["content"][-1]["text"] == expected_d


def test_layout_side_overrides_and_prompt_flag(tiny_qwen2_vl: Path) -> None:
    system_q = make_layout("system", system="q")
    assert system_q.messages("x", False, "document", None)[0]["role"] == "user"
    a = load(f"mllm:{tiny_qwen2_vl}+layout=none")
    b = load(f"mllm:{tiny_qwen2_vl}+layout=system")
    assert a.fingerprint != b.fingerprint
    assert not np.allclose(a.embed_texts(TEXTS), b.embed_texts(TEXTS))


def test_image_tokens_match_the_patch_grid(tiny_qwen3_vl: Path) -> None:
    model = load(f"mllm:{tiny_qwen3_vl}")
    pics = images()
    vectors = model.embed_images(pics)  # fails if token count and features disagree
    single = np.stack([model.embed_images([p])[0] for p in pics])
    np.testing.assert_allclose(vectors, single, atol=1e-4)


def test_peft_adapter_changes_the_model_and_the_fingerprint(
    tiny_qwen2_vl: Path, tmp_path: Path
) -> None:
    peft = pytest.importorskip("peft")
    import torch
    from transformers import AutoModel

    base = AutoModel.from_pretrained(tiny_qwen2_vl)
    config = peft.LoraConfig(
        r=2, lora_alpha=2, target_modules=r"^(?!.*visual).*\.layers\.\d+\.self_attn\.(q|v)_proj$"
    )
    lora = peft.get_peft_model(base, config)
    with torch.no_grad():
        for name, param in lora.named_parameters():
            if "lora_B" in name:
                param.fill_(0.5)
    lora.save_pretrained(tmp_path / "adapter")
    plain = load(f"mllm:{tiny_qwen2_vl}")
    adapted = load(f"mllm:{tiny_qwen2_vl}+adapter={tmp_path / 'adapter'}")
    assert plain.fingerprint != adapted.fingerprint
    assert not np.allclose(plain.embed_texts(TEXTS), adapted.embed_texts(TEXTS), atol=1e-4)


def test_a_missing_checkpoint_fails_at_once(tmp_path: Path) -> None:
    from bindkit.errors import BindkitError

    with pytest.raises(BindkitError, match="not a local directory and not a valid hub id"):
        load(f"mllm:{tmp_path}/nonexistent")
    with pytest.raises(BindkitError, match="not in the Hugging Face cache"):
        load("qwen3-vl-embedding:Qwen/Qwen3-VL-Embedding-2B")
