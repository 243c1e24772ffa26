"""On-disk embedding cache, shared by every command that embeds.

One SQLite file holds vectors keyed by (model fingerprint, prompt key, input content hash). The
prompt key hashes whatever the backend feeds the model besides the input (role-dependent prompt,
instruction), so a query and a document vector of the same text never collide, while models that
ignore roles share one entry. Writes are transactions: a crash loses at most the batches in flight
and never leaves a half-written vector. The embedding pipeline writes from one background thread
over a connection of its own, everything queued since its last write in one transaction, and an
``embed_*`` call returns (or raises) only once its vectors are committed
(:class:`bindkit.embed.base._CacheWriter`).

The cache refuses what it did not make: a file that is not SQLite, or an SQLite file with other
tables, is reported in one line and never modified. A stored vector whose length differs from the
model's other vectors (a tampered or foreign row) counts as a miss and is recomputed.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from bindkit._io import make_dirs
from bindkit.errors import BindkitError

_SCHEMA = """
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL, prompt TEXT NOT NULL, key TEXT NOT NULL, vec BLOB NOT NULL,
    PRIMARY KEY (model, prompt, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS models (
    model TEXT PRIMARY KEY, spec TEXT NOT NULL, description TEXT NOT NULL, created REAL NOT NULL
);
"""
_COLUMNS = {
    "vectors": ["model", "prompt", "key", "vec"],
    "models": ["model", "spec", "description", "created"],
}
_CHUNK = 500
_ELSEWHERE = "set BINDKIT_CACHE_DIR elsewhere (bindkit cache: --path), or pass --no-cache"


class CacheError(BindkitError):
    """The cache file cannot be opened, read or written; the message names it."""


def default_cache_path() -> Path:
    """``$BINDKIT_CACHE_DIR/embeddings.sqlite``, else ``~/.cache/bindkit/embeddings.sqlite``."""
    root = os.environ.get("BINDKIT_CACHE_DIR") or Path.home() / ".cache" / "bindkit"
    return Path(root) / "embeddings.sqlite"


class EmbeddingCache:
    """A process- and crash-safe store of float32 vectors.

    Args:
        path: the SQLite file; default :func:`default_cache_path`.
        create: make the file (and its directories) when missing, with a warning on stderr so a
            mistyped path does not go unnoticed. With ``create=False`` the cache is opened
            read-only and a missing or empty file is a :class:`CacheError`: listing a cache
            never writes anything.

    Raises:
        CacheError: the path is a directory, not SQLite, another program's database, or cannot
            be opened or written.
    """

    def __init__(self, path: str | Path | None = None, *, create: bool = True) -> None:
        self.path = Path(path) if path is not None else default_cache_path()
        self._dims: dict[str, int | None] = {}
        if self.path.is_dir():
            raise CacheError(
                f"{self.path}: is a directory; the cache is one file, "
                f"e.g. {self.path / 'embeddings.sqlite'}"
            )
        is_new = not self.path.exists() or self.path.stat().st_size == 0
        if is_new and not create:
            raise CacheError(f"{self.path}: no cache there; check the path, or run `bindkit eval`")
        if not self.path.exists():
            make_dirs(self.path.parent)
            print(
                f"bindkit: creating a new embedding cache at {self.path} "
                "(if you meant an existing one, check BINDKIT_CACHE_DIR)",
                file=sys.stderr,
            )
        with self._errors():
            if create:
                self._conn = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            else:
                uri = f"{self.path.resolve().as_uri()}?mode=ro"
                self._conn = sqlite3.connect(uri, uri=True, timeout=60, isolation_level=None)
            tables = self._tables()
            if tables:
                self._check_schema(tables)
            elif not create:
                raise CacheError(f"{self.path}: an empty database, no cache; check the path")
            if create:
                self._conn.execute("PRAGMA journal_mode=WAL")
                self._conn.execute("PRAGMA synchronous=NORMAL")
                if not tables:  # one transaction: a concurrent opener sees both tables or none
                    self._conn.executescript(f"BEGIN IMMEDIATE;{_SCHEMA}COMMIT;")

    def _tables(self) -> dict[str, list[str]]:
        names = [
            str(row[0])
            for row in self._conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        ]
        return {
            name: [str(col[1]) for col in self._conn.execute(f'PRAGMA table_info("{name}")')]
            for name in names
        }

    def _check_schema(self, tables: Mapping[str, list[str]]) -> None:
        wrong = [name for name, cols in _COLUMNS.items() if tables.get(name) != cols]
        if wrong:
            found = ", ".join(sorted(tables)) or "none"
            raise CacheError(
                f"{self.path}: an SQLite file that is not a bindkit cache (tables: {found}); "
                f"left untouched; {_ELSEWHERE}"
            )

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """Turn an SQLite failure into one :class:`CacheError` line naming the file."""
        try:
            yield
        except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
            raise  # a bug in this module, not a problem with the file
        except sqlite3.DatabaseError as exc:
            message = str(exc)
            if "not a database" in message or "malformed" in message:
                advice = f"not an SQLite cache ({message}); delete it or {_ELSEWHERE}"
            elif "full" in message:
                advice = f"{message}; free space or {_ELSEWHERE}"
            elif "locked" in message or "busy" in message:
                advice = f"{message}; another process holds the cache too long, retry later"
            else:
                advice = f"cannot use the cache ({message}); make it writable or {_ELSEWHERE}"
            raise CacheError(f"{self.path}: {advice}") from exc

    def register(self, model: str, spec: str, description: str) -> None:
        with self._errors():
            self._conn.execute(
                "INSERT OR IGNORE INTO models VALUES (?, ?, ?, ?)",
                (model, spec, description, time.time()),
            )

    def _dim(self, model: str) -> int | None:
        """The byte length most of ``model``'s vectors have (None when it has none)."""
        if model not in self._dims:
            with self._errors():
                rows = self._conn.execute(
                    "SELECT length(vec), COUNT(*) FROM vectors WHERE model = ? GROUP BY 1",
                    (model,),
                ).fetchall()
            counts = Counter({int(size): int(n) for size, n in rows})
            if not counts:
                return None  # not remembered: another connection (the batch writer) may add rows
            self._dims[model] = counts.most_common(1)[0][0]
        return self._dims[model]

    def get_many(self, model: str, prompt: str, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Cached vectors of ``keys``; a row of the wrong length is left out (recomputed)."""
        found: dict[str, np.ndarray] = {}
        size = self._dim(model)
        for start in range(0, len(keys), _CHUNK):
            chunk = list(keys[start : start + _CHUNK])
            marks = ",".join("?" * len(chunk))
            with self._errors():
                rows = self._conn.execute(
                    f"SELECT key, vec FROM vectors WHERE model = ? AND prompt = ? "
                    f"AND key IN ({marks})",
                    (model, prompt, *chunk),
                ).fetchall()
            for key, blob in rows:
                if blob and len(blob) % 4 == 0 and len(blob) == size:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model: str, prompt: str, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [
            (model, prompt, key, np.ascontiguousarray(vec, dtype=np.float32).tobytes())
            for key, vec in vectors.items()
        ]
        with self._errors(), self._transaction():
            self._conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?, ?, ?, ?)", rows)
        self._dims.pop(model, None)

    def models(self) -> list[tuple[str, str, int]]:
        """(fingerprint, spec, number of vectors) for every model in the cache."""
        with self._errors():
            rows = self._conn.execute(
                "SELECT m.model, m.spec, (SELECT COUNT(*) FROM vectors v WHERE v.model = m.model) "
                "FROM models m ORDER BY m.created"
            ).fetchall()
        return [(str(a), str(b), int(c)) for a, b, c in rows]

    def clear(self, models: Iterable[str] | None = None) -> int:
        """Delete the vectors of ``models`` (fingerprints), or of every model; returns rows gone."""
        self._dims.clear()
        with self._errors(), self._transaction():
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
