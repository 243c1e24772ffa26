"""The cache key holds everything that changes a vector (the mteb query/document bug class).

Each test embeds with one configuration into a real on-disk cache, then with a configuration
that differs in exactly one thing, and counts what the second model embedded versus what it
took from the cache: a field dropped from the fingerprint or prompt key makes the second model
serve the first one's vectors.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("transformers")
pytest.importorskip("PIL")
from PIL import Image

from bindkit.embed import EmbeddingCache, ImageRef, load_embedder
from bindkit.embed.base import BaseEmbedder

pytestmark = pytest.mark.usefixtures("float32_exact")

TEXTS = ["a red cube", "a striped kite"]


def _pictures(tmp_path: Path) -> list[Path]:
    rng = np.random.default_rng(0)
    paths = []
    for i, (h, w) in enumerate(((40, 50), (56, 28))):
        path = tmp_path / f"p{i}.png"
        Image.fromarray((rng.random((h, w, 3)) * 255).astype("uint8")).save(path)
        paths.append(path)
    return paths


def _model(spec: str, cache: EmbeddingCache) -> Any:
    dtype = {} if spec.startswith(("builtin:", "open_clip:")) else {"dtype": "float32"}
    return load_embedder(spec, cache=cache, progress=False, **dtype)


def _embed(model: Any, inputs: list[Any], modality: str) -> None:
    if modality == "image":
        model.embed_images(inputs)
    else:
        model.embed_texts(inputs)


def _second_run_embeds(
    first: str, second: str, cache: EmbeddingCache, inputs: list[Any], modality: str
) -> tuple[int, int]:
    """(embedded, cached) counts of ``second`` after ``first`` filled the cache; checks that
    ``first`` itself is then served from the cache."""
    model = _model(first, cache)
    _embed(model, inputs, modality)
    _embed(model, inputs, modality)
    assert (model.stats["embedded"], model.stats["cached"]) == (len(inputs), len(inputs))
    model = _model(second, cache)
    _embed(model, inputs, modality)
    return model.stats["embedded"], model.stats["cached"]


@pytest.mark.parametrize(
    ("base", "changed", "modality"),
    [
        ("mllm:{}+min_pixels=784", "mllm:{}+min_pixels=1568", "image"),
        pytest.param(
            *("mllm:{}+max_pixels=3136", "mllm:{}+max_pixels=2352", "image"), marks=pytest.mark.slow
        ),
        ("gme:{}+min_pixels=784+max_pixels=3136", "gme:{}+min_pixels=784+max_pixels=2352", "image"),
        pytest.param(
            *("vlm2vec:{}+max_pixels=3136", "vlm2vec:{}+max_pixels=3136+square=56", "image"),
            marks=pytest.mark.slow,
        ),
        ("mllm:{}", "mllm:{}+positions=1d", "image"),
        pytest.param(*("mllm:{}", "mllm:{}+exif=false", "image"), marks=pytest.mark.slow),
        ("mllm:{}", "mllm:{}+dim=16", "text"),
        ("mllm:{}", "mllm:{}+layout=system", "text"),
        ("mllm:{}", "mllm:{}+user_prompt=Describe it.", "text"),
        pytest.param(*("mllm:{}", "mllm:{}+max_length=4", "text"), marks=pytest.mark.slow),
        ("vlm2vec:{}", "vlm2vec:{}+trailing_newline=false", "image"),
    ],
)
def test_every_option_that_changes_a_vector_changes_the_key(
    tiny_qwen2_vl: Path, tmp_path: Path, base: str, changed: str, modality: str
) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    inputs: list[Any] = _pictures(tmp_path) if modality == "image" else TEXTS
    first, second = base.format(tiny_qwen2_vl), changed.format(tiny_qwen2_vl)
    assert _second_run_embeds(first, second, cache, inputs, modality) == (2, 0)


def test_the_adapter_changes_the_key(tiny_qwen2_vl: Path, tmp_path: Path) -> None:
    peft = pytest.importorskip("peft")
    from transformers import AutoModel

    base = AutoModel.from_pretrained(tiny_qwen2_vl)
    config = peft.LoraConfig(r=2, lora_alpha=2, target_modules=r".*\.layers\.0\.self_attn\.q_proj$")
    peft.get_peft_model(base, config).save_pretrained(tmp_path / "adapter")
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    spec = f"mllm:{tiny_qwen2_vl}"
    adapted = f"{spec}+adapter={tmp_path / 'adapter'}"
    assert _second_run_embeds(spec, adapted, cache, TEXTS, "text") == (2, 0)


def test_role_instruction_and_flip_change_the_key(tiny_qwen2_vl: Path, tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    for family in ("mllm", "gme", "vlm2vec"):
        spec = f"{family}:{tiny_qwen2_vl}+min_pixels=784+max_pixels=3136"
        model = _model(spec, cache)
        model.embed_texts(TEXTS, instruction="Find it.")
        assert model.stats["embedded"] == 2
        model.embed_texts(TEXTS, instruction="Find it.")
        assert model.stats["cached"] == 2  # the same call is served from the cache
        model.embed_texts(TEXTS, instruction="Find them.")
        assert model.stats["embedded"] == 4  # another instruction: embedded again
        model.embed_texts(TEXTS, role="document", instruction="Find it.")
        # vlm2vec's prompt has no role: a document with the same instruction is the same input
        assert model.stats["embedded"] == (4 if family == "vlm2vec" else 6)
    pictures = _pictures(tmp_path)
    model = _model(f"mllm:{tiny_qwen2_vl}", cache)
    plain = model.embed_images(pictures)
    flipped = model.embed_images([ImageRef(p, flip=True) for p in pictures])
    assert model.stats["embedded"] == 4 and model.stats["cached"] == 0
    assert not np.allclose(plain, flipped)


def test_qwen3_vl_embedding_instruction_changes_the_key(
    tiny_qwen3_vl: Path, tmp_path: Path
) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    model = _model(f"qwen3-vl-embedding:{tiny_qwen3_vl}", cache)
    model.embed_texts(TEXTS)
    model.embed_texts(TEXTS, instruction="Find the caption")
    model.embed_texts(TEXTS, instruction="Find the caption.")  # the same prompt after the rule
    assert (model.stats["embedded"], model.stats["cached"]) == (4, 2)


def test_fingerprint_records_the_real_image_pipeline(tiny_qwen2_vl: Path) -> None:
    model = load_embedder(
        f"mllm:{tiny_qwen2_vl}+min_pixels=1568+max_pixels=2352", cache=False, dtype="float32"
    )
    images = model.describe()["images"]
    processor = model.image_processor
    assert (images["shortest_edge"], images["longest_edge"]) == (1568, 2352)
    assert images["mean"] == list(processor.image_mean)
    assert images["std"] == list(processor.image_std)
    assert images["processor_resizes"] is True and images["stages"] == []
    assert model.describe()["positions"] == "mrope"


def _perturbed_copy(source: Path, target: Path, delta: float) -> Path:
    """A copy of a model folder whose first floating-point tensor is shifted by ``delta``."""
    import shutil

    from safetensors.torch import load_file, save_file

    shutil.copytree(source, target)
    if delta:
        (weights,) = target.glob("*.safetensors")
        tensors = load_file(weights)
        name = next(k for k, v in tensors.items() if v.is_floating_point())
        tensors[name] = tensors[name] + delta
        save_file(tensors, weights, metadata={"format": "pt"})
    return target


def test_models_kept_under_a_cache_folder_do_not_share_vectors(
    tiny_qwen2_vl: Path, tmp_path: Path
) -> None:
    """The review's repro: two copies of one model with other weights, both below ``~/.cache``
    (the hub cache, a venv, a training output there), were served each other's vectors, since
    every file below a ``.cache`` in the *absolute* path was skipped from the fingerprint."""
    one = _perturbed_copy(tiny_qwen2_vl, tmp_path / ".cache" / "a" / "model", 0.0)
    other = _perturbed_copy(tiny_qwen2_vl, tmp_path / ".cache" / "b" / "model", 0.5)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    assert _second_run_embeds(f"mllm:{one}", f"mllm:{other}", cache, TEXTS, "text") == (2, 0)
    same = _perturbed_copy(tiny_qwen2_vl, tmp_path / ".cache" / "c" / "model", 0.0)
    twin = _model(f"mllm:{same}", cache)  # equal bytes elsewhere: the same model, reused
    twin.embed_texts(TEXTS)
    assert (twin.stats["embedded"], twin.stats["cached"]) == (0, 2)


def test_adapters_with_one_folder_name_under_a_cache_folder_do_not_share_vectors(
    tiny_qwen2_vl: Path, tmp_path: Path
) -> None:
    peft = pytest.importorskip("peft")
    from transformers import AutoModel

    config = peft.LoraConfig(
        r=2,
        lora_alpha=2,
        target_modules=r".*\.layers\.0\.self_attn\.q_proj$",
        init_lora_weights=False,
    )
    adapters = []
    for run in ("run1", "run2"):
        base = AutoModel.from_pretrained(tiny_qwen2_vl)
        adapter = tmp_path / ".cache" / run / "adapter-raw"
        peft.get_peft_model(base, config).save_pretrained(adapter)  # random, other per run
        adapters.append(f"mllm:{tiny_qwen2_vl}+adapter={adapter}")
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    assert _second_run_embeds(*adapters, cache, TEXTS, "text") == (2, 0)


def test_the_fingerprint_covers_weights_config_and_tokenizer_but_not_the_hub_bookkeeping(
    tmp_path: Path,
) -> None:
    from bindkit.embed.weights import directory_fingerprint

    root = tmp_path / ".cache" / "model"
    (root / ".cache" / "huggingface").mkdir(parents=True)
    for name, text in (("model.safetensors", "w"), ("config.json", "{}"), ("vocab.txt", "a\n")):
        (root / name).write_text(text)
    start = directory_fingerprint(root)
    assert start != directory_fingerprint(tmp_path / "empty")  # nothing was skipped
    (root / ".cache" / "huggingface" / "download.json").write_text("{}")
    (root / "README.md").write_text("a model card")
    assert directory_fingerprint(root) == start
    for name, text in (("vocab.txt", "b\n"), ("config.json", "{ }"), ("model.safetensors", "v")):
        before = directory_fingerprint(root)
        (root / name).write_text(text)
        assert directory_fingerprint(root) != before, name


def _random_adapter(spec: str, out: Path, seed: int) -> Path:
    """A LoRA adapter of ``spec`` with random (non-zero) updates, saved in peft format."""
    import torch

    from bindkit.adapters.lora import add_lora, save_adapter
    from bindkit.train.model import load_trainable

    torch.manual_seed(seed)
    model = add_lora(load_trainable(spec, None).module, seed=seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0.0, 0.5)
    save_adapter(model, out)
    return out


@pytest.mark.parametrize("spec", ["st:default", "builtin:tiny-clip"])
def test_adapter_weights_change_the_key(spec: str, tmp_path: Path) -> None:
    """Two adapters with one folder name and other weights: never each other's vectors."""
    pytest.importorskip("peft")
    one = _random_adapter(spec, tmp_path / "run1" / "adapter-raw", seed=1)
    other = _random_adapter(spec, tmp_path / "run2" / "adapter-raw", seed=2)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    first, second = f"{spec}+adapter={one}", f"{spec}+adapter={other}"
    assert _second_run_embeds(first, second, cache, TEXTS, "text") == (2, 0)


def test_st_max_length_changes_the_key(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    texts = ["a striped cube beside a transparent kite on a wooden table near the window"] * 1
    texts.append("a red cube and a blue sphere and a green cone and a yellow torus")
    assert _second_run_embeds("st:default", "st:default+max_length=4", cache, texts, "text") == (
        2,
        0,
    )


def test_an_image_rewritten_in_place_is_embedded_again(tmp_path: Path) -> None:
    """The key is the file's bytes, not its path: an edited picture is a new input."""
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    pictures = _pictures(tmp_path)
    model = _model("builtin:tiny-clip", cache)
    before = model.embed_images(pictures)
    rng = np.random.default_rng(1)
    Image.fromarray((rng.random((40, 50, 3)) * 255).astype("uint8")).save(pictures[0])
    after = model.embed_images(pictures)
    assert (model.stats["embedded"], model.stats["cached"]) == (3, 1)
    assert not np.allclose(before[0], after[0]) and np.allclose(before[1], after[1])


def test_open_clip_weight_files_with_one_name_do_not_share_vectors(tmp_path: Path) -> None:
    from tests.test_embed_open_clip import TINY, _import_open_clip

    if importlib.util.find_spec("open_clip") is None:
        pytest.skip("open_clip_torch is not installed (pip install 'bindkit[clip]')")
    import json

    import torch

    open_clip = _import_open_clip()
    config = tmp_path / "TinyCLIPKey.json"
    config.write_text(json.dumps(TINY))
    open_clip.add_model_config(config)
    files = []
    for seed in (1, 2):
        torch.manual_seed(seed)
        model = open_clip.create_model("TinyCLIPKey")
        path = tmp_path / f"run{seed}" / "weights.pt"
        path.parent.mkdir()
        torch.save(model.state_dict(), path)
        files.append(f"open_clip:TinyCLIPKey/{path}")
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    assert _second_run_embeds(*files, cache, TEXTS, "text") == (2, 0)


def test_a_real_model_through_the_cache_writer_equals_plain_embedding(
    tiny_qwen2_vl: Path, tmp_path: Path
) -> None:
    """Texts and images of a real backend: the vectors with a cold cache, then a warm one, equal
    plain embedding, and each stored row is its vector's float32 bytes, as the per-batch writer
    stored them (issue 37 item 4)."""
    import sqlite3

    spec = f"mllm:{tiny_qwen2_vl}"
    pictures = _pictures(tmp_path)
    texts = [*TEXTS, "a green glass", "a red cube"]
    plain = load_embedder(spec, cache=False, progress=False, dtype="float32", batch_size=2)
    expected = (plain.embed_texts(texts), plain.embed_images(pictures))
    path = tmp_path / "c.sqlite"
    for run in ("cold", "warm"):
        model = load_embedder(
            spec, cache=EmbeddingCache(path), progress=False, dtype="float32", batch_size=2
        )
        got = (model.embed_texts(texts), model.embed_images(pictures))
        assert all(np.array_equal(a, b) for a, b in zip(got, expected, strict=True)), run
    with sqlite3.connect(path) as conn:
        stored = {bytes(blob) for (blob,) in conn.execute("SELECT vec FROM vectors")}
    rows = [*expected[0], *expected[1]]
    assert stored == {np.ascontiguousarray(v, dtype=np.float32).tobytes() for v in rows}
    assert len(stored) == 5


class _CasedInstructed(BaseEmbedder):
    """A fake backend that reads every character of the text and the instruction, as a cased
    model under mteb's task prompt does, and keeps the base class's prompt key (as
    ``MtebEmbedder`` does)."""

    def __init__(self, cache: EmbeddingCache | None) -> None:
        super().__init__(spec="fake-cased", cache=cache, progress=False)

    def _describe(self) -> dict[str, Any]:
        return {"backend": "fake-cased"}

    def _encode_texts(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        import hashlib

        rows = []
        for text in texts:
            seen = f"{role}\0{instruction}\0{text}".encode()
            seed = int.from_bytes(hashlib.sha256(seen).digest()[:8], "little")
            rows.append(np.random.default_rng(seed).standard_normal(8))
        return np.asarray(rows, dtype=np.float32)


def test_the_base_prompt_key_holds_the_instruction(tmp_path: Path) -> None:
    """A backend without its own prompt key (mteb:) under an instruction sweep: each instruction
    is embedded, never served another instruction's vectors from the cache."""
    assert "prompt_key" not in vars(_CasedInstructed)
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    model = _CasedInstructed(cache)
    find = model.embed_texts(TEXTS, instruction="Find the caption.")
    assert (model.stats["embedded"], model.stats["cached"]) == (2, 0)
    second = _CasedInstructed(cache)
    other = second.embed_texts(TEXTS, instruction="Find the picture.")
    plain = second.embed_texts(TEXTS)
    assert (second.stats["embedded"], second.stats["cached"]) == (4, 0)
    uncached = _CasedInstructed(None)
    assert np.array_equal(other, uncached.embed_texts(TEXTS, instruction="Find the picture."))
    assert np.array_equal(plain, uncached.embed_texts(TEXTS))
    assert not np.allclose(find, other) and not np.allclose(find, plain)
    again = _CasedInstructed(cache)
    assert np.array_equal(again.embed_texts(TEXTS, instruction="Find the caption."), find)
    assert (again.stats["embedded"], again.stats["cached"]) == (0, 2)


def test_texts_differing_only_in_case_or_spaces_keep_their_own_vectors(tmp_path: Path) -> None:
    """The text key is the exact string: a cased model's vector of "A Red cube" is never served
    for "a red cube", nor that of "a red  cube" (within one call or from the cache)."""
    variants = ["a red cube", "A Red Cube", "A RED CUBE", "a red  cube", " a red cube"]
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    model = _CasedInstructed(cache)
    together = model.embed_texts(variants)
    assert (model.stats["embedded"], model.stats["duplicates"]) == (len(variants), 0)
    alone = np.concatenate([_CasedInstructed(None).embed_texts([t]) for t in variants])
    assert np.array_equal(together, alone)
    assert len({row.tobytes() for row in together}) == len(variants)
    for text, vector in zip(variants, together, strict=True):
        again = _CasedInstructed(cache)
        assert np.array_equal(again.embed_texts([text])[0], vector), text
        assert again.stats["cached"] == 1
