"""builtin:tiny-vlm: the packaged Qwen3-VL loads through the real qwen3-vl-embedding backend and
embeds both modalities; its folder is validated; text-only LoRA leaves the vision tower
bit-identical; the training script is reproducible."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from bindkit.embed.backends.builtin import EMBEDDER_FILE, builtin_dir, read_embedder_file
from bindkit.embed.registry import load_embedder
from bindkit.errors import BindkitError

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from bindkit.embed.backends.mllm import MLLMEmbedder  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "A red cube.",
    "A striped heart and a transparent cylinder.",
    "A golden star, a matte torus, a wooden cone and a glowing ring.",
]


@pytest.fixture(scope="module")
def model() -> MLLMEmbedder:
    embedder = load_embedder("builtin:tiny-vlm", cache=False, progress=False)
    assert isinstance(embedder, MLLMEmbedder)
    return embedder


@pytest.fixture(scope="module")
def scenes() -> list[Image.Image]:
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.render.procedural import ProceduralBackend
    from bindkit.saber.vocab import load_vocabulary

    mcqs = build_saber(SaberOptions(seed=5, per_n=2, n_min=2, n_max=3), load_vocabulary("shapes"))
    backend = ProceduralBackend(size=256)
    return [backend.render(mcq.query, mcq) for mcq in mcqs]


def _script() -> ModuleType:
    from bindkit.builtin import tiny_vlm

    return tiny_vlm


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "ckpt"
    shutil.copytree(builtin_dir("tiny-vlm"), target)
    return target


# -- the packaged model, through the real backend ---------------------------------------------
def test_loads_through_the_qwen3_vl_embedding_backend(model: MLLMEmbedder) -> None:
    assert model.family == "qwen3-vl-embedding" and model.model_type == "qwen3_vl"
    assert type(model.model).__name__ == "Qwen3VLModel"
    assert model.positions == "mrope" and model.modalities >= {"text", "image"}
    # the family's image pipeline: one smart_resize with factor 32, bounded by embedder.json
    _, options = read_embedder_file(builtin_dir("tiny-vlm"))
    assert [(s.factor, s.max_pixels) for s in model.stages] == [(32, options["max_pixels"])]
    assert not model.processor_resizes
    prompt = model.render("A red cube.", False, "query", None)
    assert prompt.startswith("<|im_start|>system\nRepresent the user's input.<|im_end|>")
    assert prompt.endswith("A red cube.<|im_end|>\n<|im_start|>assistant\n")
    # the shipped weights are fp16 and a few MB
    size = (builtin_dir("tiny-vlm") / "model.safetensors").stat().st_size
    assert size < 8_000_000


def test_embeds_texts_and_images_as_unit_vectors(
    model: MLLMEmbedder, scenes: list[Image.Image]
) -> None:
    texts = model.embed_texts(TEXTS)
    images = model.embed_images(scenes)
    assert texts.shape[0] == len(TEXTS) and images.shape == (len(scenes), texts.shape[1])
    for vectors in (texts, images):
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # a 256-px scene becomes 128 x 128 pixels: (128 / 32)^2 = 16 image tokens
    batch = model.collate(scenes[:1], modality="image", role="document", instruction=None)
    assert int((batch["input_ids"] == model.image_token_id).sum()) == 16


def test_deterministic_and_fingerprint_stable(model: MLLMEmbedder, tmp_path: Path) -> None:
    again = load_embedder("builtin:tiny-vlm", cache=False, progress=False)
    np.testing.assert_array_equal(model.embed_texts(TEXTS), again.embed_texts(TEXTS))
    assert model.fingerprint == again.fingerprint
    # the same folder given as +weights= is the same model; other weights are another
    copy = _copy(tmp_path)
    same = load_embedder(f"builtin:tiny-vlm+weights={copy}", cache=False, progress=False)
    np.testing.assert_array_equal(model.embed_texts(TEXTS), same.embed_texts(TEXTS))
    config = json.loads((copy / "config.json").read_text())
    config["text_config"]["rms_norm_eps"] = 1e-5
    (copy / "config.json").write_text(json.dumps(config))
    other = load_embedder(f"builtin:tiny-vlm+weights={copy}", cache=False, progress=False)
    assert other.fingerprint != model.fingerprint


def test_same_vectors_as_the_qwen3_vl_embedding_spec_on_the_folder(
    model: MLLMEmbedder, scenes: list[Image.Image]
) -> None:
    """builtin:tiny-vlm is exactly what a user's qwen3-vl-embedding:FOLDER spec loads."""
    folder = builtin_dir("tiny-vlm")
    _, options = read_embedder_file(folder)
    spec = f"qwen3-vl-embedding:{folder}+max_pixels={options['max_pixels']}"
    direct = load_embedder(spec, cache=False, progress=False)
    np.testing.assert_array_equal(model.embed_texts(TEXTS), direct.embed_texts(TEXTS))
    np.testing.assert_array_equal(model.embed_images(scenes), direct.embed_images(scenes))


def test_unknown_builtin_names_the_closest(tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match=r"did you mean builtin:tiny-vlm\?"):
        load_embedder("builtin:tiny-vl", cache=False, progress=False)
    with pytest.raises(BindkitError, match="builtin:tiny-vlm"):
        load_embedder("builtin:nothing-like-it", cache=False, progress=False)
    with pytest.raises(BindkitError, match="dim=8: only builtin:tiny-vlm"):
        load_embedder("builtin:tiny-clip+dim=8", cache=False, progress=False)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (None, "embedder.json: missing"),
        ("{", "unreadable"),
        ('{"family": "clip", "options": {}}', "needs"),
        ('{"family": "qwen3-vl-embedding", "options": []}', "needs"),
        ('{"family": "qwen3-vl-embedding", "options": {"layout": "user"}}', "unknown option"),
    ],
)
def test_embedder_file_is_checked(tmp_path: Path, content: str | None, match: str) -> None:
    copy = _copy(tmp_path)
    if content is None:
        (copy / EMBEDDER_FILE).unlink()
    else:
        (copy / EMBEDDER_FILE).write_text(content)
    with pytest.raises(BindkitError, match=match):
        load_embedder(f"builtin:tiny-vlm+weights={copy}", cache=False, progress=False)


# -- text-only training leaves the vision tower alone -------------------------------------------
def _triplets(path: Path) -> Path:
    rows = [
        {"query": "A red cube and a blue cone.", "positive": "A blue cone and a red cube.",
         "negative": "A blue cube and a red cone."},
        {"query": "A striped star and a golden ring.", "positive": "A golden ring and a "
         "striped star.", "negative": "A golden star and a striped ring."},
    ] * 4  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _visual(module: Any) -> dict[str, Any]:
    base = module.get_base_model() if hasattr(module, "get_base_model") else module
    return {k: v.detach().clone() for k, v in base.visual.state_dict().items()}


def test_text_only_lora_leaves_the_vision_tower_bit_identical(
    tmp_path: Path, model: MLLMEmbedder, scenes: list[Image.Image]
) -> None:
    from safetensors.torch import load_file

    from bindkit.train.config import TrainConfig
    from bindkit.train.trainer import train_triplets

    config = TrainConfig(
        model="builtin:tiny-vlm",
        train=str(_triplets(tmp_path / "train.jsonl")),
        out=str(tmp_path / "run"),
        lr=5e-2,  # large, so a leak into the vision tower could not hide
        lora_r=4,
        batch_size=4,
        max_steps=2,
        lines=False,
        model_dropout=False,
        progress=False,
    )
    train_triplets(config)
    adapter = tmp_path / "run" / "adapter-raw"
    # the same options train the same adapter (the demo's table reproduces from it)
    train_triplets(dataclasses.replace(config, out=str(tmp_path / "again")))
    again = tmp_path / "again" / "adapter-raw" / "adapter_model.safetensors"
    assert again.read_bytes() == (adapter / "adapter_model.safetensors").read_bytes()
    saved = load_file(str(adapter / "adapter_model.safetensors"))
    assert saved and not [k for k in saved if "visual" in k]
    assert any("language_model" in k for k in saved)
    tuned = load_embedder(f"builtin:tiny-vlm+adapter={adapter}", cache=False, progress=False)
    before, after = _visual(model.model), _visual(tuned.model)
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)
    # the vision tower's output is the same, yet the image embedding moved: the language
    # model, which reads the image tokens too, was trained
    batch = model.collate(scenes[:2], modality="image", role="document", instruction=None)
    pixels, grid = batch["pixel_values"], batch["image_grid_thw"]
    with torch.no_grad():
        seen = model.model.visual(pixels, grid_thw=grid)
        seen_after = tuned.model.get_base_model().visual(pixels, grid_thw=grid)
    first = seen[0] if isinstance(seen, tuple) else seen.pooler_output
    second = seen_after[0] if isinstance(seen_after, tuple) else seen_after.pooler_output
    assert torch.equal(first, second)
    assert not np.array_equal(model.embed_images(scenes[:2]), tuned.embed_images(scenes[:2]))


# -- the training script ----------------------------------------------------------------------
TINY = {
    "per_n": 2,
    "n_min": 2,
    "n_max": 3,
    "render_size": 64,
    "max_pixels": 64 * 64,
    "steps": 2,
    "batch": 2,
    "warmup": 1,
    "hidden": 24,
    "layers": 1,
    "heads": 2,
    "vision_hidden": 16,
    "vision_depth": 1,
    "vocab_size": 300,
}


def test_script_options_are_checked() -> None:
    script = _script()
    with pytest.raises(BindkitError, match="--steps 0: must be from 1 to 1,000,000"):
        script.TrainConfig(steps=0).check()
    with pytest.raises(BindkitError, match="--hidden 20 / --heads 4"):
        script.TrainConfig(hidden=20, heads=4).check()


def test_training_is_reproducible_byte_for_byte(tmp_path: Path) -> None:
    script = _script()
    config = script.TrainConfig(**TINY)
    first = script.train(config, tmp_path / "a", progress=False)
    second = script.train(config, tmp_path / "b", progress=False)
    for name in script.SHIPPED:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert first["weights_sha256"] == second["weights_sha256"]
    other = script.train(script.TrainConfig(**{**TINY, "seed": 3}), tmp_path / "c", progress=False)
    assert other["weights_sha256"] != first["weights_sha256"]
    # the result loads through the builtin loader and embeds both modalities
    embedder = load_embedder(
        f"builtin:tiny-vlm+weights={tmp_path / 'a'}", cache=False, progress=False
    )
    assert embedder.embed_texts(["A red cube."]).shape == (1, 24)


def test_caption_loss_equals_each_caption_scored_alone(
    model: MLLMEmbedder, scenes: list[Image.Image]
) -> None:
    """The batched captioning term (right-padded rows, captions appended after each prompt) is
    the token-weighted mean of each caption scored alone, unpadded, by the plain model."""
    import torch

    script = _script()
    images = [model.prepare_image(s) for s in scenes[:3]]
    captions = ["a red cube", "a striped heart and a transparent cylinder", "a ring"]
    batch = model.collate(images, modality="image", role="document", instruction=None)
    with torch.no_grad():
        batched = float(script.caption_loss(model, batch, captions))
        total, count = 0.0, 0
        end = model.tokenizer.convert_tokens_to_ids("<|im_end|>")
        embed = model.model.get_input_embeddings().weight
        for image, caption in zip(images, captions, strict=True):
            one = model.collate([image], modality="image", role="document", instruction=None)
            written = model.tokenizer(caption, add_special_tokens=False)["input_ids"] + [end]
            ids = torch.cat([one["input_ids"][0], torch.tensor(written)])[None]
            hidden = model.model(
                input_ids=ids,
                attention_mask=torch.ones_like(ids),
                pixel_values=one["pixel_values"],
                image_grid_thw=one["image_grid_thw"],
                mm_token_type_ids=(ids == model.image_token_id).long(),
            ).last_hidden_state[0]
            start = one["input_ids"].shape[1]
            logits = hidden[start - 1 : -1] @ embed.T  # each caption token from the one before
            total += float(
                torch.nn.functional.cross_entropy(logits, torch.tensor(written), reduction="sum")
            )
            count += len(written)
    assert batched == pytest.approx(total / count, rel=1e-5)


def test_image_and_caption_terms_train_and_stay_reproducible(tmp_path: Path) -> None:
    """The captioning and image↔image terms change what is trained, and equal options still
    give byte-identical weights."""
    script = _script()
    options = {**TINY, "caption_weight": 1.0, "image_weight": 1.0, "image_mcqs": 2}
    first = script.train(script.TrainConfig(**options), tmp_path / "a", progress=False)
    again = script.train(script.TrainConfig(**options), tmp_path / "b", progress=False)
    plain = script.train(script.TrainConfig(**TINY), tmp_path / "c", progress=False)
    assert first["weights_sha256"] == again["weights_sha256"]
    assert first["weights_sha256"] != plain["weights_sha256"]
    caption_only = {**TINY, "caption_weight": 1.0}
    other = script.train(script.TrainConfig(**caption_only), tmp_path / "d", progress=False)
    assert other["weights_sha256"] not in (plain["weights_sha256"], first["weights_sha256"])


def test_model_card_is_the_shipped_one_and_names_the_optional_terms() -> None:
    """The card of the shipped training.json is the shipped card, byte for byte; a run with the
    image term says that swapped images were its hard negatives."""
    from bindkit.builtin.cards import tiny_vlm_card

    folder = builtin_dir("tiny-vlm")
    summary = json.loads((folder / "training.json").read_text("utf-8"))
    assert tiny_vlm_card(summary) == (folder / "README.md").read_text("utf-8")
    summary["config"] = {**summary["config"], "image_weight": 1.0, "caption_weight": 0.5}
    text = tiny_vlm_card(summary)
    assert "in-batch negatives only" not in text
    assert "swapped scenes are in-batch hard negatives for images" in text
    assert "Plus 0.5 × captioning" in text


_PROJ = ("q_proj", "k_proj", "v_proj", "o_proj")


def _linears(*names: str) -> Any:
    return torch.nn.ModuleDict({n: torch.nn.Linear(4, 4) for n in names})


def _decoder() -> Any:
    """Two ``layers.N.self_attn.{q,k,v,o}_proj`` blocks (a Qwen-VL text model, a CLIP tower)."""
    block = lambda: torch.nn.ModuleDict({"self_attn": _linears(*_PROJ)})  # noqa: E731
    return torch.nn.ModuleDict({"layers": torch.nn.ModuleList([block(), block()])})


def _bert() -> Any:
    """One ``layer.0.attention.{self.{query,key,value},output.dense}`` block."""
    attention = {"self": _linears("query", "key", "value"), "output": _linears("dense")}
    block = torch.nn.ModuleDict({"attention": torch.nn.ModuleDict(attention)})
    return torch.nn.ModuleDict({"layer": torch.nn.ModuleList([block])})


def _tree(**towers: Any) -> Any:
    """A plain module carrying LoRA itself (as builtin:tiny-clip does): a text decoder, a BERT
    text encoder and the given towers under ``model.``."""

    class Tree(torch.nn.Module):
        supports_lora = True

        def __init__(self) -> None:
            super().__init__()
            self.model = torch.nn.ModuleDict(
                {
                    "language_model": _decoder(),
                    "text_model": torch.nn.ModuleDict({"encoder": _bert()}),
                    **towers,
                }
            )

    return Tree()


_TEXT_MODULES = sorted(
    [f"model.language_model.layers.{i}.self_attn.{p}" for i in range(2) for p in _PROJ]
    + [
        f"model.text_model.encoder.layer.0.attention.{p}"
        for p in ("self.query", "self.key", "self.value", "output.dense")
    ]
)


def test_no_vision_tower_gets_lora_whatever_its_blocks_are_named() -> None:
    """LoRA goes on the text layers only, also where a vision tower is built of the text
    layers' own module names (``visual.….layers.N.self_attn.q_proj``) or the BERT-style ones
    (``….layer.N.attention.self.query``)."""
    from bindkit.adapters.lora import TARGET_MODULES, add_lora, lora_layers

    visual = torch.nn.ModuleDict({"encoder": _decoder()})
    model = add_lora(_tree(visual=visual, visual_bert=torch.nn.ModuleDict({"encoder": _bert()})))
    adapted = sorted(name for name, _ in lora_layers(model))
    assert adapted == _TEXT_MODULES, adapted
    # the pattern names exactly the targets: the adapter records it, as every earlier run's did
    assert model._bindkit_lora_config.target_modules == TARGET_MODULES


def test_a_vision_tower_named_vision_gets_no_lora_and_the_adapter_names_the_text_modules() -> None:
    """LLaVA-, PaliGemma- or Idefics-style towers (``vision_tower``, ``vision_model``) built of
    the text layers' names get no LoRA; the adapter then lists the text modules by name, so
    loading it back (peft injects by the saved config) adapts them alone too."""
    from peft import inject_adapter_in_model

    from bindkit.adapters.lora import add_lora, lora_layers

    def towers() -> dict[str, Any]:
        siglip = torch.nn.ModuleDict({"vision_model": torch.nn.ModuleDict({"encoder": _decoder()})})
        idefics = torch.nn.ModuleDict({"encoder": _decoder(), "bert": _bert()})
        return {"vision_tower": siglip, "vision_model": idefics}

    model = add_lora(_tree(**towers()))
    assert sorted(name for name, _ in lora_layers(model)) == _TEXT_MODULES
    config = model._bindkit_lora_config
    assert sorted(config.target_modules) == _TEXT_MODULES
    loaded = inject_adapter_in_model(config, _tree(**towers()))
    assert sorted(name for name, _ in lora_layers(loaded)) == _TEXT_MODULES
