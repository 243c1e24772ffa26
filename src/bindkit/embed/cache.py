"""On-disk embedding cache, shared by every command that embeds.

One SQLite file holds vectors keyed by (model fingerprint, prompt key, input content hash). The
prompt key hashes whatever the backend feeds the model besides the input (role-dependent prompt,
instruction), so a query and a document vector of the same text never collide, while models that
ignore roles share one entry. Writes are transactions: a crash loses at most the batch in flight
and never leaves a half-written vector.
"""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL, prompt TEXT NOT NULL, key TEXT NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (model, prompt, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS models (
    model TEXT PRIMARY KEY, spec TEXT NOT NULL, description TEXT NOT NULL, created REAL NOT NULL
);
"""
_CHUNK = 500


def default_cache_path() -> Path:
    """``$BINDKIT_CACHE_DIR/embeddings.sqlite``, else ``~/.cache/bindkit/embeddings.sqlite``."""
    root = os.environ.get("BINDKIT_CACHE_DIR") or Path.home() / ".cache" / "bindkit"
    return Path(root) / "embeddings.sqlite"


class EmbeddingCache:
    """A process- and crash-safe store of float32 vectors."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.executescript(_SCHEMA)

    def register(self, model: str, spec: str, description: str) -> None:
        self._conn.execute(
            "INSERT OR IGNORE INTO models VALUES (?, ?, ?, ?)",
            (model, spec, description, time.time()),
        )

    def get_many(self, model: str, prompt: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            rows = self._conn.execute(
                f"SELECT key, vec FROM vectors WHERE model = ? AND prompt = ? AND key IN ({marks})",
                (model, prompt, *chunk),
            )
            for key, blob in rows:
                if len(blob) % 4 == 0 and blob:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, prompt: str, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [
            (model, prompt, key, np.ascontiguousarray(vec, dtype=np.float32).tobytes())
            for key, vec in vectors.items()
        ]
        with self._transaction():
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)

    def models(self) -> list[tuple[str, str, int]]:
        """(fingerprint, spec, number of vectors) for every model in the cache."""
        rows = self._conn.execute(
            "SELECT m.model, m.spec, (SELECT COUNT(*) FROM vectors v WHERE v.model = m.model) "
            "FROM models m ORDER BY m.created"
        )
        return [(str(a), str(b), int(c)) for a, b, c in rows]

    def clear(self, models: Iterable[str] | None = None) -> int:
        """Delete the vectors of ``models`` (fingerprints), or of every model; returns rows gone."""
        with self._transaction():
            if models is None:
                gone = self._conn.execute("DELETE FROM vectors").rowcount
                self._conn.execute("DELETE FROM models")
                return int(gone)
            gone = 0
            for model in models:
                gone += self._conn.execute("DELETE FROM vectors WHERE model = ?", (model,)).rowcount
                self._conn.execute("DELETE FROM models WHERE model = ?", (model,))
            return int(gone)

    def close(self) -> None:
        self._conn.close()

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)


class _Transaction:
    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> None:
        self.conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, *_: object) -> None:
        self.conn.execute("ROLLBACK" if exc_type else "COMMIT")
