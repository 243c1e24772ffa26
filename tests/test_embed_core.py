"""The embedding pipeline without heavy models: bag of words, cache, dedup, OOM back-off,
registry, images."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bindkit.embed import EmbeddingCache, ImageRef, load_embedder
from bindkit.embed.base import BaseEmbedder
from bindkit.embed.images import load_image
from bindkit.embed.registry import list_backends
from bindkit.errors import BindkitError

words = st.lists(
    st.sampled_from(["a", "an", "red", "striped", "cube", "kite", "glass", "the", "and", "of"]),
    min_size=1,
)


@settings(max_examples=100, deadline=None)
@given(tokens=words, data=st.data())
def test_bow_ties_exactly_on_permutations(tokens: list[str], data: st.DataObject) -> None:
    shuffled = data.draw(st.permutations(tokens))
    model = load_embedder("bow", cache=False)
    a, b = model.embed_texts([" ".join(tokens), " ".join(shuffled).upper() + "."])
    assert np.array_equal(a, b)
    assert abs(float(np.linalg.norm(a)) - 1) < 1e-5


def test_bow_separates_different_words() -> None:
    a, b = load_embedder("bow", cache=False).embed_texts(["a red cube", "a blue cube"])
    assert float(a @ b) < 0.99


class Recorder(BaseEmbedder):
    """A fake backend that records every batch it is asked to encode."""

    modalities = frozenset({"text"})

    def __init__(
        self, fail_above: int | None = None, crash_after: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(spec="recorder", **kwargs)
        self.batches: list[list[str]] = []
        self.fail_above = fail_above
        self.crash_after = crash_after
        self.described = 0

    def _describe(self) -> dict[str, Any]:
        self.described += 1
        return {"backend": "recorder"}

    def _encode_texts(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        if self.fail_above is not None and len(texts) > self.fail_above:
            raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")
        if self.crash_after is not None and len(self.batches) == self.crash_after:
            raise KeyboardInterrupt  # a kill in the middle of a call
        self.batches.append(list(texts))
        out = np.zeros((len(texts), 4), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, (len(text) + (role == "document")) % 4] = 1.0
            out[row, (len(text) + 2) % 4] = 0.1 * len(text)
        return out


def test_duplicates_are_embedded_once_and_order_is_kept() -> None:
    model = Recorder(batch_size=2)
    texts = ["bb", "a", "bb", "cccc", "a", "ddd"]
    vectors = model.embed_texts(texts)
    embedded = [t for batch in model.batches for t in batch]
    assert sorted(embedded) == ["a", "bb", "cccc", "ddd"]
    assert embedded == ["cccc", "ddd", "bb", "a"]  # longest first
    reference = Recorder().embed_texts(["bb", "a", "cccc", "ddd"])
    expected = reference[[0, 1, 0, 2, 1, 3]]
    assert np.array_equal(vectors, expected)
    assert model.stats["duplicates"] == 2


def test_cached_equals_uncached_and_second_pass_embeds_nothing(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    texts = [f"text number {i}" for i in range(50)]
    plain = Recorder().embed_texts(texts)
    first = Recorder(cache=cache)
    assert np.array_equal(first.embed_texts(texts), plain)
    second = Recorder(cache=cache)
    assert np.array_equal(second.embed_texts(texts), plain)
    assert second.batches == [] and second.stats["cached"] == 50
    # the role is part of the key: documents are embedded separately
    docs = second.embed_texts(texts, role="document")
    assert len(second.batches) > 0 and not np.array_equal(docs, plain)


def test_the_cache_commits_batch_by_batch(tmp_path: Path) -> None:
    """A run killed after k batches keeps those k batches (reliability issue 11)."""
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    texts = [f"text number {i:02d}" for i in range(20)]
    crashing = Recorder(batch_size=4, crash_after=3, cache=cache)
    with pytest.raises(KeyboardInterrupt):
        crashing.embed_texts(texts)
    done = [t for batch in crashing.batches for t in batch]
    assert len(done) == 12
    resumed = Recorder(batch_size=4, cache=EmbeddingCache(tmp_path / "c.sqlite"))
    vectors = resumed.embed_texts(texts)
    assert resumed.stats["cached"] == 12 and resumed.stats["embedded"] == 8
    assert not set(done) & {t for batch in resumed.batches for t in batch}
    assert np.array_equal(vectors, Recorder().embed_texts(texts))


def test_cache_writes_from_the_background_thread_fail_loudly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")

    def disk_full(*_: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(EmbeddingCache, "put_many", disk_full)
    with pytest.raises(sqlite3.OperationalError, match="disk is full"):
        Recorder(cache=cache, batch_size=2).embed_texts(["a", "b", "c"])


def test_describe_runs_once() -> None:
    model = Recorder()
    first = model.describe()
    first["backend"] = "mutated by a caller"
    assert model.fingerprint and model.describe() == {"backend": "recorder"}
    assert model.described == 1


def test_default_batch_size_per_device() -> None:
    torch = pytest.importorskip("torch")
    from bindkit.embed.backends._torch import default_batch_size

    small = torch.nn.Linear(10, 10)
    large = torch.nn.Embedding(1_000_000, 200, device="meta")  # counted, never allocated
    assert default_batch_size("cpu", small) == 32
    assert default_batch_size("cuda:0", small) == 256
    assert default_batch_size("cuda", large) == 128  # 200 M parameters
    assert Recorder().suggested_batch_size() == 32
    model = Recorder()
    model.suggested_batch_size = lambda: 3  # type: ignore[method-assign]
    model.embed_texts([f"t{i}" for i in range(7)])
    assert [len(b) for b in model.batches] == [3, 3, 1]
    chosen = Recorder(batch_size=5)
    chosen.suggested_batch_size = lambda: 3  # type: ignore[method-assign]
    chosen.embed_texts([f"t{i}" for i in range(7)])
    assert [len(b) for b in chosen.batches] == [5, 2]


def test_cache_write_is_all_or_nothing(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    good = {"k1": np.ones(3, dtype=np.float32)}
    cache.put_many("m", "p", good)
    bad = {"k2": np.ones(3, dtype=np.float32), "k3": object()}
    with pytest.raises((TypeError, ValueError)):
        cache.put_many("m", "p", bad)  # type: ignore[arg-type]
    assert set(cache.get_many("m", "p", ["k1", "k2", "k3"])) == {"k1"}
    # a truncated blob (written by something else) is ignored, not returned
    with sqlite3.connect(tmp_path / "c.sqlite") as conn:
        conn.execute("INSERT INTO vectors VALUES ('m', 'p', 'k4', X'0102')")
    assert "k4" not in cache.get_many("m", "p", ["k4"])


def test_cache_clear_per_model(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path / "c.sqlite")
    a, b = Recorder(cache=cache), load_embedder("bow", cache=cache)
    a.embed_texts(["x", "y"])
    b.embed_texts(["x"])
    counts = {spec: n for _, spec, n in cache.models()}
    assert counts == {"recorder": 2, "bow": 1}
    assert cache.clear([a.fingerprint]) == 2
    assert {spec for _, spec, _ in cache.models()} == {"bow"}


def test_out_of_memory_backs_off_and_gives_the_same_vectors() -> None:
    texts = [f"t{i}" * (i + 1) for i in range(20)]
    model = Recorder(batch_size=16, fail_above=3)
    vectors = model.embed_texts(texts)
    assert model.batch_size == 2
    assert all(len(b) <= 3 for b in model.batches)
    assert np.array_equal(vectors, Recorder(batch_size=1).embed_texts(texts))
    with pytest.raises(RuntimeError, match="out of memory"):
        Recorder(batch_size=1, fail_above=0).embed_texts(["x"])


def test_fingerprint_covers_options() -> None:
    assert load_embedder("bow", cache=False).fingerprint == load_embedder("bow").fingerprint
    assert load_embedder("bow+dim=64", cache=False).fingerprint != load_embedder("bow").fingerprint
    assert load_embedder("bow", dim=64).embed_texts(["x"]).shape == (1, 64)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("bwo", "unknown model backend 'bwo'.*did you mean bow"),
        ("st", "needs an argument, e.g. st:default"),
        ("bow:x", "bow takes no argument"),
        ("bow+dimm=3", "unknown option 'dimm' \\(did you mean dim\\?\\)"),
        ("bow+dim", "option 'dim' must look like KEY=VALUE"),
        ("", "empty model spec"),
        ("bow+dim=0", r"bow: dim=0: use a whole number from 1 to 65,536"),
        ("bow+dim=-5", r"dim=-5: use a whole number from 1"),
        ("bow+dim=abc", r"dim='abc': use a whole number"),
        ("bow+dim=2.5", r"dim=2.5: use a whole number"),
        ("bow+dim=1000000000", r"dim=1000000000: use a whole number from 1 to 65,536"),
        ("bow+dim=3+dim=4", "option 'dim' is given twice"),
        ("bow+batch_size=0", "batch_size=0: use a whole number of at least 1"),
    ],
)
def test_spec_errors(spec: str, message: str) -> None:
    with pytest.raises(BindkitError, match=message):
        load_embedder(spec, cache=False)


def test_modality_and_role_errors() -> None:
    model = load_embedder("bow", cache=False)
    with pytest.raises(BindkitError, match="cannot embed images"):
        model.embed_images(["x.png"])
    with pytest.raises(BindkitError, match="role 'passage'"):
        model.embed_texts(["x"], role="passage")  # type: ignore[arg-type]


def test_list_backends_names_every_family() -> None:
    names = {row["name"] for row in list_backends()}
    assert {"st", "bow", "open_clip", "qwen3-vl-embedding", "gme", "vlm2vec", "mllm"} <= names


def test_entry_point_plugins_are_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakeEntryPoint:
        name, value = "toy", "toy_pkg:factory"

        def load(self) -> Any:
            return lambda arg, **options: ("toy", arg, sorted(options))

    monkeypatch.setattr("bindkit.embed.registry.entry_points", lambda group: [FakeEntryPoint()])
    assert load_embedder("toy:abc", cache=False)[:2] == ("toy", "abc")  # type: ignore[index]
    assert any(row["name"] == "toy" for row in list_backends())


def test_images_exif_flip_and_errors(tmp_path: Path) -> None:
    pil = pytest.importorskip("PIL.Image")
    picture = pil.new("RGB", (4, 2), (0, 0, 0))
    picture.putpixel((0, 0), (255, 0, 0))
    exif = pil.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise on display
    picture.save(tmp_path / "rot.jpg", exif=exif, quality=100)
    picture.save(tmp_path / "plain.png")
    assert load_image(tmp_path / "rot.jpg").size == (2, 4)
    flipped = load_image(ImageRef(tmp_path / "plain.png", flip=True))
    assert flipped.getpixel((3, 0)) == (255, 0, 0)
    with pytest.raises(BindkitError, match=r"missing\.png: image not found"):
        load_image(tmp_path / "missing.png")
    (tmp_path / "bad.png").write_bytes(b"not an image")
    with pytest.raises(BindkitError, match=r"bad\.png: unreadable image"):
        load_image(tmp_path / "bad.png")


def test_progress_prints_periodic_lines_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from bindkit._progress import LineProgress, progress

    now = [0.0]
    stream = io.StringIO()
    bar = LineProgress(
        100, "embedding texts", unit="input", interval=30, stream=stream, clock=lambda: now[0]
    )
    for _ in range(10):  # one batch of 10 every 10 s: a line at 30 s, 60 s and 90 s
        now[0] += 10
        bar.update(10)
    bar.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 4
    assert lines[0] == "embedding texts: 30/100 inputs (30%), 1/s, about 70 s left"
    assert lines[-1] == "embedding texts: 100/100 inputs (100%), 1/s, 100.0 s"
    monkeypatch.setenv("BINDKIT_PROGRESS", "1")
    assert isinstance(progress(5, "x", stream=io.StringIO()), LineProgress)
    monkeypatch.setenv("BINDKIT_PROGRESS", "0")
    silent = io.StringIO()
    quiet = progress(5, "x", stream=silent)
    quiet.update(5)
    quiet.close()
    assert silent.getvalue() == "" and not isinstance(quiet, LineProgress)
    assert isinstance(progress(5, "x", enabled=True, stream=io.StringIO()), LineProgress)
