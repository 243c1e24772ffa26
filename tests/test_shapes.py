"""Published model shapes with random weights (``bindkit.embed.shapes``): the folders load as
real checkpoints do, the weights are seeded, and (slow) the 2B shape embeds and trains one LoRA
step on the CPU in bf16."""

from __future__ import annotations

import json
import resource
from pathlib import Path

import numpy as np
import pytest

from bindkit.embed.shapes import RANDOM_WEIGHTS_FILE, SHAPES, get_shape, shape_spec, write_shape
from bindkit.errors import BindkitError

transformers = pytest.importorskip("transformers")


@pytest.mark.parametrize("name", [n for n, s in SHAPES.items() if s.family != "st"])
def test_a_multimodal_shape_is_the_published_config_with_the_tokenizer_ids(
    name: str, tmp_path: Path
) -> None:
    folder = write_shape(name, tmp_path / name)
    published = SHAPES[name].read_config()
    config = transformers.AutoConfig.from_pretrained(str(folder))
    text = published.get("text_config", published)
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads"):
        assert getattr(config.text_config, key) == text[key]
    assert config.text_config.vocab_size == 151936  # the embedding matrix keeps its size
    assert config.vision_config.depth == published["vision_config"]["depth"]
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(folder))
    assert tokenizer.convert_tokens_to_ids("<|image_pad|>") == config.image_token_id
    assert tokenizer.convert_tokens_to_ids("<|vision_start|>") == config.vision_start_token_id
    assert not any(folder.glob("*.safetensors"))  # kilobytes: the weights are built at load


def test_a_folder_is_reused_only_for_its_own_shape_and_seed(tmp_path: Path) -> None:
    spec = shape_spec("qwen3-vl-embedding-2b", tmp_path)
    assert spec == f"qwen3-vl-embedding:{tmp_path / 'qwen3-vl-embedding-2b-seed0'}"
    assert shape_spec("qwen3-vl-embedding-2b", tmp_path) == spec
    with pytest.raises(BindkitError, match="is not the qwen2-vl-2b folder of seed 0"):
        write_shape("qwen2-vl-2b", tmp_path / "qwen3-vl-embedding-2b-seed0")
    with pytest.raises(BindkitError, match="did you mean qwen3-vl-embedding-2b"):
        get_shape("qwen3-vl-embeding-2b")


def _shrunk(tmp_path: Path, seed: int) -> Path:
    """The 2B folder with the layers cut to a few small ones, so it builds in a second."""
    folder = write_shape("qwen3-vl-embedding-2b", tmp_path / f"s{seed}", seed=seed)
    config = json.loads((folder / "config.json").read_text())
    config["text_config"].update(
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        head_dim=16,
        vocab_size=2000,
        rope_scaling={
            "mrope_interleaved": True,
            "mrope_section": [4, 2, 2],
            "rope_type": "default",
        },
    )
    config["vision_config"].update(
        depth=2,
        hidden_size=32,
        intermediate_size=64,
        num_heads=2,
        out_hidden_size=64,
        deepstack_visual_indexes=[1],
    )
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def test_random_weights_are_seeded(tmp_path: Path) -> None:
    from bindkit.embed.registry import load_embedder

    texts = ["a red cube and a blue kite", "a blue cube and a red kite"]
    vectors = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        folder = _shrunk(tmp_path / name, seed)
        embedder = load_embedder(f"qwen3-vl-embedding:{folder}", cache=False, progress=False)
        vectors[name] = embedder.embed_texts(texts)
        assert (folder / RANDOM_WEIGHTS_FILE).is_file()
    np.testing.assert_array_equal(vectors["a"], vectors["b"])
    assert not np.allclose(vectors["a"], vectors["c"])


@pytest.mark.slow  # 8 s: 22.7M random weights written to disk
def test_the_text_encoder_shape_carries_its_weights(tmp_path: Path) -> None:
    from bindkit.embed.registry import load_embedder

    spec = shape_spec("all-minilm-l6-v2", tmp_path)
    assert spec.startswith("st:")
    embedder = load_embedder(spec, cache=False, progress=False)
    assert embedder.embed_texts(["a red cube"]).shape == (1, 384)


def _peak_rss_gib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / (1 << 20)


@pytest.mark.slow  # about 5 minutes on 2 cores: 2.1B parameters built, embedded and trained
def test_the_2b_shape_embeds_and_trains_a_lora_step_on_the_cpu(tmp_path: Path) -> None:
    from PIL import Image

    from bindkit.embed.registry import load_embedder
    from bindkit.train.config import TrainConfig
    from bindkit.train.trainer import train_triplets

    spec = shape_spec("qwen3-vl-embedding-2b", tmp_path) + "+dtype=bfloat16"
    embedder = load_embedder(spec, cache=False, progress=False)
    texts = ["a red cube beside a blue kite", "a blue cube beside a red kite"]
    images = [Image.new("RGB", (96, 96), c) for c in ("red", "blue")]
    for vectors in (embedder.embed_texts(texts), embedder.embed_images(images)):
        assert vectors.shape == (2, 2048) and np.isfinite(vectors).all()
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)
    del embedder
    rows = [
        {"query": t, "positive": t + ".", "negative": texts[1 - i] + "."}
        for i, t in enumerate(texts)
    ]
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    record = train_triplets(
        TrainConfig(
            model=spec,
            train=str(data),
            out=str(tmp_path / "run"),
            batch_size=2,
            max_steps=1,
            gradient_checkpointing=True,
            model_dropout=False,
            lines=False,
            progress=False,
            save_every=0,
        )
    )
    assert record["optimizer_steps"] == 1
    assert (tmp_path / "run" / "adapter-raw" / "adapter_model.safetensors").is_file()
    assert _peak_rss_gib() < 8
