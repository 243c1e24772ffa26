"""Every error is one line, nothing is damaged, a killed run can be rerun (issue 11)."""

from __future__ import annotations

import argparse
import errno
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import bindkit.cli
from bindkit._io import atomic_write_text, remove_stray_temps, stray_temps
from bindkit._lock import directory_lock
from bindkit.cli import main
from bindkit.embed.cache import CacheError, EmbeddingCache
from bindkit.errors import BindkitError, PathError, describe_os_error, path_error
from bindkit.saber.build import MAX_MCQS, MAX_PER_N, SaberOptions, generate_saber
from bindkit.saber.io import DataFormatError, iter_lines, scan_lines

# ---------------------------------------------------------------- one line per OSError


def test_an_os_error_becomes_one_line_naming_the_path_and_what_to_do() -> None:
    line = describe_os_error(OSError(errno.ENOSPC, "No space left on device"), "out/a.json")
    assert line == "out/a.json: no space left on device; free space or choose another disk"
    error = path_error(PermissionError(errno.EPERM, "Operation not permitted", "imm/x"))
    assert isinstance(error, BindkitError) and isinstance(error, OSError)
    assert str(error).startswith("imm/x: operation not permitted; it may be immutable")
    assert error.errno == errno.EPERM and "\n" not in str(error)


def test_atomic_write_on_a_full_disk_fails_in_one_line_and_leaves_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "result.json"
    target.write_text("old")

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(PathError, match=r"result\.json: no space left on device; free space"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["result.json"]


def test_atomic_write_under_a_regular_file_names_the_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(PathError, match=r"file/sub: not a directory; a parent of it is a regular"):
        atomic_write_text(tmp_path / "file" / "sub" / "a.txt", "x")


def test_stray_temporaries_are_found_only_for_the_named_outputs(tmp_path: Path) -> None:
    for name in (".saber.jsonl.abc123.tmp", ".other.json.abc.tmp", "saber.jsonl", ".saber.jsonl"):
        (tmp_path / name).write_text("x")
    assert [p.name for p in stray_temps(tmp_path, ["saber.jsonl"])] == [".saber.jsonl.abc123.tmp"]
    remove_stray_temps(tmp_path, ["saber.jsonl"])
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        ".other.json.abc.tmp",
        ".saber.jsonl",
        "saber.jsonl",
    ]


def _cli_with_handler(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    def handler(_args: argparse.Namespace) -> int:
        raise exc

    parser = argparse.ArgumentParser(prog="bindkit")
    parser.set_defaults(handler=handler)
    monkeypatch.setattr(bindkit.cli, "build_parser", lambda: parser)


def test_the_cli_turns_a_stray_os_error_into_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _cli_with_handler(monkeypatch, PermissionError(errno.EACCES, "Permission denied", "r/x.png"))
    assert main([]) == 2
    assert capsys.readouterr().err == (
        "bindkit: error: r/x.png: permission denied; make it writable or choose another path\n"
    )


def test_the_cli_turns_a_stray_sqlite_error_into_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _cli_with_handler(monkeypatch, sqlite3.OperationalError("database is locked"))
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bindkit: error: embedding cache: database is locked;")
    assert err.count("\n") == 1


def test_the_cli_keeps_the_traceback_of_a_genuine_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    _cli_with_handler(monkeypatch, KeyError("model"))
    with pytest.raises(KeyError):
        main([])


# ---------------------------------------------------------------- the embedding cache


def _filled(path: Path) -> EmbeddingCache:
    cache = EmbeddingCache(path)
    for name in ("aaaa1111", "aaaa2222"):
        cache.register(name, f"st:{name}", "{}")
        cache.put_many(name, "p", {"k": np.ones(4, dtype=np.float32)})
    return cache


def test_a_foreign_sqlite_file_is_refused_and_left_byte_identical(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE vectors (model TEXT, blob BLOB)")
    before = path.read_bytes()
    for create in (True, False):
        with pytest.raises(CacheError, match=r"not a bindkit cache \(tables: vectors\); left"):
            EmbeddingCache(path, create=create)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.sqlite"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.write_bytes(bytes(range(256)) * 8), "not an SQLite cache"),
        (lambda p: p.mkdir(), "is a directory; the cache is one file"),
    ],
)
def test_a_garbage_file_or_a_directory_is_one_line(
    tmp_path: Path, make: object, message: str
) -> None:
    path = tmp_path / "embeddings.sqlite"
    make(path)  # type: ignore[operator]
    with pytest.raises(CacheError, match=message):
        EmbeddingCache(path)


def test_listing_never_creates_or_writes(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "dir" / "embeddings.sqlite"
    with pytest.raises(CacheError, match="no cache there"):
        EmbeddingCache(missing, create=False)
    assert not (tmp_path / "typo").exists()
    empty = tmp_path / "zero.sqlite"
    empty.write_bytes(b"")
    with pytest.raises(CacheError, match="no cache there"):
        EmbeddingCache(empty, create=False)
    assert empty.read_bytes() == b""


def test_a_new_cache_is_announced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    EmbeddingCache(tmp_path / "new" / "c.sqlite").close()
    assert "creating a new embedding cache" in capsys.readouterr().err
    EmbeddingCache(tmp_path / "new" / "c.sqlite").close()
    assert capsys.readouterr().err == ""


def test_a_vector_of_the_wrong_length_is_a_miss_and_gets_recomputed(tmp_path: Path) -> None:
    from bindkit.embed.registry import load_embedder

    texts = [f"a red cup number {i}" for i in range(6)]
    plain = load_embedder("bow", cache=False).embed_texts(texts)
    path = tmp_path / "c.sqlite"
    load_embedder("bow", cache=path).embed_texts(texts)
    with sqlite3.connect(path) as conn:
        key = conn.execute("SELECT key FROM vectors LIMIT 1").fetchone()[0]
        conn.execute("UPDATE vectors SET vec = ? WHERE key = ?", (b"\0" * 12, key))
    again = load_embedder("bow", cache=path)
    assert np.array_equal(again.embed_texts(texts), plain)
    assert again.stats["embedded"] == 1 and again.stats["cached"] == 5
    # the recomputed vector replaced the short one
    healed = load_embedder("bow", cache=path)
    healed.embed_texts(texts)
    assert healed.stats["embedded"] == 0


def test_cache_clear_refuses_an_empty_or_ambiguous_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.sqlite"
    _filled(path).close()
    base = ["cache", "--path", str(path), "clear", "--model"]
    assert main([*base, ""]) == 2
    assert "--model '': empty" in capsys.readouterr().err
    assert main([*base, "aaaa"]) == 2
    assert "matches 2 cached models" in capsys.readouterr().err
    assert len(EmbeddingCache(path).models()) == 2
    assert main([*base, "st:aaaa1111"]) == 0
    assert [spec for _, spec, _ in EmbeddingCache(path).models()] == ["st:aaaa2222"]


def test_clearing_a_read_only_cache_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "c.sqlite"
    _filled(path).close()
    uri = f"{path.as_uri()}?mode=ro"
    cache = EmbeddingCache(path, create=False)
    cache._conn.close()
    cache._conn = sqlite3.connect(uri, uri=True, isolation_level=None)
    with pytest.raises(CacheError, match=r"c\.sqlite: cannot use the cache \(attempt to write"):
        cache.clear()
    assert len(EmbeddingCache(path).models()) == 2


# ---------------------------------------------------------------- saber generate


def test_per_n_and_total_size_are_bounded_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match=f"at most {MAX_PER_N:,} MCQs per N"):
        generate_saber(tmp_path / "s", per_n=10**9)
    with pytest.raises(BindkitError, match=f"more than the {MAX_MCQS:,} allowed"):
        SaberOptions(per_n=MAX_PER_N, n_min=2, n_max=10).check()
    assert not (tmp_path / "s").exists()


_TEXT: dict[str, Any] = {"capture_output": True, "text": True, "check": True}


def test_a_directory_holding_only_a_killed_runs_temporaries_counts_as_empty(
    tmp_path: Path,
) -> None:
    out = tmp_path / "s"
    out.mkdir()
    (out / ".saber.jsonl.k1ll3d00.tmp").write_text("{partial")
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], **_TEXT)
    lock = {"pid": int(dead.stdout), "host": socket.gethostname(), "command": "killed run"}
    (out / ".bindkit.lock").write_text(json.dumps(lock))
    generate_saber(out, per_n=2, n_max=3)
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "saber.jsonl"]


def test_overwrite_removes_stray_temporaries_and_keeps_other_files(tmp_path: Path) -> None:
    out = tmp_path / "s"
    generate_saber(out, per_n=2, n_max=3)
    (out / ".manifest.json.x1y2.tmp").write_text("{")
    (out / "notes.txt").write_text("keep")
    with pytest.raises(BindkitError, match="not empty; pass --overwrite"):
        generate_saber(out, per_n=2, n_max=3)
    generate_saber(out, per_n=2, n_max=3, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "notes.txt", "saber.jsonl"]


def test_a_second_generator_into_the_same_directory_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "s"
    with (
        directory_lock(out, "bindkit saber generate"),
        pytest.raises(BindkitError, match=r"in use by bindkit saber generate \(PID"),
    ):
        generate_saber(out, per_n=2, n_max=3)
    assert list(out.iterdir()) == []


# ---------------------------------------------------------------- text that is not text


def _line_errors(tmp_path: Path, data: bytes) -> list[str | None]:
    path = tmp_path / "x.jsonl"
    path.write_bytes(data)
    return [error for _, _, error in scan_lines(path)]


def test_non_utf8_bytes_and_lone_surrogates_are_line_errors(tmp_path: Path) -> None:
    errors = _line_errors(
        tmp_path,
        b'{"a": "caf\xe9"}\n{"a": "\\ud800 x"}\n{"a": "\\ud83d\\ude00 ok"}\n{"a": "\\u00e9"}\n',
    )
    assert errors[0] is not None and errors[0].startswith("not UTF-8 text (byte 11")
    assert errors[1] is not None and "lone surrogate" in errors[1]
    assert errors[2:] == [None, None]
    with pytest.raises(DataFormatError, match=r"x\.jsonl:1: not UTF-8 text"):
        list(iter_lines(tmp_path / "x.jsonl"))


# ---------------------------------------------------------------- kills


@pytest.mark.slow
def test_saber_generate_killed_while_writing_can_be_rerun(tmp_path: Path) -> None:
    out = tmp_path / "s"
    argv = [sys.executable, "-m", "bindkit", "saber", "generate", "-q", "--per-n", "600"]
    env = {**os.environ, "PYTHONPATH": str(Path(bindkit.__file__).parent.parent)}
    proc = subprocess.Popen([*argv, "--out", str(out)], env=env)
    deadline = time.monotonic() + 300
    while not stray_temps(out, ["saber.jsonl"]) and time.monotonic() < deadline:
        assert proc.poll() is None, "finished before it could be killed mid-write"
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert stray_temps(out, ["saber.jsonl"]), "no temporary file seen while writing"
    assert not (out / "saber.jsonl").exists()
    done = subprocess.run([*argv, "--out", str(out)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "saber.jsonl"]
    assert main(["saber", "validate", str(out)]) == 0


@pytest.mark.slow
def test_eval_killed_mid_embedding_keeps_the_finished_batches(tmp_path: Path) -> None:
    """The cache commits per batch: a kill inside one embedding call keeps what was done."""
    saber = tmp_path / "saber"
    generate_saber(saber, per_n=40, n_max=4)
    queries = 40 * 3
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(bindkit.__file__).parent.parent),
        "BINDKIT_CACHE_DIR": str(cache),
    }
    argv = [sys.executable, "-m", "bindkit", "eval", "-q", "--model", "st:default"]
    argv += ["--batch-size", "4", "--data", str(saber), "--out", str(tmp_path / "r")]
    proc = subprocess.Popen(argv, env=env)
    db = cache / "embeddings.sqlite"
    seen = 0
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        if db.exists():
            with sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True) as conn:
                try:
                    seen = conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]
                except sqlite3.OperationalError:
                    seen = 0
        if 0 < seen < queries:
            break
        assert seen < queries, "the first call's vectors appeared all at once, not per batch"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert 0 < seen < queries
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0] >= seen
    done = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def _positives(path: Path) -> set[str]:
    return {json.loads(line)["positive"] for line in path.read_text().splitlines() if line}


@pytest.mark.slow
def test_synth_split_killed_midway_never_leaves_a_mixed_split_set(tmp_path: Path) -> None:
    """After a kill the split set is consistent or flagged by ``--verify``; a rerun repairs it."""
    out = tmp_path / "s"
    env = {**os.environ, "PYTHONPATH": str(Path(bindkit.__file__).parent.parent)}
    synth = [sys.executable, "-m", "bindkit", "synth"]
    gen = [*synth, "generate", "--backend", "template", "-q", "--n", "20000", "--out", str(out)]
    subprocess.run(gen, env=env, check=True, capture_output=True)
    train = out / "train.jsonl"
    first = train.stat().st_mtime_ns
    proc = subprocess.Popen([*synth, "split", str(out), "--seed", "2"], env=env)
    while proc.poll() is None and train.stat().st_mtime_ns == first:
        time.sleep(0.001)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    verify = [*synth, "split", str(out), "--verify"]
    mixed = bool(_positives(out / "train.jsonl") & _positives(out / "test.jsonl"))
    flagged = subprocess.run(verify, env=env, capture_output=True).returncode != 0
    assert flagged or not mixed, "a mixed split set went unnoticed"
    subprocess.run([*synth, "split", str(out), "--seed", "2"], env=env, check=True)
    assert not _positives(out / "train.jsonl") & _positives(out / "test.jsonl")
    assert subprocess.run(verify, env=env, capture_output=True).returncode == 0
    assert json.loads((out / "splits.json").read_text())["options"]["seed"] == 2


@pytest.mark.slow
def test_a_second_concurrent_synth_generator_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "s"
    env = {**os.environ, "PYTHONPATH": str(Path(bindkit.__file__).parent.parent)}
    gen = [sys.executable, "-m", "bindkit", "synth", "generate", "--backend", "template", "-q"]
    gen += ["--n", "3000", "--out", str(out)]
    first = subprocess.Popen(gen, env=env, stderr=subprocess.PIPE, text=True)
    while not (out / "examples.jsonl").exists() and first.poll() is None:
        time.sleep(0.005)
    second = subprocess.run(gen, env=env, capture_output=True, text=True)
    _, first_err = first.communicate()
    assert first.returncode == 0, first_err
    assert second.returncode == 2 and "in use by" in second.stderr
    ids = [json.loads(line)["id"] for line in (out / "examples.jsonl").read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 3000
