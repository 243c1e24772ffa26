"""The cache writer: batches are stored off the embedding loop, on one background thread.

What it must keep: the vectors equal plain embedding and the rows the per-batch writer stored
before; every vector is committed when ``embed_*`` returns; batches that queue up share one
transaction; a write error stops the run with that error; a process killed mid-run leaves a
sound cache whose missing rows the next run recomputes.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bindkit
from bindkit.embed import EmbeddingCache, load_embedder
from bindkit.embed.base import BaseEmbedder, text_key
from bindkit.embed.cache import CacheError


class Lengths(BaseEmbedder):
    """A fake backend: a text's vector follows from its length and words; ``before_batch`` is
    called with the batch's index before it is encoded (to pace the run against the writer)."""

    def __init__(self, before_batch: Any = None, **kwargs: Any) -> None:
        super().__init__(spec="lengths", **kwargs)
        self.batches: list[list[str]] = []
        self.before_batch = before_batch

    def _describe(self) -> dict[str, Any]:
        return {"backend": "lengths"}

    def _encode_texts(self, texts: list[str], role: str, instruction: str | None) -> np.ndarray:
        if self.before_batch is not None:
            self.before_batch(len(self.batches))
        self.batches.append(list(texts))
        out = np.zeros((len(texts), 6), dtype=np.float32)
        for row, text in enumerate(texts):
            out[row, len(text) % 6] = 1.0
            out[row, len(text.split()) % 6] += 0.5 + 0.01 * len(text)
        return out


def _rows(path: Path) -> dict[tuple[str, str, str], bytes]:
    """Every stored row, read over a connection of its own (what another process would see)."""
    with sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT model, prompt, key, vec FROM vectors").fetchall()
    return {(m, p, k): bytes(v) for m, p, k, v in rows}


TEXTS = [f"text {'word ' * (i % 7)}number {i}" for i in range(40)] + ["text number 3"] * 3


@pytest.mark.parametrize("batch_size", [1, 3, 64])
def test_vectors_equal_plain_and_the_rows_equal_the_per_batch_writers(
    tmp_path: Path, batch_size: int
) -> None:
    plain = Lengths(batch_size=batch_size).embed_texts(TEXTS)
    model = Lengths(batch_size=batch_size, cache=EmbeddingCache(tmp_path / "new.sqlite"))
    assert np.array_equal(model.embed_texts(TEXTS), plain)
    # committed when embed_texts returns: another connection sees every distinct text
    stored = _rows(tmp_path / "new.sqlite")
    assert len(stored) == len(set(TEXTS))
    # the rows the per-batch writer stored: put_many of each batch's {key: vector}
    prompt = hashlib.sha256(model.prompt_key("text", "query", None).encode()).hexdigest()[:24]
    old = EmbeddingCache(tmp_path / "old.sqlite")
    for start in range(0, len(TEXTS), batch_size):
        keys = [text_key(text) for text in TEXTS[start : start + batch_size]]
        vectors = plain[start : start + batch_size]
        old.put_many(model.fingerprint, prompt, dict(zip(keys, vectors, strict=True)))
    assert stored == _rows(tmp_path / "old.sqlite")
    warm = Lengths(batch_size=batch_size, cache=EmbeddingCache(tmp_path / "new.sqlite"))
    assert np.array_equal(warm.embed_texts(TEXTS), plain) and warm.batches == []


def test_batches_that_queue_up_share_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The writer is held in its first write (batch 1) until the loop has handed over every
    batch: the four batches queued meanwhile then go into one ``put_many`` (one transaction)."""
    writing, all_queued = threading.Event(), threading.Event()
    writes: list[int] = []
    put_many = EmbeddingCache.put_many

    def held(self: EmbeddingCache, model: str, prompt: str, vectors: Any) -> None:
        writes.append(len(vectors))
        if len(writes) == 1:
            writing.set()
            assert all_queued.wait(30)
        put_many(self, model, prompt, vectors)

    monkeypatch.setattr(EmbeddingCache, "put_many", held)
    texts = [f"t{i:02d}" for i in range(10)]
    wait_for_the_writer = lambda index: index != 1 or writing.wait(30)  # noqa: E731
    model = Lengths(wait_for_the_writer, batch_size=2, cache=EmbeddingCache(tmp_path / "c.sqlite"))
    model._encode_all = _then(model._encode_all, all_queued.set)  # type: ignore[method-assign]
    model.embed_texts(texts)
    assert writes == [2, 8]
    assert len(_rows(tmp_path / "c.sqlite")) == 10


def _then(function: Any, after: Any) -> Any:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        after()
        return result

    return wrapped


def test_a_failing_write_stops_the_run_with_its_error(tmp_path: Path) -> None:
    """A cache whose inserts fail (a trigger stands in for a full disk): the writer thread's
    error reaches the caller as the one-line CacheError, and the loop stops at its next batch
    instead of embedding the rest for nothing."""
    path = tmp_path / "c.sqlite"
    cache = EmbeddingCache(path)
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TRIGGER full BEFORE INSERT ON vectors "
            "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
    pace = lambda index: time.sleep(0.2 if index else 0)  # noqa: E731 - the writer gets time
    model = Lengths(before_batch=pace, batch_size=1, cache=cache)
    with pytest.raises(CacheError, match=r"c\.sqlite: database or disk is full; free space"):
        model.embed_texts([f"t{i}" for i in range(8)])
    assert len(model.batches) < 8
    assert _rows(path) == {}


def test_a_write_error_raised_at_close_is_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One batch only: the error can only surface when the call waits for the writer."""

    def broken(*_: Any) -> None:
        raise CacheError("c.sqlite: cannot use the cache (readonly)")

    monkeypatch.setattr(EmbeddingCache, "put_many", broken)
    model = Lengths(batch_size=8, cache=EmbeddingCache(tmp_path / "c.sqlite"))
    with pytest.raises(CacheError, match="readonly"):
        model.embed_texts(["a", "b"])


_KILLED = """
import os, sys
from bindkit.embed import EmbeddingCache, load_embedder
model = load_embedder("bow", cache=EmbeddingCache(sys.argv[1]), batch_size=2)
encode, calls = model._encode_texts, []
def dying(texts, role, instruction):
    calls.append(1)
    if len(calls) == 5:
        os._exit(3)  # killed: no finally, no flush
    return encode(texts, role, instruction)
model._encode_texts = dying
model.embed_texts([f"w{i} common" for i in range(20)])
"""


def test_a_killed_process_leaves_a_sound_cache_and_the_rerun_recomputes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite"
    source = str(Path(bindkit.__file__).parents[1])
    killed = subprocess.run(
        [sys.executable, "-c", _KILLED, str(path)],
        env={**os.environ, "PYTHONPATH": source, "BINDKIT_PROGRESS": "0"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == 3, killed.stderr
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    kept = len(_rows(path))
    assert kept <= 8  # at most the four batches encoded before the kill
    texts = [f"w{i} common" for i in range(20)]
    rerun = load_embedder("bow", cache=EmbeddingCache(path), batch_size=2)
    vectors = rerun.embed_texts(texts)
    assert rerun.stats == {"embedded": 20 - kept, "cached": kept, "duplicates": 0}
    assert np.array_equal(vectors, load_embedder("bow", cache=False).embed_texts(texts))
    assert len(_rows(path)) == 20
