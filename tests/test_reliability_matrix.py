# ruff: noqa: E501 - the matrix reads best as a table, one row per line
"""The reliability review's matrix as a table (issue 11, item 7).

One row per cell of ``../shared/reviews/reliability-review.md``: the command, the fixtures it
needs, the exit status and a fragment of the message it must give, and which files must come
out byte-identical. Each row runs ``bindkit.cli.main(argv)`` in-process in its own directory; an
exception escaping ``main`` is the in-process form of a traceback and fails the row.

Unwritable targets are real, not mocked: ``ro`` is a read-only tmpfs mount, ``tiny`` a full
2 MB tmpfs, ``imm`` a ``chattr +i`` directory (root cannot write there, unlike a mode-0555
directory), and ``regular_file/...`` a path under a regular file. Where the machine does not
allow mounts or ``chattr`` (not root, no CAP_SYS_ADMIN) those rows are skipped with that reason.

Rows whose fix lands on another helper's branch are listed in :data:`PENDING_OTHER_HELPERS` and
skipped until the lead merges those branches and empties the set.
"""

from __future__ import annotations

import hashlib
import json
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from _matrix import C, Case, Cell, Outcome, check_outcome, run_matrix_case, settle
from bindkit.cli import main

PENDING_OTHER_HELPERS: set[str] = set()

# -------------------------------------------------------------------------------------------
# fixtures: each builder makes one named thing inside the cell directory


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _saber_copy(cell: Cell, name: str) -> Path:
    target = cell.dir / "saber" / name
    shutil.copytree(cell.base / "saber_good", target)
    return target


def _edit_saber_line(cell: Cell, name: str, index: int, edit: Callable[[dict], object]) -> None:
    target = _saber_copy(cell, name)
    lines = _lines(target / "saber.jsonl")
    row = json.loads(lines[index])
    new = edit(row)
    row = row if new is None else new
    lines[index] = json.dumps(row).encode() + b"\n"
    (target / "saber.jsonl").write_bytes(b"".join(lines))


def _saber_bytes(cell: Cell, name: str, transform: Callable[[bytes], bytes]) -> None:
    target = _saber_copy(cell, name)
    path = target / "saber.jsonl"
    path.write_bytes(transform(path.read_bytes()))


def _replace_line(index: int, new: bytes) -> Callable[[bytes], bytes]:
    def transform(data: bytes) -> bytes:
        lines = data.splitlines(keepends=True)
        lines[index] = new
        return b"".join(lines)

    return transform


def _cut_line(index: int) -> Callable[[bytes], bytes]:
    def transform(data: bytes) -> bytes:
        lines = data.splitlines(keepends=True)
        lines[index] = lines[index][: len(lines[index]) // 2] + b"\n"
        return b"".join(lines)

    return transform


def _first_text(row: dict, prefix: bytes) -> bytes:
    line = json.dumps(row).encode()
    return line.replace(b'"text": "', b'"text": "' + prefix, 1) + b"\n"


def _saber_prefix_text(cell: Cell, name: str, prefix: bytes) -> None:
    target = _saber_copy(cell, name)
    path = target / "saber.jsonl"
    lines = _lines(path)
    lines[2] = _first_text(json.loads(lines[2]), prefix)
    path.write_bytes(b"".join(lines))


def _del(keys: tuple[str, ...]) -> Callable[[dict], None]:
    def edit(row: dict) -> None:
        target = row
        for key in keys[:-1]:
            target = target[key]
        del target[keys[-1]]

    return edit


def _set(keys: tuple[str, ...], value: object) -> Callable[[dict], None]:
    def edit(row: dict) -> None:
        target = row
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value

    return edit


SABER: dict[str, Callable[[Cell, str], None]] = {
    "good": lambda c, n: _saber_copy(c, n) and None,
    "dir with spaces é": lambda c, n: _saber_copy(c, n) and None,
    "empty_dir": lambda c, n: (c.dir / "saber" / n).mkdir(parents=True),
    "empty_file": lambda c, n: _saber_bytes(c, n, lambda _: b""),
    "no_manifest": lambda c, n: (_saber_copy(c, n) / "manifest.json").unlink(),
    "truncated_last": lambda c, n: _saber_bytes(c, n, lambda d: d[: len(d) - 200]),
    "truncated_mid": lambda c, n: _saber_bytes(c, n, _cut_line(5)),
    "binary_line": lambda c, n: _saber_bytes(c, n, _replace_line(3, b"\x01\x02 PK garbage\n")),
    "wrong_types": lambda c, n: _edit_saber_line(c, n, 2, _set(("n",), "3")),
    "wrong_types2": lambda c, n: _edit_saber_line(c, n, 2, _set(("candidates",), "x")),
    "wrong_types3": lambda c, n: _edit_saber_line(c, n, 2, _set(("query", "bindings"), [[1, 2]])),
    "missing_key": lambda c, n: _edit_saber_line(c, n, 2, _del(("candidates",))),
    "missing_key2": lambda c, n: _edit_saber_line(c, n, 2, _del(("query", "text"))),
    "extra_key": lambda c, n: _edit_saber_line(c, n, 2, _set(("zzz",), 1)),
    "null_line": lambda c, n: _saber_bytes(c, n, _replace_line(2, b"null\n")),
    "array_line": lambda c, n: _saber_bytes(c, n, _replace_line(2, b"[1, 2]\n")),
    "synth_as_saber": lambda c, n: _saber_bytes(
        c, n, lambda _: (c.base / "synth" / "examples.jsonl").read_bytes()
    ),
    "triplets_as_saber": lambda c, n: _saber_bytes(
        c, n, lambda _: (c.base / "synth" / "train.jsonl").read_bytes()
    ),
    "bom": lambda c, n: _saber_bytes(c, n, lambda d: b"\xef\xbb\xbf" + d),
    "crlf": lambda c, n: _saber_bytes(c, n, lambda d: d.replace(b"\n", b"\r\n")),
    "unicode_text": lambda c, n: _saber_prefix_text(c, n, "ünï 🎨 ".encode()),
    "latin1": lambda c, n: _saber_prefix_text(c, n, b"caf\xe9 "),
    "lone_surrogate": lambda c, n: _saber_prefix_text(c, n, b"\\ud800 "),
    "manifest_corrupt": lambda c, n: (_saber_copy(c, n) / "manifest.json").write_text(
        '{"format": "saber", "counts": }'
    ),
    "manifest_wrongtype": lambda c, n: (_saber_copy(c, n) / "manifest.json").write_text(
        '{"format": 1, "counts": "many", "files": []}'
    ),
    "dup_line": lambda c, n: _saber_bytes(c, n, lambda d: d + d.splitlines(keepends=True)[1]),
    "huge_line": lambda c, n: _edit_saber_line(c, n, 2, _set(("pad",), "x" * 1_000_000)),
    "saber_json_is_dir": lambda c, n: (c.dir / "saber" / n / "saber.jsonl").mkdir(parents=True),
}


def _vocab(cell: Cell, name: str) -> None:
    target = cell.dir / "vocab" / name
    if name == "empty":
        target.mkdir(parents=True)
        return
    shutil.copytree(cell.base / "vocab", target)
    objects = target / "objects.txt"
    if name == "bad_toml":
        with (target / "attributes.toml").open("a") as handle:
            handle.write("\n[broken\nx = = 1\n")
    elif name == "binary_objects":
        objects.write_bytes(b"\x96\xff\x00binary\n" + objects.read_bytes())
    elif name == "empty_objects":
        objects.write_text("")
    elif name == "unicode_objects":
        objects.write_text(objects.read_text() + "café\n")
    elif name == "dup_objects":
        objects.write_text(objects.read_text() + "accordion\n")


TRIPLET = {"query": "a red cup", "positive": "a red cup here", "negative": "a cup, red"}


def _trip_rows(name: str, good: list[bytes]) -> bytes:
    row = json.dumps
    bad = {
        "truncated": lambda: b"".join(good[:-1]) + good[-1][:40],
        "binary": lambda: b"".join(good[:5]) + b"1 \x02\x03 garbage\n" + b"".join(good[5:]),
        "wrong_types": lambda: b"".join(good[:2]) + row({**TRIPLET, "query": 3}).encode() + b"\n",
        "wrong_types_label": lambda: b"".join(good) + row({**TRIPLET, "type": 5}).encode() + b"\n",
        "missing_key": lambda: (
            b"".join(good[:2]) + row({"query": "q", "positive": "p"}).encode() + b"\n"
        ),
        "extra_key": lambda: b"".join(good) + row({**TRIPLET, "zzz": [1]}).encode() + b"\n",
        "empty_string": lambda: (
            b"".join(good[:2]) + row({**TRIPLET, "positive": ""}).encode() + b"\n"
        ),
        "unicode": lambda: b"".join(good) + row({**TRIPLET, "query": "ünï 🎨"}).encode() + b"\n",
        "bom": lambda: b"\xef\xbb\xbf" + b"".join(good),
        "latin1": lambda: (
            b"".join(good) + b'{"query": "caf\xe9", "positive": "p", "negative": "n"}\n'
        ),
        "one_row": lambda: good[0],
        "empty": lambda: b"",
        "blank_lines": lambda: b"\n\n  \n",
    }
    return bad[name]() if name in bad else b"".join(good)


def _trip(cell: Cell, name: str) -> None:
    good = _lines(cell.base / "synth" / "train.jsonl")[:20]
    target = cell.dir / "trip" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if name == "synth_examples_as_triplets.jsonl":
        shutil.copy(cell.base / "synth" / "examples.jsonl", target)
        return
    target.write_bytes(_trip_rows(name.removesuffix(".jsonl"), good))


STS_ROWS = [
    ("a red cup on a table", "a cup that is red on a table", "4.5"),
    ("a dog runs", "a cat sleeps", "1.0"),
    ("two men play chess", "two people play a board game", "3.8"),
    ("a blue car", "a car painted blue", "4.8"),
    ("snow on a hill", "a hot desert", "0.5"),
]


def _sts_text(sep: str, rows: list[tuple[str, ...]], header: tuple[str, ...]) -> str:
    return "".join(sep.join(r) + "\n" for r in [header, *rows])


def _sts(cell: Cell, name: str) -> None:
    target = cell.dir / "sts" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    header = ("sentence1", "sentence2", "score")
    rows = list(STS_ROWS)
    stem, _, ext = name.partition(".")
    if ext == "jsonl":
        objs: list[object] = [dict(zip(header, (a, b, float(s)), strict=True)) for a, b, s in rows]
        if stem == "missing_key":
            objs[2] = {"sentence1": "x", "score": 1.0}
        if stem == "array_rows":
            objs = [[1, 2, 3]] * 3
        text = "".join(json.dumps(o) + "\n" for o in objs)
        if stem == "truncated":
            text = text[: len(text) - 30]
        target.write_text(text)
        return
    sep = "," if ext == "csv" else "\t"
    if stem == "binary":
        target.write_bytes(b"\x86\x00\xff" * 40)
        return
    if stem == "latin1":
        target.write_bytes(_sts_text(sep, rows, header).replace("red", "ré").encode("latin-1"))
        return
    if stem == "empty":
        target.write_text("")
        return
    if stem == "header_only":
        rows = []
    elif stem == "bad_score":
        rows[0] = (rows[0][0], rows[0][1], "high")
    elif stem in ("nan_score", "const_score", "inf_score"):
        value = {"nan_score": "nan", "const_score": "3.0", "inf_score": "inf"}[stem]
        rows = [
            (a, b, value if stem != "inf_score" or i == 0 else s)
            for i, (a, b, s) in enumerate(rows)
        ]
    elif stem == "one_row":
        rows = rows[:1]
    elif stem == "ragged":
        rows[1] = (rows[1][0],)
    elif stem == "missing_col":
        header = ("sentence1", "score")
        rows = [(a, s) for a, _, s in rows]
    target.write_text(_sts_text(sep, rows, header))


def _synth_file(cell: Cell, name: str) -> None:
    good = _lines(cell.base / "synth" / "examples.jsonl")
    target = cell.dir / "synth" / name
    target.parent.mkdir(parents=True, exist_ok=True)
    stem = name.removesuffix(".jsonl")
    rows = [json.loads(line) for line in good]
    edits: dict[str, Callable[[], bytes]] = {
        "good": lambda: b"".join(good),
        "empty": lambda: b"",
        "truncated": lambda: b"".join(good)[:-50],
        "binary": lambda: b"".join(good[:5]) + b"\x96\xff\x00\x01 junk\n" + b"".join(good[5:]),
        "wrong_types": lambda: _rows_bytes([{**rows[0], "bindings": "x"}, *rows[1:]]),
        "wrong_types2": lambda: _rows_bytes([{**rows[0], "negatives": [1]}, *rows[1:]]),
        "wrong_types3": lambda: (
            _rows_bytes([{**rows[0], "negatives": {"attribute": 3}}, *rows[1:]])
            if False
            else _rows_bytes([{**rows[0], "negatives": "abc"}, *rows[1:]])
        ),
        "missing_key": lambda: _rows_bytes(
            [{k: v for k, v in rows[0].items() if k != "positive"}, *rows[1:]]
        ),
        "missing_key2": lambda: _rows_bytes(
            [{k: v for k, v in rows[0].items() if k != "slots"}, *rows[1:]]
        ),
        "extra_key": lambda: _rows_bytes([{**rows[0], "zzz": 1}, *rows[1:]]),
        "unknown_type": lambda: _rows_bytes([{**rows[0], "type": "zzz"}, *rows[1:]]),
        "saber_as_synth": lambda: (cell.base / "saber_good" / "saber.jsonl").read_bytes(),
        "triplets_as_synth": lambda: (cell.base / "synth" / "train.jsonl").read_bytes(),
        "unicode": lambda: b"".join(good).replace(b'"query": "a ', '"query": "a ü'.encode(), 1),
        "bom": lambda: b"\xef\xbb\xbf" + b"".join(good),
        "null_line": lambda: b"".join(good[:3]) + b"null\n" + b"".join(good[3:]),
    }
    target.write_bytes(edits[stem]())


def _rows_bytes(rows: list[dict]) -> bytes:
    return b"".join(json.dumps(r).encode() + b"\n" for r in rows)


def _big(cell: Cell) -> None:
    good = (cell.base / "synth500" / "examples.jsonl").read_bytes()
    data = good * 25
    lines = data.splitlines(keepends=True)
    lines[7000] = b'{"id": "broken\n'
    (cell.dir / "big.jsonl").write_bytes(b"".join(lines))


def _synth_dir(cell: Cell, variant: str) -> None:
    """``s``: a synth output directory in one of several states."""
    s = cell.dir / "s"
    small = ("20", "corrupt_rejected", "empty_examples", "unknown_type", "corrupt_split")
    source = cell.base / ("synth" if variant in small else "synth500")
    if variant == "variants":  # an earlier split wrote every ablation variant
        source = cell.base / "synth500_variants"
    shutil.copytree(source, s)
    examples = s / "examples.jsonl"
    lines = _lines(examples)
    if variant == "corrupt_split":
        lines[9] = b"{'id': 1}\n"
    elif variant == "corrupt_mid":
        lines[10] = lines[10][:50] + b"\x01" + lines[10][50:]
    elif variant == "binary":
        lines[10] = b"\x96\xff\x00 garbage\n"
    elif variant == "corrupt_rejected":
        (s / "rejected.jsonl").write_bytes(b'{"rule": "x\x01\n')
    elif variant == "truncated_last":
        lines[-1] = lines[-1][:40]
    elif variant == "dup":
        lines[5], lines[6] = lines[6], lines[5]
        lines[100:103] = [lines[1], lines[2], lines[3]]
    elif variant == "empty_examples":
        lines = []
    elif variant == "unknown_type":
        row = json.loads(lines[0])
        row["type"] = "zzz"
        lines[0] = json.dumps(row).encode() + b"\n"
    examples.write_bytes(b"".join(lines))


def _results(cell: Cell, variant: str) -> None:
    r = cell.dir / "r"
    if variant == "unrelated":
        r.mkdir()
        (r / "package.json").write_text('{"name": "x", "version": "1"}')
        (r / "data.json").write_text("[1, 2, 3]")
        return
    shutil.copytree(cell.base / "results", r)
    result = next(r.rglob("tt.json"))
    record = json.loads(result.read_text())
    extra = result.parent.parent / "other" / "tt.json"
    if variant == "truncated":
        extra.parent.mkdir()
        extra.write_text(result.read_text()[:300])
    elif variant == "no_scores":
        extra.parent.mkdir()
        extra.write_text(
            json.dumps({k: v for k, v in record.items() if k not in ("scores", "model")})
        )
    elif variant == "wrong_types":
        extra.parent.mkdir()
        extra.write_text(json.dumps({**record, "scores": [1, 2]}))
    elif variant == "unknown_task":
        extra.parent.mkdir()
        extra.write_text(json.dumps({**record, "task": "unknown", "pairing": "zz"}))
    elif variant == "nan":
        extra.parent.mkdir()
        sts = {**record, "task": "sts", "scores": {"spearman": float("nan")}}
        extra.write_text(json.dumps(sts))


def _cache_db(path: Path, models: int = 2, vectors: int = 150) -> None:
    import numpy as np

    from bindkit.embed.cache import EmbeddingCache

    path.parent.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(path)
    for m in range(models):
        fingerprint = hashlib.sha256(f"model{m}".encode()).hexdigest()[:24]
        cache.register(fingerprint, f"st:model{m}", "{}")
        vecs = {f"k{i}": np.full(8, i, dtype=np.float32) for i in range(vectors)}
        cache.put_many(fingerprint, "p", vecs)
    cache.close()


def _foreign_db(path: Path) -> None:
    import sqlite3

    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE vectors (model TEXT, prompt TEXT, blob BLOB)")
    conn.execute("INSERT INTO vectors VALUES ('a', 'b', x'00')")
    conn.commit()
    conn.close()


def _tampered_cache(cell: Cell) -> None:
    """A cache filled by a bow run on saber/good, then one vector shortened."""
    import sqlite3

    _saber_copy(cell, "good")
    argv = ["eval", "-q", "--no-report", "--model", "bow", "--data", "saber/good"]
    assert main([*argv, "--out", "r0"]) == 0
    conn = sqlite3.connect(cell.dir / "cache" / "embeddings.sqlite")
    key = conn.execute("SELECT model, prompt, key FROM vectors LIMIT 1").fetchone()
    conn.execute(
        "UPDATE vectors SET vec = ? WHERE model = ? AND prompt = ? AND key = ?", (b"\0" * 12, *key)
    )
    conn.commit()
    conn.close()
    shutil.rmtree(cell.dir / "r0")
    settle()


def _mount(cell: Cell, name: str, options: str) -> Path:
    target = cell.dir / name
    target.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    cell.undo.append(lambda: subprocess.run(["umount", str(target)], check=False))
    return target


def _fill(directory: Path) -> None:
    with (directory / "filler").open("wb") as handle:
        try:
            while True:
                handle.write(b"\0" * 65536)
                handle.flush()
        except OSError:
            pass


def _immutable(cell: Cell, target: Path) -> None:
    done = subprocess.run(["chattr", "+i", str(target)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr +i not possible here (needs root): {done.stderr.decode().strip()}")
    cell.undo.append(lambda: subprocess.run(["chattr", "-i", str(target)], check=False))


def _saber_dir(cell: Cell, name: str, notes: bool = False) -> None:
    shutil.copytree(cell.base / "saber_good", cell.dir / name)
    if notes:
        (cell.dir / name / "notes.txt").write_text("keep me\n")


def _build(cell: Cell, name: str) -> None:
    d = cell.dir
    kind, _, arg = name.partition(":")
    if kind == "saber":
        SABER[arg](cell, arg)
    elif kind == "vocab":
        _vocab(cell, arg)
    elif kind == "trip":
        _trip(cell, arg)
    elif kind == "sts":
        _sts(cell, arg)
    elif kind == "synthfile":
        _synth_file(cell, arg)
    elif kind == "s":
        _synth_dir(cell, arg)
    elif kind == "r":
        _results(cell, arg)
    elif name == "adapters":  # `bindkit soup` inputs: two LoRA adapters, a corrupt pair
        _adapters(d)
    elif name == "regular_file":
        (d / "regular_file").write_text("x\n")
    elif name == "f":
        (d / "f").write_text("a regular file\n")
    elif name == "e":
        (d / "e").mkdir()
    elif name == "empty_txt":  # an --instructions file with only a comment
        (d / "empty.txt").write_text("# nothing here\n")
    elif name == "bad_json":
        (d / "bad.json").write_text('{"a":\n')
    elif name == "saberdir_s":
        _saber_dir(cell, "s", notes=True)
    elif name == "stray_tmp":
        (d / "s").mkdir()
        (d / "s" / ".saber.jsonl.k1ll3d00.tmp").write_bytes(b"{partial")
    elif name == "synth":
        shutil.copytree(cell.base / "synth", d / "synth")
    elif name == "d2":
        (d / "d2").mkdir()
        generate_saber_into(d / "d2" / "good", seed=7)
    elif name == "big":
        _big(cell)
    elif name == "ro":
        _mount(cell, "ro", "ro,size=1m")
    elif name == "tiny":
        _mount(cell, "tiny", "size=2m")
    elif name == "tiny_full":
        _fill(_mount(cell, "tiny", "size=2m"))
    elif name == "imm":
        (d / "imm").mkdir()
        _immutable(cell, d / "imm")
    elif name == "imm_results":
        _immutable(cell, d / "r")
    elif name == "imm_synth":
        _immutable(cell, d / "s")
    elif name == "shapes":  # a SABER set the procedural renderer can draw, as s/
        shutil.copytree(cell.base / "saber_shapes", d / "s")
    elif name == "shapes_rendered":
        shutil.copytree(cell.base / "saber_shapes_rendered", d / "s")
    elif name == "tiny_shapes":  # s/ on a 2 MB disk that is already full
        tiny = _mount(cell, "tiny", "size=2m")
        shutil.copytree(cell.base / "saber_shapes", tiny / "s")
        _fill(tiny)
        filler = tiny / "filler"
        with filler.open("r+b") as handle:  # room for the lock and a few images, not all
            handle.truncate(filler.stat().st_size - 48 * 1024)
    elif name == "texts":  # inputs of `analyze`: bound texts and image-caption pairs
        t = d / "t"
        t.mkdir()
        row = {"text": "a red cup and a blue box", "bindings": [["red", "cup"], ["blue", "box"]]}
        (t / "texts.jsonl").write_text(json.dumps(row) + "\n")
        (t / "empty.jsonl").write_text("")
        (t / "bad.jsonl").write_text('{"text": \n')
        (t / "bin.jsonl").write_bytes(b"\x96\xff\x00junk\n")
        (t / "wrong.jsonl").write_text('{"query": "x"}\n')
        (t / "img.png").write_bytes(b"\x89PNG not really")
        pairs = [{"image": "img.png", "caption": "a red cup"}] * 2
        (t / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in pairs))
        (t / "noimage.jsonl").write_text(json.dumps({"image": "x.png", "caption": "c"}) + "\n")
    elif name == "junk":  # files of the wrong kind for the benchmark tasks
        j = d / "j"
        (j / "emptydir").mkdir(parents=True)
        (j / "empty.jsonl").write_text("")
        (j / "bad.jsonl").write_text('{"caption_0": \n')
        (j / "bin.jsonl").write_bytes(b"\x96\xff\x00junk\n")
        (j / "wrong.jsonl").write_text('{"query": "x"}\n')
        (j / "junk.parquet").write_bytes(b"PAR1 not parquet")
        (j / "persistent.pkl").write_bytes(b"P0\n.")  # pickle's message spans two lines
    elif name == "rejects":  # --redo files for `saber render`
        (d / "rej_unknown.json").write_text('{"rejected": ["zzz"]}')
        (d / "rej_bad.json").write_text('{"rejected": ')
    elif name == "c.sqlite":
        _cache_db(d / "c.sqlite")
    elif name == "g.sqlite":
        (d / "g.sqlite").write_bytes(bytes(range(256)) * 16)
    elif name == "z.sqlite":
        (d / "z.sqlite").write_bytes(b"")
    elif name == "m":
        (d / "m" / "ca04").mkdir(parents=True)
    elif name == "cache:garbage":
        (d / "cache").mkdir()
        (d / "cache" / "embeddings.sqlite").write_bytes(bytes(range(256)) * 16)
    elif name == "cache:text":
        (d / "cache").mkdir()
        (d / "cache" / "embeddings.sqlite").write_text("not a database\n" * 50)
    elif name == "cache:dir":
        (d / "cache" / "embeddings.sqlite").mkdir(parents=True)
    elif name == "cache:foreign":
        _foreign_db(d / "cache" / "embeddings.sqlite")
    elif name == "cache:filled":
        _cache_db(d / "cache" / "embeddings.sqlite")
    elif name == "cache:tampered":
        _tampered_cache(cell)
    elif name == "imm_cache":
        _cache_db(d / "imm" / "embeddings.sqlite")
        _immutable(cell, d / "imm")
    elif name == "prompts_broken":
        from bindkit.synth.backends import openai as openai_backend

        shutil.copytree(Path(openai_backend.__file__).parent.parent / "data" / "prompts", d / "p")
        (d / "p" / "pair_swap.txt").write_text("{nonexistent_field}\n")
    elif name == "results_stale":
        _saber_copy(cell, "good")
        argv = ["eval", "-q", "--no-report", "--model", "bow", "--data", "saber/good"]
        assert main([*argv, "--out", "r"]) == 0
        shutil.rmtree(d / "saber")
        settle()
    elif name == "results_truncated_tt":
        _results(cell, "good")
        result = next((d / "r").rglob("tt.json"))
        result.write_text(result.read_text()[:200])
    elif name == "results_tt_dir":
        (d / "r" / "bow" / "saber" / "good" / "tt.json").mkdir(parents=True)
    elif name == "samestem":
        for sub, seed in (("a", 1), ("b", 2)):
            (d / sub).mkdir()
            rows = _lines(cell.base / "synth" / "train.jsonl")
            (d / sub / "test.jsonl").write_bytes(b"".join(rows[seed * 5 : seed * 5 + 8]))
        args = ["eval", "-q", "--model", "bow", "--task", "triplets", "--data", "a/test.jsonl"]
        assert main([*args, "--out", "r"]) == 0
        settle()
    elif name == "results_unicode":
        shutil.copytree(cell.base / "results", d / "rés ults")
    elif name == "res_bow_png":
        shutil.copytree(cell.base / "results", d / "res_bow")
        png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 40
        (d / "res_bow" / "report_saber_by_n.png").write_bytes(png)
    else:
        raise KeyError(f"unknown fixture {name!r}")


def _adapters(d: Path) -> None:
    """ad/a, ad/b: tiny peft LoRA adapters of one module; ad/badjson, ad/badst: corrupt."""
    import torch
    from safetensors.torch import save_file

    config = {"peft_type": "LORA", "r": 2, "lora_alpha": 2, "target_modules": ["query"]}
    key = "base_model.model.encoder.layer.0.attention.self.query"
    for name, seed in (("a", 1), ("b", 2), ("badjson", 3), ("badst", 4)):
        out = d / "ad" / name
        out.mkdir(parents=True)
        (out / "adapter_config.json").write_text(json.dumps(config))
        generator = torch.Generator().manual_seed(seed)
        tensors = {
            f"{key}.lora_A.weight": torch.randn(2, 4, generator=generator),
            f"{key}.lora_B.weight": torch.randn(4, 2, generator=generator),
        }
        save_file(tensors, str(out / "adapter_model.safetensors"))
    (d / "ad" / "badjson" / "adapter_config.json").write_text('{"peft_type": ')
    (d / "ad" / "badst" / "adapter_model.safetensors").write_bytes(b"\x00garbage")


def generate_saber_into(path: Path, seed: int = 0) -> None:
    from bindkit.saber.build import generate_saber

    generate_saber(path, seed=seed, per_n=4, n_max=4)


# -------------------------------------------------------------------------------------------
# the table


# fmt: off
GOOD = "saber:good"
# rows about reading input skip the report (its plot costs ~2 s a row); the eo* and rp* rows,
# which are about writing results and reports, keep it
EVAL = "eval -q --no-report --model bow"
EVAL_OUT = "eval -q --model bow"
SG = "saber generate --per-n 4 --n-max 4 -q"
SYN = "synth generate --backend template -q"
OAI = "synth generate --backend openai -q --base-url http://127.0.0.1:9/v1 --llm-model m --n 1"

SABER_VALIDATE_REPORTED = {
    "empty_file", "truncated_last", "truncated_mid", "binary_line", "wrong_types",
    "wrong_types2", "wrong_types3", "missing_key", "missing_key2", "extra_key", "null_line",
    "array_line", "synth_as_saber", "triplets_as_saber", "bom", "crlf", "unicode_text",
    "manifest_wrongtype", "dup_line", "huge_line", "latin1", "lone_surrogate",
}  # fmt: skip
SABER_VALIDATE_OK = {"good", "no_manifest", "dir with spaces é"}
SABER_VALIDATE_CLEAN = {
    "empty_dir": "saber.jsonl: not found",
    "manifest_corrupt": "manifest.json: corrupt JSON",
    "saber_json_is_dir": "saber.jsonl: not found",
}
SABER_EVAL = {
    "good": (0, "| bow |"),
    "empty_dir": (2, "saber.jsonl: not found"),
    "empty_file": (2, "holds no MCQs"),
    "no_manifest": (0, "| bow |"),
    "truncated_last": (2, "corrupt JSON"),
    "truncated_mid": (2, "saber.jsonl:6: corrupt JSON"),
    "binary_line": (2, "saber.jsonl:4: corrupt JSON"),
    "wrong_types": (2, "field 'n' must be int, got str"),
    "wrong_types2": (2, "field 'candidates' must be list"),
    "wrong_types3": (2, "every binding must be [attribute, object]"),
    "missing_key": (2, "missing field 'candidates'"),
    "missing_key2": (2, "query: missing field 'text'"),
    "extra_key": (0, "| bow |"),
    "null_line": (2, "a line must be a JSON object"),
    "array_line": (2, "a line must be a JSON object"),
    "synth_as_saber": (2, "missing field 'kind'"),
    "triplets_as_saber": (2, "missing field 'kind'"),
    "bom": (2, "Unexpected UTF-8 BOM"),
    "crlf": (0, "| bow |"),
    "unicode_text": (0, "| bow |"),
    "manifest_corrupt": (2, "manifest.json: corrupt JSON"),
    "manifest_wrongtype": (0, "| bow |"),
    "dup_line": (2, "duplicate"),
    "saber_json_is_dir": (2, "saber.jsonl: not found"),
    "dir with spaces é": (0, "| bow |"),
    "latin1": (2, "saber.jsonl:3: not UTF-8 text"),
    "lone_surrogate": (2, "saber.jsonl:3: a \\u escape encodes a lone surrogate"),
}


def _saber_rows() -> list[Case]:
    rows = []
    for name in SABER:
        quoted = shlex.quote(f"saber/{name}")
        if name in SABER_VALIDATE_OK:
            rows.append(
                C(
                    f"sv_{name}",
                    f"saber validate {quoted}",
                    (f"saber:{name}",),
                    0,
                    "every rule holds",
                )
            )
        elif name in SABER_VALIDATE_CLEAN:
            rows.append(
                C(
                    f"sv_{name}",
                    f"saber validate {quoted}",
                    f"saber:{name}",
                    2,
                    SABER_VALIDATE_CLEAN[name],
                )
            )
        elif name in SABER_VALIDATE_REPORTED:
            rows.append(
                C(f"sv_{name}", f"saber validate {quoted}", f"saber:{name}", 1, "violation(s)")
            )
        if name not in SABER_EVAL:
            continue
        rc, fragment = SABER_EVAL[name]
        rows.append(
            C(f"es_{name}", f"{EVAL} --data {quoted} --out r", (f"saber:{name}",), rc, fragment)
        )
    return rows


SG_ROWS = [
    C("sg01", f"{SG} --out a/b/c", "", 0),
    C("sg02", f"{SG} --out regular_file/out", "regular_file", 2, "regular_file/out: not a directory"),
    C("sg03", f"{SG} --out ro/out", "ro", 2, "ro/out: read-only file system"),
    C("sg04", f"{SG} --out f", "f", 2, "--out f: exists and is not a directory"),
    C("sg05", f"{SG} --out s", "saberdir_s", 2, "directory exists and is not empty"),
    C("sg06", f"{SG} --out s --overwrite", "saberdir_s", 0, "", unchanged=("s/notes.txt",)),
    C("sg07", f"{SG} --per-n 0 --out s", "", 2, "--per-n 0: must be a positive even number"),
    C("sg08", f"{SG} --per-n -2 --out s", "", 2, "--per-n -2: must be a positive even number"),
    C("sg09", f"{SG} --per-n 3 --out s", "", 2, "--per-n 3: must be a positive even number"),
    C("sg10", "saber generate -q --per-n 1000000000 --out s", "", 2, "--per-n 1000000000: at most 100,000", absent=("s",)),
    C("sg11", f"{SG} --n-min 1 --out s", "", 2, "--n-min 1: must be at least 2"),
    C("sg12", f"{SG} --n-min 0 --out s", "", 2, "--n-min 0: must be at least 2"),
    C("sg13", f"{SG} --n-min -3 --out s", "", 2, "--n-min -3: must be at least 2"),
    C("sg14", "saber generate -q --per-n 4 --n-min 5 --n-max 3 --out s", "", 2, "--n-max 3: must be at least --n-min (5)"),
    C("sg15", "saber generate -q --per-n 4 --n-max 1000 --out s", "", 2, "needs at least 1000", absent=("s",)),
    C("sg16", "saber generate -q --per-n 2 --n-max 100000000 --out s", "", 2, "more than the 200,000 allowed", absent=("s",)),
    C("sg17", f"{SG} --seed -1 --out s", "", 0),
    C("sg18", f"{SG} --seed 1208925819614629174706176 --out s", "", 0),
    C("sg19", f"{SG} --seed abc --out s", "", 2, "invalid int value: 'abc'"),
    C("sg20", f"{SG} --vocab nope --out s", "", 2, "nope: vocabulary directory not found", absent=("s",)),
    C("sg21", f"{SG} --vocab vocab/empty --out s", "vocab:empty", 2, "objects.txt: missing", absent=("s",)),
    C("sg22", f"{SG} --vocab vocab/bad_toml --out s", "vocab:bad_toml", 2, "attributes.toml: invalid TOML", absent=("s",)),
    C("sg23", f"{SG} --vocab vocab/binary_objects --out s", "vocab:binary_objects", 2, "objects.txt: not UTF-8 text", absent=("s",)),
    C("sg24", f"{SG} --vocab vocab/empty_objects --out s", "vocab:empty_objects", 2, "no objects found", absent=("s",)),
    C("sg25", f"{SG} --vocab vocab/unicode_objects --out s", "vocab:unicode_objects", 2, "object 'café' must be lower-case", absent=("s",)),
    C("sg26", f"{SG} --vocab vocab/dup_objects --out s", "vocab:dup_objects", 2, "duplicate object 'accordion'", absent=("s",)),
    C("sg27", f"{SG} --vocab regular_file --out s", "regular_file", 2, "regular_file: vocabulary directory not found", absent=("s",)),
    C("sg28", f"{SG} --out 'my results é/s p'", "", 0),
    C("sg29", "saber generate -q --per-n 60 --out tiny/sg29", "tiny", 2, "tiny/sg29/saber.jsonl: no space left on device", absent=("tiny/sg29/saber.jsonl",)),
    C("sg30", f"{SG} --out ''", "", 0),
    C("sg31", f"{SG} --out imm/s", "imm", 2, "imm/s: operation not permitted"),
    C("sg32", f"{SG} --out s", "stray_tmp", 0, "", absent=("s/.saber.jsonl.k1ll3d00.tmp",)),
    C("sg33", f"{SG} --out imm", "imm", 2, "imm/.bindkit.lock: operation not permitted"),
    C("sg34", "saber generate -q --per-n 4 --n-max 0 --out s", "", 2, "--n-max 0: must be at least --n-min (2)"),
    C("sg35", "saber generate -q --per-n 4 --n-max -1 --out s", "", 2, "--n-max -1: must be at least --n-min (2)"),
    C("sg36", "saber generate -q --per-n 4.5 --out s", "", 2, "invalid int value: '4.5'"),
]

SV_EXTRA = [
    C("sv_missing", "saber validate nope", "", 2, "nope/saber.jsonl: not found"),
    C("sv_file", "saber validate regular_file", "regular_file", 2, "regular_file/saber.jsonl: not found"),
    C("sv_jsonl", "saber validate saber/good/saber.jsonl", GOOD, 2, "saber.jsonl/saber.jsonl: not found"),
    C("sv_vocab_missing", "saber validate saber/good --vocab nope", GOOD, 2, "nope: vocabulary directory not found"),
    C("sv_vocab_other", "saber validate saber/good --vocab vocab/unicode_objects", f"{GOOD} vocab:unicode_objects", 2, "object 'café'"),
    C("sv_synthdir", "saber validate synth", "synth", 2, "synth/saber.jsonl: not found"),
]

ES_EXTRA = [
    C("es_missing", f"{EVAL} --data nope --out r", "", 2, "--data nope: not found"),
    C("es_file", f"{EVAL} --data synth/examples.jsonl --out r", "synth", 2, "examples.jsonl/saber.jsonl: not found"),
    C("es_synthdir", f"{EVAL} --data synth --out r", "synth", 2, "synth/saber.jsonl: not found"),
]

EM = "eval -q --no-report --data saber/good --out r --model"
EM_ROWS = [
    C("em00", f"{EM} st:defualt", GOOD, 2, "did you mean"),
    C("em01", f"{EM} bwo", GOOD, 2, "unknown model backend 'bwo' in 'bwo'; did you mean bow?"),
    C("em02", f"{EM} bow+dim=0", GOOD, 2, "dim"),
    C("em03", f"{EM} bow+dim=-5", GOOD, 2, "dim"),
    C("em04", f"{EM} bow+dim=abc", GOOD, 2, "dim"),
    C("em05", f"{EM} bow+foo=1", GOOD, 2, "unknown option 'foo'"),
    C("em06", f"{EM} ''", GOOD, 2, "empty model spec"),
    C("em07", f"{EM} st:", GOOD, 2, "needs an argument"),
    C("em08", f"{EM} bow:extra", GOOD, 2, "bow takes no argument"),
    C(
        "em09",
        f"{EM} st:/nonexistent/model",
        GOOD,
        2,
        "st:/nonexistent/model: not a local directory",
        slow=True,
    ),
    C("em10", f"{EM} st:sentence-transformers/all-mpnet-base-v2", GOOD, 2, "all-mpnet-base-v2"),
    C("em11", f"{EM} open_clip:ViT-B-32/openai", GOOD, 2, "open_clip", slow=True),
    C(
        "em12",
        f"{EM} mllm:/nonexistent",
        GOOD,
        2,
        "mllm:/nonexistent: not a local directory",
        slow=True,
    ),
    C("em13", f"{EM} qwen3-vl-embedding:Qwen/Qwen3-VL-Embedding-2B", GOOD, 2, "Qwen3-VL-Embedding-2B"),
    C("em14", f"{EM} bow+dim=1000000000", GOOD, 2, "dim"),
    C("em15", f"{EM} ST:default", GOOD, 2, "unknown model backend 'ST'"),
    C("em16", f"{EM} st:default+dtype=float64", GOOD, 0, "| st:default+dtype=float64 |", slow=True),
    C("em17", f"{EM} bow+dim=3+dim=4", GOOD, 2, "dim"),
    C("em18", f"{EM} bow+", GOOD, 2, "option '' must look like KEY=VALUE"),
]

EF = "eval -q --no-report --data saber/good --out r --model bow"
EF_ROWS = [
    C("ef01", f"{EF} --task sabre", GOOD, 2, "did you mean saber?"),
    C("ef02", f"{EF} --pairings xx", GOOD, 2, "unknown pairing 'xx'"),
    C("ef03", f"{EF} --pairings ti", GOOD, 2, "--pairings ti: not available"),
    C("ef04", f"{EF} --pairings ''", GOOD, 2, "--pairings"),
    C("ef05", f"{EF} --pairings ,,,", GOOD, 2, "--pairings"),
    C("ef06", f"{EF} --batch-size 0", GOOD, 2, "batch_size=0: use a whole number of at least 1"),
    C("ef07", f"{EF} --batch-size -1", GOOD, 2, "batch_size=-1: use a whole number of at least 1"),
    C("ef08", f"{EF} --batch-size 1000000000", GOOD, 0, "| bow |"),
    C("ef09", "eval -q --data saber/good --out r --model st:default --batch-size 0", GOOD, 2, "batch_size=0: use a whole number of at least 1"),
    C("ef10", f"{EF} --overwrite bogus", GOOD, 2, "invalid choice: 'bogus'"),
    C("ef11", f"{EF} --query-instruction {shlex.quote(chr(0x202E) + chr(1) + ' Find ' + chr(0x1F600))}", GOOD, 0, "| bow |"),
    C("ef12", f"{EF} --model bow", GOOD, 0, "| bow |"),
    C("ef13", f"{EVAL_OUT} --task triplets --out r", "", 2, "--task triplets needs --data"),
    C("ef14", f"{EVAL_OUT} --task sts --out r", "", 2, "--task sts needs --data"),
    C("ef15", f"{EVAL_OUT} --task TRIPLETS --data trip/good.jsonl --out r", "trip:good.jsonl", 2, "--task 'TRIPLETS': unknown task"),
    C("ef16", "eval -q --data saber/good --out r", GOOD, 2, "required: --model"),
    C("ef17", f"{EVAL} --data sts/good.tsv --out r", "sts:good.tsv", 2, "good.tsv/saber.jsonl: not found"),
    C("ef18", "eval -q --model st:default --batch-size 1 --task triplets --data trip/good.jsonl --out r", "trip:good.jsonl", 0, "| st:default |", slow=True),
    C("ef19", f"{EVAL} --batch-size abc --data saber/good --out r", GOOD, 2, "invalid int value: 'abc'"),
]

EO = f"{EVAL_OUT} --data saber/good"
EC = f"{EVAL} --data saber/good"
EO_ROWS = [
    C("eo01", f"{EO} --out regular_file/r", f"{GOOD} regular_file", 2, "regular_file/r"),
    C("eo02", f"{EO} --out ro/r", f"{GOOD} ro", 2, "ro/r: cannot create it (Read-only file system)"),
    C("eo03", f"{EO} --out f", f"{GOOD} f", 2, "f"),
    C("eo04", f"{EVAL} --data 'saber/dir with spaces é' --out 'my res é'", ("saber:dir with spaces é",), 0, "| bow |"),
    C("eo05", f"{EC} --out r", f"{GOOD} r:good", 0, "| bow |", unchanged=("r/bow",)),
    C("eo06", f"{EVAL} --data d2/good --out r --overwrite never", "results_stale d2", 0, "| bow |", unchanged=("r/bow",)),
    C("eo07", f"{EVAL} --data d2/good --out r", "results_stale d2", 0, "| bow |", unchanged=("r/bow",)),
    C("eo08", f"{EC} --out r", f"{GOOD} results_truncated_tt", 0, "| bow |"),
    C("eo09", f"{EO} --out r", f"{GOOD} results_tt_dir", 0, "tt.json: skipped, is a directory"),
    C("eo10", f"{EC} --out r --overwrite always", f"{GOOD} r:good", 0, "| bow |"),
    C("eo11", f"{EVAL} --data s --out s", "saberdir_s", 0, "| bow |", unchanged=("s/saber.jsonl", "s/manifest.json")),
    C("eo12", f"{EO} --out tiny/r", f"{GOOD} tiny_full", 2, "no space left on device"),
    C("eo13", f"{EO} --out imm/r", f"{GOOD} imm", 2, "imm/r: cannot create it (Operation not permitted)"),
    C("eo14", f"{EO} --out r", f"{GOOD} r:good imm_results", 2, "operation not permitted"),
]

EC_ROWS = [
    C("ec01", f"{EC} --out r", f"{GOOD} regular_file", 2, "regular_file/c: not a directory", env=(("BINDKIT_CACHE_DIR", "regular_file/c"),)),
    C("ec02", f"{EVAL} --no-cache --data saber/good --out r", f"{GOOD} regular_file", 0, "| bow |", env=(("BINDKIT_CACHE_DIR", "regular_file/c"),)),
    C("ec03", f"{EC} --out r", f"{GOOD} cache:garbage", 2, "embeddings.sqlite: not an SQLite cache"),
    C("ec04", f"{EC} --out r", f"{GOOD} cache:text", 2, "embeddings.sqlite: not an SQLite cache"),
    C("ec05", f"{EC} --out r", f"{GOOD} ro", 2, "ro/embeddings.sqlite: cannot use the cache", env=(("BINDKIT_CACHE_DIR", "ro"),)),
    C("ec06", f"{EC} --out r", f"{GOOD} cache:dir", 2, "embeddings.sqlite: is a directory"),
    C("ec07", f"{EC} --out r", f"{GOOD} cache:foreign", 2, "not a bindkit cache (tables: vectors); left untouched", unchanged=("cache",)),
    C("ec08", f"{EC} --out r2", "cache:tampered", 0, "| bow |"),
    C("ec09", f"{EC} --out r", f"{GOOD} imm", 2, "imm/embeddings.sqlite: cannot use the cache", env=(("BINDKIT_CACHE_DIR", "imm"),)),
]

ET = f"{EVAL} --task triplets --data"
_ET_CLEAN = {
    "empty": "trip/empty.jsonl: no triplets found",
    "blank_lines": "trip/blank_lines.jsonl: no triplets found",
    "truncated": "trip/truncated.jsonl:20: corrupt JSON",
    "binary": "trip/binary.jsonl:6: corrupt JSON",
    "wrong_types": "trip/wrong_types.jsonl:3: field 'query' must be a non-empty string",
    "missing_key": "trip/missing_key.jsonl:3: field 'negative' must be a non-empty string",
    "empty_string": "trip/empty_string.jsonl:3: field 'positive' must be a non-empty string",
    "synth_examples_as_triplets": "field 'negative' must be a non-empty string",
    "latin1": "trip/latin1.jsonl:21: not UTF-8",
}
ET_ROWS = [
    *(
        C(f"et_{n}", f"{ET} trip/{n}.jsonl --out r", f"trip:{n}.jsonl", 2, frag)
        for n, frag in _ET_CLEAN.items()
    ),
    *(
        C(f"et_{n}", f"{ET} trip/{n}.jsonl --out r", f"trip:{n}.jsonl", 0, "| bow |")
        for n in ("good", "wrong_types_label", "extra_key", "unicode", "one_row", "bom")
    ),
    C("et_no_ext", f"{ET} trip/no_ext --out r", "trip:no_ext", 0, "| bow |"),
    C("et_missing", f"{ET} nope.jsonl --out r", "", 2, "nope.jsonl: not found"),
    C("et_dir", f"{ET} synth --out r", "synth", 2, "synth"),
    C("et_saberdir", f"{ET} saber/good --out r", GOOD, 2, "saber/good"),
    C(
        "et_saberfile",
        f"{ET} saber/good/saber.jsonl --out r",
        GOOD,
        2,
        "field 'query' must be a non-empty string",
    ),
    C(
        "et_st",
        "eval -q --model st:default --task triplets --data trip/good.jsonl --out r",
        "trip:good.jsonl",
        0,
        "| st:default |",
        slow=True,
    ),
    C(
        "et_samestem",
        f"{ET} b/test.jsonl --out r",
        "samestem",
        0,
        "| bow |",
        unchanged=("r/bow/triplets",),
    ),
]

EZ = f"{EVAL} --task sts --data"
_EZ = {
    "good.tsv": (0, "| bow |"),
    "good.csv": (0, "| bow |"),
    "good.jsonl": (0, "| bow |"),
    "empty.tsv": (2, "sts/empty.tsv: empty file"),
    "header_only.tsv": (2, "sts/header_only.tsv: no rows found"),
    "bad_score.tsv": (2, "score 'high' is not a number"),
    "nan_score.tsv": (2, "sts/nan_score.tsv"),
    "const_score.tsv": (2, "sts/const_score.tsv"),
    "one_row.tsv": (2, "sts/one_row.tsv"),
    "ragged.tsv": (2, "sts/ragged.tsv: row 3"),
    "missing_col.csv": (2, "no second-text column"),
    "binary.tsv": (2, "sts/binary.tsv"),
    "latin1.tsv": (2, "sts/latin1.tsv"),
    "missing_key.jsonl": (2, "sts/missing_key.jsonl"),
    "truncated.jsonl": (2, "sts/truncated.jsonl"),
    "array_rows.jsonl": (2, "sts/array_rows.jsonl"),
    "inf_score.tsv": (2, "sts/inf_score.tsv"),
}
EZ_ROWS = [
    *(
        C(f"ez_{n.replace('.', '_')}", f"{EZ} sts/{n} --out r", f"sts:{n}", rc, frag)
        for n, (rc, frag) in _EZ.items()
    ),
    C("ez_missing", f"{EZ} nope.tsv --out r", "", 2, "nope.tsv: not found"),
    C("ez_dir", f"{EZ} sts --out r", "sts:good.tsv", 2, "sts"),
    C("ez_triplets", f"{EZ} trip/good.jsonl --out r", "trip:good.jsonl", 2, "no first-text column"),
]

RP_ROWS = [
    C("rp01", "report nope", "", 2, "nope: not found"),
    C("rp02", "report e", "e", 2, "e: no bindkit result files found"),
    C("rp03", "report regular_file", "regular_file", 2, "no bindkit result files found"),
    C("rp04", "report r", "r:good", 0, "wrote r/report.md"),
    C("rp05", "report r --out rep.html", "r:good", 0, "wrote rep.html"),
    C("rp06", "report r --out rep.csv", "r:good", 0, "wrote rep.csv"),
    C("rp07", "report r --out rep.tex", "r:good", 0, "wrote rep.tex"),
    C("rp08", "report r --out rep.xyz", "r:good", 2, "use a .md, .html, .csv, .tex file name"),
    C("rp09", "report r --out rep", "r:good", 0, "wrote rep/index.html"),  # a folder: the site
    C("rp10", "report r --out regular_file/rep.md", "r:good regular_file", 2, "regular_file"),
    C("rp11", "report r --out ro/rep.md", "r:good ro", 2, "read-only file system"),
    C("rp12", "report r --out s/saber.jsonl", "r:good saberdir_s", 2, "use a .md, .html, .csv, .tex file name"),
    C("rp13", "report r --out r/report.md", "r:good", 0, "wrote r/report.md"),
    C("rp14", "report r", "r:truncated", 0, "tt.json: skipped, corrupt JSON"),
    C("rp15", "report r", "r:no_scores", 0, "tt.json: skipped, field 'model' is missing"),
    C("rp16", "report r", "r:wrong_types", 0, "tt.json: skipped, field 'scores' is missing"),
    C("rp17", "report r", "r:unknown_task", 0, "wrote r/report.md"),
    C("rp18", "report r", "r:nan", 0, "wrote r/report.md"),
    C("rp19", "report r", "r:unrelated", 2, "r: no bindkit result files found"),
    C("rp20", "report 'rés ults'", "results_unicode", 0, "wrote rés ults/report.md"),
    C("rp21", "report r --out r", "r:good", 2, "--out r: is the input r"),
    C("rp22", "report r --out imm/rep.md", "r:good imm", 2, "operation not permitted"),
]

SY_ROWS = [
    C("sy01", f"{SYN} --n 0 --out s", "", 2, "--n 0: must be at least 1"),
    C("sy02", f"{SYN} --n -5 --out s", "", 2, "--n -5: must be at least 1"),
    C("sy03", f"{SYN} --n abc --out s", "", 2, "invalid int value: 'abc'"),
    C("sy04", f"{SYN} --n 1000000000000 --out s", "", 2, "--n 1000000000000", absent=("s",)),
    C("sy05", f"{SYN} --n 20 --out regular_file/s", "regular_file", 2, "regular_file/s"),
    C("sy06", f"{SYN} --n 20 --out ro/s", "ro", 2, "ro/s: cannot create it (Read-only file system)"),
    C("sy07", f"{SYN} --n 20 --out f", "f", 2, "--out f"),
    C("sy08", f"{SYN} --n 20 --out 'my synth é'", "", 0, "triplets: train"),
    C("sy09", f"{SYN} --n 40 --out s", "s:corrupt_mid", 2, "s/examples.jsonl:11", unchanged=("s/examples.jsonl", "s/rejected.jsonl", "s/manifest.json")),
    C("sy10", f"{SYN} --n 40 --out s", "s:binary", 2, "s/examples.jsonl:11", unchanged=("s/examples.jsonl", "s/rejected.jsonl", "s/manifest.json")),
    C("sy11", f"{SYN} --n 600 --out s", "s:corrupt_rejected", 2, "s/rejected.jsonl:1", unchanged=("s/examples.jsonl", "s/rejected.jsonl", "s/manifest.json")),
    C("sy12", f"{SYN} --n 100 --out s", "s:500", 0, "triplets: train"),
    C("sy13", f"{SYN} --n 600 --seed 5 --out s", "s:500", 2, "seed"),
    C("sy14", f"{SYN} --n 20 --out s", "saberdir_s", 2, "--out s"),
    C("sy15", f"{SYN} --n 20 --concurrency 0 --out s", "", 2, "--concurrency 0: must be at least 1"),
    C("sy16", f"{SYN} --n 20 --seed -1 --out s", "", 0, "triplets: train"),
    C("sy17", f"{SYN} --n 20 --exclude-vocab nope --out s", "", 2, "--exclude-vocab nope: not a directory"),
    C("sy18", f"{SYN} --n 20 --exclude-vocab regular_file --out s", "regular_file", 2, "--exclude-vocab regular_file: not a directory"),
    C("sy19", f"{SYN} --n 200 --exclude-vocab builtin --out s", "", 0, "triplets: train"),
    C("sy20", f"{SYN} --n 20 --exclude-vocab vocab/bad_toml --out s", "vocab:bad_toml", 2, "attributes.toml: invalid TOML"),
    C("sy21", f"{SYN} --n 5000 --out tiny/s", "tiny", 2, "tiny/s: No space left on device"),
    C("sy22", f"{SYN} --n 600 --out s", "s:truncated_last", 0, "triplets: train"),
    C("sy23", f"{SYN} --n 20 --out imm/s", "imm", 2, "imm/s: cannot create it (Operation not permitted)"),
    C("sy24", f"{SYN} --n 600 --out s", "s:truncated_last", 0, "triplets: train"),
    C("sy25", f"{SYN} --n 600 --out s", "s:dup", 2, "duplicate", unchanged=("s/examples.jsonl", "s/rejected.jsonl", "s/manifest.json")),
    C("sy26", f"{SYN} --n 500 --out s", "s:500 imm_synth", 2, "error: s/.bindkit.lock: operation not permitted"),
    C("sy27", f"{SYN} --n 20 --seed 1000000000000000000000000000000 --out s", "", 0, "triplets: train"),
    C("sy28", f"{SYN} --n 1 --out s", "", 0, "triplets: train"),
]

SO_ROWS = [
    C("so01", "synth generate --backend openai -q --n 1 --llm-model m --out s", "", 2, "--base-url (or OPENAI_BASE_URL) is required", env=(("OPENAI_BASE_URL", ""),)),
    C("so02", "synth generate --backend openai -q --n 1 --base-url http://127.0.0.1:9/v1 --out s", "", 2, "--llm-model (or BINDKIT_LLM_MODEL) is required", env=(("BINDKIT_LLM_MODEL", ""),)),
    C("so03", f"{OAI} --concurrency 0 --max-retries 0 --out s", "", 2, "--concurrency 0"),
    C("so04", f"{OAI} --concurrency -3 --max-retries 0 --out s", "", 2, "--concurrency -3"),
    C("so05", f"{OAI} --timeout 0 --max-retries 0 --out s", "", 2, "--timeout 0"),
    C("so06", f"{OAI} --timeout -1 --max-retries 0 --out s", "", 2, "--timeout -1"),
    C("so07", f"{OAI} --max-retries -1 --out s", "", 2, "--max-retries -1"),
    C("so08", f"{OAI} --prompts nope --out s", "", 2, "nope/_common.txt: missing prompt template"),
    C("so09", f"{OAI} --max-retries 0 --prompts p --out s", "prompts_broken", 2, "bad placeholder 'nonexistent_field'"),
    C("so10", "synth generate --backend openai -q --n 1 --base-url 'not a url' --llm-model m --max-retries 0 --out s", "", 2, "--base-url"),
    C("so11", "synth generate --backend openai -q --n 1 --base-url ftp://127.0.0.1:9 --llm-model m --max-retries 0 --out s", "", 2, "--base-url"),
    C("so12", f"{OAI} --concurrency 1000000 --max-retries 0 --out s", "", 2, "--concurrency 1000000"),
]

_VV = {
    "good": (0, "20 rows, 20 valid, 0 rejected"),
    "empty": (2, "synth/empty.jsonl"),
    "truncated": (1, ""),
    "binary": (2, "synth/binary.jsonl:6: not UTF-8 text"),
    "wrong_types": (1, ""),
    "wrong_types2": (1, ""),
    "wrong_types3": (1, ""),
    "missing_key": (1, ""),
    "missing_key2": (0, "20 valid"),
    "extra_key": (1, "unknown key 'zzz' in an example"),  # an unknown key is an error
    "unknown_type": (1, ""),
    "saber_as_synth": (1, ""),
    "triplets_as_synth": (0, "26 valid"),  # recognised as a triplet file and checked as one
    "unicode": (0, "20 valid"),
    "bom": (0, "20 valid"),
    "null_line": (1, ""),
}
VV_ROWS = [
    *(
        C(f"vv_{n}", f"synth validate synth/{n}.jsonl", f"synthfile:{n}.jsonl", rc, frag)
        for n, (rc, frag) in _VV.items()
    ),
    C("vv_missing", "synth validate nope.jsonl", "", 2, "nope.jsonl: not found"),
    C("vv_dir", "synth validate synth", "synth", 2, "synth: is a directory"),
    C("vv_binaryfile", "synth validate res_bow/report_saber_by_n.png", "res_bow_png", 2, "not UTF-8 text"),
    C("vv_big", "synth validate big.jsonl", "big", 1, "duplicate"),
]

SS_ROWS = [
    C("ss01", "synth split nope", "", 2, "nope/examples.jsonl: not found"),
    C("ss02", "synth split e", "e", 2, "e/examples.jsonl: not found"),
    C("ss03", "synth split s", "s:corrupt_split", 2, "s/examples.jsonl:10: corrupt JSON"),
    C("ss04", "synth split s", "s:empty_examples", 2, "s/examples.jsonl"),
    C("ss05", "synth split s --exclude-vocab nope", "s:20", 2, "--exclude-vocab nope: not a directory"),
    C("ss06", "synth split regular_file", "regular_file", 2, "regular_file/examples.jsonl: not found"),
    C("ss07", "synth split saber/good", GOOD, 2, "saber/good/examples.jsonl: not found"),
    C("ss08", "synth split ro", "ro", 2, "ro/examples.jsonl: not found"),
    C("ss09", "synth split s --seed -7", "s:500", 0, "triplets: train"),
    C("ss10", "synth split s", "s:unknown_type", 2, "unknown type 'zzz'"),
    C("ss11", "synth split s", "s:500 imm_synth", 2, "operation not permitted"),
    C("ss12", "synth split s --seed 1000000000000000000000000000000", "s:500", 0, "triplets: train"),
]

CA_ROWS = [
    C("ca01", "cache list", "cache:filled", 0, "2 model(s)"),
    C("ca02", "cache --path typo/dir/embeddings.sqlite list", "", 2, "typo/dir/embeddings.sqlite: no cache there", absent=("typo",)),
    C("ca03", "cache --path g.sqlite list", "g.sqlite", 2, "g.sqlite: not an SQLite cache"),
    C("ca04", "cache --path m/ca04 list", "m", 2, "m/ca04: is a directory"),
    C("ca05", "cache --path regular_file/x.sqlite list", "regular_file", 2, "regular_file/x.sqlite: no cache there"),
    C("ca06", "cache --path ro/x.sqlite list", "ro", 2, "ro/x.sqlite: no cache there"),
    C("ca07", "cache --path c.sqlite clear --model st:nothere", "c.sqlite", 2, "--model st:nothere: no cached model"),
    C("ca08", "cache --path c.sqlite clear --model ''", "c.sqlite", 2, "--model '': empty"),
    C("ca09", "cache clear", "", 2, "one of the arguments --model --all is required"),
    C("ca10", "cache --path g.sqlite clear --all", "g.sqlite", 2, "g.sqlite: not an SQLite cache"),
    C("ca11", "cache --path c.sqlite clear --model b", "c.sqlite", 2, "--model b: no cached model"),
    C("ca12", "cache list", "regular_file", 2, "regular_file/c/embeddings.sqlite: no cache there", env=(("BINDKIT_CACHE_DIR", "regular_file/c"),)),
    C("ca13", "cache --path z.sqlite list", "z.sqlite", 2, "z.sqlite: no cache there"),
    C("ca14", "cache --path imm/embeddings.sqlite clear --all", "imm_cache", 2, "imm/embeddings.sqlite: cannot use the cache"),
]

# issue 21: the commands added since the first review (saber render/review, synth re-splits
# and deadlines, demo finetune, analyze, the benchmark tasks), one row per cell
I21_ROWS = [
    C("i21_ev01", "eval -q --no-report --model bow+dim=0 --data saber/good --out r", GOOD, 2, "dim=0", absent=("r",)),
    C("i21_ca01", "cache list --path c.sqlite", "c.sqlite", 0, "c.sqlite: 2 model(s)"),
    C("i21_ca02", "cache clear --path c.sqlite --model nope", "c.sqlite", 2, "--model nope: no cached model"),
    C("i21_ca03", "cache --path elsewhere.sqlite list --path c.sqlite", "c.sqlite", 0, "c.sqlite: 2 model(s)"),
    C("i21_em01", "eval -q --no-report --model sentence-transformers/all-MiniLM-L6-v2 --data saber/good --out r", GOOD, 2, "write st:sentence-transformers/all-MiniLM-L6-v2 (sentence-transformers)", absent=("r",)),
    C("i21_top01", "eval --taks sts --model bow", "", 2, "unrecognized arguments: --taks sts; did you mean --task?"),
    C("i21_top02", "synth generate --n 5 --out s --concurency 3 --sedd 1", "", 2, "did you mean --concurrency for --concurency, --seed for --sedd?"),
    C("i21_top03", "models --zzzzzz", "", 2, "unrecognized arguments: --zzzzzz"),
    C("i21_rn01", "saber render tiny/s -q --size 64", "tiny_shapes", 2, "png: no space left on device; free space or choose another disk"),
    C("i21_ev02", "eval -q --no-report --model nosuch:x --data saber/good --out a/b/r", GOOD, 2, "unknown model backend", absent=("a",)),
]

AT = "analyze attention --model bow --texts"
TC = "analyze attention --model builtin:tiny-clip --texts"
MG = "analyze modality-gap --model builtin:tiny-clip --pairs"
I21_ANALYZE = [
    C("i21_an01", f"{AT} t/texts.jsonl --out a", "texts", 2, "bow: has no torch forward path", absent=("a",)),
    C("i21_an02", f"{TC} nope.jsonl --out a", "", 2, "nope.jsonl: not found"),
    C("i21_an03", f"{TC} t/empty.jsonl --out a", "texts", 2, "t/empty.jsonl: no texts found"),
    C("i21_an04", f"{TC} t/bad.jsonl --out a", "texts", 2, "t/bad.jsonl:1: corrupt JSON"),
    C("i21_an05", f"{TC} t/bin.jsonl --out a", "texts", 2, "t/bin.jsonl:1: not UTF-8 text"),
    C("i21_an06", f"{TC} t/wrong.jsonl --out a", "texts", 2, "cannot read attribute-object phrases"),
    C("i21_an07", f"{TC} e --out a", "e", 2, "e/saber.jsonl: not found"),
    C("i21_an08", f"{TC} t/texts.jsonl --limit 0", "texts", 2, "--limit 0: must be at least 1"),
    C("i21_an09", f"{TC} t/texts.jsonl --limit -3", "texts", 2, "--limit -3: must be at least 1"),
    C("i21_an10", f"{TC} t/texts.jsonl --batch-size 0", "texts", 2, "--batch-size 0: must be from 1 to 4096"),
    C("i21_an11", f"{TC} t/texts.jsonl --batch-size 1000000000000", "texts", 2, "--batch-size 1,000,000,000,000: must be from 1 to 4096"),
    C("i21_an12", f"{TC} t/texts.jsonl --batch-size abc", "texts", 2, "invalid int value: 'abc'"),
    C("i21_an13", f"{TC} t/texts.jsonl --out t/texts.jsonl", "texts", 2, "--out t/texts.jsonl: is the input t/texts.jsonl"),
    C("i21_an14", f"{TC} saber/good --out saber/good", GOOD, 2, "--out saber/good: is the input saber/good"),
    C("i21_an15", f"{TC} saber/good --out saber/good/att", GOOD, 2, "is inside the input directory saber/good"),
    C("i21_an16", f"{TC} t/texts.jsonl --out regular_file/a", "texts regular_file", 2, "regular_file/a: not a directory"),
    C("i21_an17", f"{TC} t/texts.jsonl --out t/texts.jsonl/a", "texts", 2, "is inside the input directory t/texts.jsonl"),
    C("i21_an18", f"{TC} t/texts.jsonl --out a", "texts", 2, "builtin:tiny-clip: attention analysis needs a sentence-transformers or multimodal-LLM model", absent=("a",), slow=True),
    C("i21_mg01", f"{MG} nope.jsonl --out m", "", 2, "--pairs nope.jsonl: no such file"),
    C("i21_mg02", f"{MG} t/empty.jsonl --out m", "texts", 2, "needs at least 2 image–caption rows"),
    C("i21_mg03", f"{MG} t/bad.jsonl --out m", "texts", 2, "t/bad.jsonl:1: not valid JSON"),
    C("i21_mg04", f"{MG} t/wrong.jsonl --out m", "texts", 2, "t/wrong.jsonl:1: each row needs an 'image' path and a 'caption' text"),
    C("i21_mg05", f"{MG} t/bin.jsonl --out m", "texts", 2, "--pairs t/bin.jsonl: not UTF-8 text (byte 0)"),
    C("i21_mg06", f"{MG} e --out m", "e", 2, "bindkit: error: e: is a directory; give a file path, not a directory"),
    C("i21_mg07", f"{MG} t/pairs.jsonl --out t/pairs.jsonl", "texts", 2, "--out t/pairs.jsonl: is the input t/pairs.jsonl"),
    C("i21_mg08", f"{MG} t/pairs.jsonl --out regular_file/m", "texts regular_file", 2, "regular_file/m: not a directory"),
    C("i21_mg09", f"{MG} t/noimage.jsonl --out m", "texts", 2, "image 'x.png' not found"),
    C("i21_mg10", "analyze modality-gap --model bow --pairs t/pairs.jsonl --out m", "texts", 2, "bow", absent=("m",)),
]

_TASK_CELLS = {
    "sugarcrepe": {"emptydir": "j/emptydir/add_obj.json: not found", "empty.jsonl": "j/empty.jsonl: not a folder", "junk.parquet": "not a folder"},
    "sugarcrepe_pp": {"emptydir": "j/emptydir/replace_att.json: not found", "bad.jsonl": "j/bad.jsonl: not a folder"},
    "winoground": {"emptydir": "j/emptydir/examples.jsonl: not found", "empty.jsonl": "j/empty.jsonl: no items", "bad.jsonl": "j/bad.jsonl:1: corrupt JSON", "bin.jsonl": "j/bin.jsonl: binary data", "wrong.jsonl": "j/wrong.jsonl:1: field 'caption_0' must be a string"},
    "colorswap": {"emptydir": "j/emptydir: no .parquet files", "empty.jsonl": "j/empty.jsonl: not a readable parquet file", "junk.parquet": "j/junk.parquet: not a readable parquet file"},
    "bivlc": {"emptydir": "j/emptydir: no .parquet files", "bin.jsonl": "j/bin.jsonl: not a readable parquet file", "junk.parquet": "j/junk.parquet: not a readable parquet file"},
    "aro": {"emptydir": "none of visual_genome_relation.json", "bad.jsonl": "j/bad.jsonl: not a folder"},
    "mmeb": {"emptydir": "j/emptydir: no <subset>/*.parquet folders", "junk.parquet": "no <subset>/*.parquet folders"},
    "roxford5k": {"emptydir": "j/emptydir/gnd_roxford5k.pkl: not found", "empty.jsonl": "j/empty.jsonl: not a readable pickle", "persistent.pkl": "j/persistent.pkl: not a readable pickle"},
    "rparis6k": {"emptydir": "j/emptydir/gnd_rparis6k.pkl: not found", "bad.jsonl": "j/bad.jsonl: not a readable pickle", "persistent.pkl": "j/persistent.pkl: not a readable pickle"},
}
I21_TASKS = [
    *(
        C(f"i21_tk_{task}_{name.replace('.', '_')}", f"{EVAL} --task {task} --data j/{name} --out r", "junk", 2, fragment, absent=("r",))
        for task, cells in _TASK_CELLS.items()
        for name, fragment in cells.items()
    ),
    *(
        C(f"i21_tk_{task}_missing", f"{EVAL} --task {task} --data nope --out r", "", 2, "--data nope: not found", absent=("r",))
        for task in _TASK_CELLS
    ),
]

RN = "saber render s -q"
RV = "saber review s"
DM = "demo finetune --out d"
VARIANTS = "no_overlap/, random/, overlap_only/, mixed_lengths/"
I21_RENDER = [
    C("i21_sg01", f"{SG} --vocab vocab/good --out vocab/good --overwrite", "vocab:good", 2, "--out vocab/good: is the input vocab/good"),
    C("i21_sg02", f"{SG} --vocab vocab/good --out vocab/good/s", "vocab:good", 2, "--out vocab/good/s: is inside the input directory vocab/good", absent=("vocab/good/s",)),
    C("i21_rn02", "saber render nope", "", 2, "nope/saber.jsonl: not found"),
    C("i21_rn03", "saber render e", "e", 2, "e/saber.jsonl: not found"),
    C("i21_rn04", "saber render regular_file", "regular_file", 2, "regular_file: not a directory"),
    C("i21_rn05", "saber render saber/good -q", GOOD, 2, "cannot be drawn procedurally"),
    C("i21_rn06", "saber render saber/truncated_mid -q", "saber:truncated_mid", 2, "saber.jsonl:6: corrupt JSON"),
    C("i21_rn07", "saber render saber/empty_file -q", "saber:empty_file", 2, "holds no MCQs"),
    C("i21_rn08", f"{RN} --size 0", "shapes", 2, "--size 0: must be from 16 to 4096", absent=("s/images",)),
    C("i21_rn09", f"{RN} --size -5", "shapes", 2, "--size -5: must be from 16 to 4096"),
    C("i21_rn10", f"{RN} --size 100000", "shapes", 2, "--size 100,000: must be from 16 to 4096"),
    C("i21_rn11", f"{RN} --size 32", "shapes", 2, "--size 32: the procedural renderer needs 64..4096 pixels"),
    C("i21_rn12", f"{RN} --workers 0", "shapes", 2, "--workers 0: must be from 1 to 256"),
    C("i21_rn13", f"{RN} --workers 100000", "shapes", 2, "--workers 100,000: must be from 1 to 256"),
    C("i21_rn14", f"{RN} --backend openai --model m --timeout nan", "shapes", 2, "--timeout nan: must be more than 0 and at most 3600"),
    C("i21_rn15", f"{RN} --backend openai --model m --timeout 0", "shapes", 2, "--timeout 0: must be more than 0"),
    C("i21_rn16", f"{RN} --backend openai --model m --deadline inf", "shapes", 2, "--deadline inf: must be more than 0 and at most 86,400"),
    C("i21_rn17", f"{RN} --backend openai --model m --backoff -1", "shapes", 2, "--backoff -1: must be from 0 to 600"),
    C("i21_rn18", f"{RN} --backend openai --model m --retries -1", "shapes", 2, "--retries -1: must be from 0 to 100"),
    C("i21_rn19", f"{RN} --backend diffusers --model m --steps 0", "shapes", 2, "--steps 0: must be from 1 to 1000"),
    C("i21_rn20", f"{RN} --backend diffusers --model m --guidance nan", "shapes", 2, "--guidance nan: must be from 0 to 100"),
    C("i21_rn21", f"{RN} --seed abc", "shapes", 2, "invalid int value: 'abc'"),
    C("i21_rn22", f"{RN} --backend openai", "shapes", 2, "--model is required for --backend openai"),
    C("i21_rn23", f"{RN} --backend openai --model m --base-url ftp://x", "shapes", 2, "--base-url 'ftp://x': must start with http:// or https://"),
    C("i21_rn24", f"{RN} --backend diffusers", "shapes", 2, "--model is required for --backend diffusers"),
    C("i21_rn25", f"{RN} --option steps=3", "shapes", 2, "--option: the procedural renderer takes no model or request options"),
    C("i21_rn26", f"{RN} --backend openai --model m --option x", "shapes", 2, "--option 'x': must look like KEY=VALUE"),
    C("i21_rn27", f"{RN} --redo nope.json", "shapes", 2, "--redo nope.json: cannot read"),
    C("i21_rn28", f"{RN} --size 64 --redo rej_unknown.json", "shapes_rendered rejects", 2, "--redo: 1 id(s) not in s (first: zzz)"),
    C("i21_rn29", f"{RN} --size 64 --redo rej_bad.json", "shapes_rendered rejects", 2, "--redo rej_bad.json: corrupt JSON"),
    C("i21_rn30", f"{RN} --size 64", "shapes imm_synth", 2, "s/.bindkit.lock: operation not permitted"),
    C("i21_rn31", f"{RN} --size 64", "shapes", 0, "", unchanged=()),
    C("i21_rn32", f"{RN} --size 64", "shapes_rendered", 0, "", unchanged=("s/images",)),  # resumes: every image kept
    C("i21_rn33", f"{RN} --backend openai --model m --base-url http://127.0.0.1:9/v1 --retries 0 --timeout 1", "shapes", 2, "cannot connect ([Errno 111] Connection refused); check that the server is up", unchanged=("s/saber.jsonl",)),  # a refused connection stops at once (no retries per image)
]
I21_REVIEW = [
    C("i21_rv01", f"{RV} --out s/saber.jsonl", "shapes_rendered", 2, "--out s/saber.jsonl: give an .html file name"),
    C("i21_rv02", f"{RV} --out s/manifest.json", "shapes_rendered", 2, "--out s/manifest.json: give an .html file name"),
    C("i21_rv03", f"{RV} --out s/images", "shapes_rendered", 2, "give an .html file name"),
    C("i21_rv04", f"{RV} --out elsewhere.html", "shapes_rendered", 2, "must be a file directly in s", absent=("elsewhere.html",)),
    C("i21_rv05", "saber review nope", "", 2, "nope/saber.jsonl: not found"),
    C("i21_rv06", "saber review e", "e", 2, "e/saber.jsonl: not found"),
    C("i21_rv07", "saber review saber/truncated_mid", "saber:truncated_mid", 2, "saber.jsonl:6: corrupt JSON"),
    C("i21_rv08", "saber review saber/synth_as_saber", "saber:synth_as_saber", 2, "missing field 'kind'"),
    C("i21_rv09", RV, "shapes_rendered imm_synth", 2, "s/review.html: operation not permitted"),
    C("i21_rv10", RV, "shapes_rendered", 0, "wrote s/review.html", unchanged=("s/saber.jsonl", "s/manifest.json", "s/images")),
    C("i21_rv11", f"{RV} --out s/rev.html", "shapes_rendered", 0, "wrote s/rev.html", unchanged=("s/saber.jsonl", "s/manifest.json", "s/images")),
    C("i21_rv12", "saber review regular_file", "regular_file", 2, "regular_file/saber.jsonl: not found"),
]
I21_SYNTH = [
    C("i21_ss01", "synth split s", "s:variants", 2, f"s: this split would delete {VARIANTS} from an earlier split"),
    C("i21_ss02", "synth split s --exclude-vocab builtin", "s:variants", 2, "would delete mixed_lengths/ from an earlier split; pass --mixed-lengths again"),
    C("i21_ss03", "synth split s --mixed-lengths", "s:variants", 2, "would delete no_overlap/, random/, overlap_only/ from an earlier split; pass --exclude-vocab again"),
    C("i21_ss04", "synth split s --exclude-vocab builtin --mixed-lengths", "s:variants", 0, "triplets: train"),
    C("i21_ss05", "synth split s --drop-variants", "s:variants", 0, "removed s/no_overlap/, s/random/, s/overlap_only/, s/mixed_lengths/ (--drop-variants)", absent=("s/random",)),
    C("i21_ss06", "synth split s --verify", "s:variants", 0, "one complete set"),
    C("i21_sy01", f"{SYN} --n 500 --out s", "s:variants", 2, "--drop-variants to delete them"),
    C("i21_sy02", f"{SYN} --n 500 --out s --drop-variants", "s:variants", 0, "triplets: train", absent=("s/no_overlap",)),
    C("i21_sy03", f"{SYN} --n 500 --out s --no-splits", "s:variants", 0, "500 examples"),
    C("i21_so01", f"{OAI} --deadline nan --out s", "", 2, "--deadline nan: must be at least --timeout (120)", absent=("s",)),
    C("i21_so02", f"{OAI} --deadline 10 --out s", "", 2, "--deadline 10.0: must be at least --timeout (120)"),
    C("i21_so03", f"{OAI} --deadline -1 --out s", "", 2, "--deadline -1.0"),
    C("i21_so04", f"{OAI} --deadline 1e9 --out s", "", 2, "at most 604,800"),
    C("i21_so05", f"{OAI} --timeout inf --out s", "", 2, "--timeout inf"),
    C("i21_so06", f"{OAI} --timeout nan --out s", "", 2, "--timeout nan"),
    C("i21_so07", f"{OAI} --deadline abc --out s", "", 2, "invalid float value: 'abc'"),
]
I21_DEMO = [
    C("i21_dm01", f"{DM} --examples 1000000000000", "", 2, "--examples 1,000,000,000,000: must be from 100 to 1,000,000", absent=("d",)),
    C("i21_dm02", f"{DM} --examples 5", "", 2, "--examples 5: must be from 100 to 1,000,000"),
    C("i21_dm03", f"{DM} --examples -1", "", 2, "--examples -1"),
    C("i21_dm04", f"{DM} --examples abc", "", 2, "invalid int value: 'abc'"),
    C("i21_dm05", f"{DM} --preserve-weight nan", "", 2, "--preserve-weight nan: must be from 0 to 1000", absent=("d",)),
    C("i21_dm06", f"{DM} --preserve-weight inf", "", 2, "--preserve-weight inf: must be from 0 to 1000"),
    C("i21_dm07", f"{DM} --preserve-weight -1", "", 2, "--preserve-weight -1: must be from 0 to 1000"),
    C("i21_dm08", f"{DM} --saber-per-n 3", "", 2, "--saber-per-n 3: must be even", absent=("d",)),
    C("i21_dm09", f"{DM} --saber-per-n 0", "", 2, "--saber-per-n 0: must be from 2 to 100,000"),
    C("i21_dm10", f"{DM} --saber-per-n 1000000000", "", 2, "--saber-per-n 1,000,000,000: must be from 2 to 100,000"),
    C("i21_dm11", f"{DM} --max-triplets 0", "", 2, "--max-triplets 0: must be from 32 to 2,000,000"),
    C("i21_dm12", f"{DM} --max-triplets 100000000000", "", 2, "--max-triplets 100,000,000,000"),
    C("i21_dm13", f"{DM} --sts sts/bad_score.tsv", "sts:bad_score.tsv", 2, "--sts: sts/bad_score.tsv: row 2: score 'high' is not a number", absent=("d",)),
    C("i21_dm14", f"{DM} --sts sts/empty.tsv", "sts:empty.tsv", 2, "--sts: sts/empty.tsv: empty file", absent=("d",)),
    C("i21_dm15", f"{DM} --sts sts/binary.tsv", "sts:binary.tsv", 2, "--sts: sts/binary.tsv", absent=("d",)),
    C("i36_dm_sts_missing", f"{DM} --sts SICK_trial.txt", "", 2, "--sts SICK_trial.txt: file not found; `bindkit fetch sts --to sick` downloads SICK", absent=("d",)),
    C("i21_dm16", f"{DM} --sts sts/const_score.tsv", "sts:const_score.tsv", 2, "Spearman is undefined for constant scores", absent=("d",)),
    C("i21_dm17", f"{DM} --sts sts/missing_col.csv", "sts:missing_col.csv", 2, "no second-text column", absent=("d",)),
    C("i21_dm18", f"{DM} --sts trip/good.jsonl", "trip:good.jsonl", 2, "no first-text column", absent=("d",)),
    C("i21_dm19", f"{DM} --sts nope.tsv", "", 2, "--sts nope.tsv: file not found"),
    C("i21_dm20", f"{DM} --sts sts", "sts:good.tsv", 2, "--sts sts: file not found"),
    C("i21_dm21", "demo finetune", "", 2, "the following arguments are required: --out"),
    C("i21_dm22", "demo finetune --out regular_file/d", "regular_file", 2, "regular_file/d: not a directory"),
    C("i21_dm23", "demo finetune --out ro/d", "ro", 2, "--out ro/d: ro is not writable"),
    C("i21_dm24", "demo finetune --out imm/d", "imm", 2, "--out imm/d: imm is not writable"),
]

# the commands of stop 28: compare, fetch, export, export-results, eval --instructions, the
# results site, relational preservation, the tiny-clip demo
EI = "eval -q --model bow --no-cache --out r2 --instructions"
TT = "train triplets --model st:default --train trip/good.jsonl --out tr"
S28_ROWS = [
    C("s28_cmp01", "compare nope r --task saber", "r:good", 2, "nope: not found"),
    C("s28_cmp02", "compare r e --task saber", "r:good e", 2, "e: holds no saber result"),
    C("s28_cmp03", "compare r r --task saber --pairing zz", "r:good", 2, "no saber result with --pairing zz; present: tt"),
    C("s28_cmp04", "compare r r --task saber --out regular_file/x", "r:good regular_file", 2, "regular_file/x: not a directory"),
    C("s28_cmp05", "compare r r --task saber --out cmp", "r:good", 0, "wrote cmp/compare.md"),
    C("s28_fe01", "fetch nope", "", 2, "fetch 'nope': no download plan; fetchable: aro"),
    C("s28_fe02", "fetch sugarcrepe --to regular_file/x", "regular_file", 2, "regular_file/x: not a directory"),
    C("s28_fe03", "fetch --list", "", 0, "sugarcrepe_pp"),
    C("s28_ex01", "export saber nope --out hf", "", 2, "nope/saber.jsonl: not found", absent=("hf",)),
    C("s28_ex02", "export saber s --out s", "saberdir_s", 2, "--out s: is the input s"),
    C("s28_ex03", "export saber s --out s/hf", "saberdir_s", 2, "--out s/hf: is inside the input directory s"),
    C("s28_ex04", "export saber s --out hf --license ''", "saberdir_s", 2, "--license '': give a licence identifier", absent=("hf",)),
    C("s28_ex05", "export saber s --out hf --license 'a b'", "saberdir_s", 2, "--license 'a b': give a licence identifier", absent=("hf",)),
    C("s28_ex06", "export saber s --out regular_file/hf", "saberdir_s regular_file", 2, "regular_file: not a directory"),
    C("s28_ex07", "export clusters e --out hf", "e", 2, "give the clusters JSONL", absent=("hf",)),
    C("s28_ex08", "export synth e --out hf", "e", 2, "e/splits.json: missing", absent=("hf",)),
    C("s28_ex09", "export nope s --out hf", "saberdir_s", 2, "invalid choice: 'nope'"),
    C("s28_er01", "export-results nope --format mteb --out m", "", 2, "nope: not found"),
    C("s28_er02", "export-results r --format xyz --out m", "r:good", 2, "invalid choice: 'xyz'"),
    C("s28_er03", "export-results r --format mteb --out r", "r:good", 2, "--out r: is the input r"),
    C("s28_in01", f"{EI} nope.txt", "", 2, "--instructions nope.txt: not found", absent=("r2",)),
    C("s28_in02", f"{EI} e", "e", 2, "--instructions e: a directory", absent=("r2",)),
    C("s28_in03", f"{EI} empty.txt", "empty_txt", 2, "empty.txt: holds no instruction", absent=("r2",)),
    C("s28_in04", f"{EI} bad.json", "bad_json", 2, "bad.json:2: not valid JSON", absent=("r2",)),
    C("s28_site01", "report r --out r/site", "r:good", 2, "--out r/site: is inside the input directory r"),
    C("s28_site02", "report r --out e", "r:good e", 0, "wrote e/index.html"),  # an empty folder may become the site
    C("s28_site03", "report r --out s", "r:good saberdir_s", 2, "--out s: exists and is not a bindkit site"),
    C("s28_tr01", f"{TT} --preserve-relational nan", "trip:good.jsonl", 2, "--preserve-relational nan: give a finite number in [0, 1000]", absent=("tr",)),
    C("s28_tr02", f"{TT} --preserve-relational inf", "trip:good.jsonl", 2, "--preserve-relational inf: give a finite number in [0, 1000]"),
    C("s28_tr03", f"{TT} --preserve-relational -1", "trip:good.jsonl", 2, "--preserve-relational -1.0: give a finite number in [0, 1000]"),
    C("s28_dm01", "demo finetune --model builtin:tiny-clip --out d --steps 0", "", 2, "--steps 0: must be from 1 to 100,000", absent=("d",)),
    C("s28_dm02", "demo finetune --model builtin:tiny-clip --out d --steps nan", "", 2, "invalid int value: 'nan'"),
    C("s28_dm03", "demo finetune --model bow --out d", "", 2, "invalid choice: 'bow'"),
]

# stop 29: the triplet loss choice and its temperature, the demo's preservation weight
S29_ROWS = [
    C("s29_tr01", f"{TT} --loss bogus", "trip:good.jsonl", 2, "invalid choice: 'bogus'", absent=("tr",)),
    C("s29_tr02", f"{TT} --loss infonce --temperature 0", "trip:good.jsonl", 2, "--temperature 0.0: give a finite number in [0.001, 10]", absent=("tr",)),
    C("s29_tr03", f"{TT} --loss infonce --temperature nan", "trip:good.jsonl", 2, "--temperature nan: give a finite number in [0.001, 10]"),
    C("s29_tr04", f"{TT} --loss infonce --temperature inf", "trip:good.jsonl", 2, "--temperature inf: give a finite number in [0.001, 10]"),
    C("s29_dm01", "demo finetune --out d --preserve-weight nan", "", 2, "--preserve-weight nan: must be from 0 to 1000", absent=("d",)),
    C("s29_dm02", "demo finetune --out d --preserve-weight -1", "", 2, "--preserve-weight -1: must be from 0 to 1000", absent=("d",)),
]

# stop 31: `bindkit soup` and the demo's --soup
SU = "soup ad/a ad/b"
S31_ROWS = [
    C("s31_su01", "soup ad/a --out o", "adapters", 2, "soup: give two or more adapter directories", absent=("o",)),
    C("s31_su02", "soup ad/a ad/nope --out o", "adapters", 2, "ad/nope: not a peft adapter directory", absent=("o",)),
    C("s31_su03", "soup ad/a ad/badjson --out o", "adapters", 2, "adapter_config.json: not valid JSON", absent=("o",)),
    C("s31_su04", "soup ad/a ad/badst --out o", "adapters", 2, "not a readable safetensors file", absent=("o",)),
    C("s31_su05", f"{SU} --weights nan 0.5 --out o", "adapters", 2, "--weights [nan, 0.5]: give finite numbers", absent=("o",)),
    C("s31_su06", f"{SU} --weights inf 0.5 --out o", "adapters", 2, "--weights [inf, 0.5]: give finite numbers", absent=("o",)),
    C("s31_su07", f"{SU} --weights 1 --out o", "adapters", 2, "--weights: give one per adapter (2), not 1", absent=("o",)),
    C("s31_su08", f"{SU} --out ad/a", "adapters", 2, "--out ad/a: is an input adapter"),
    C("s31_su09", f"{SU} --out o", "adapters", 0, "\"rank\": 4"),
    C("s31_su10", f"{SU} --out regular_file/o", ("adapters", "regular_file"), 2, "regular_file/o"),
    C("s31_dm01", "demo finetune --out d --soup 0", "", 2, "--soup 0: must be from 1 to 16", absent=("d",)),
    C("s31_dm02", "demo finetune --out d --soup nan", "", 2, "invalid int value: 'nan'", absent=("d",)),
]

# issue 36: several tasks in one eval (`--task A --task B` used to run only B, silently)
TWO = "eval -q --no-report --model bow --task sts --task triplets"
I36_ROWS = [
    C("i36_tasks", f"{TWO} --data sts/good.tsv --data trip/good.jsonl --out r", ("sts:good.tsv", "trip:good.jsonl"), 0, "| sts good (sts/good.tsv) T→T spearman | triplets good (trip/good.jsonl) T→T triplet_accuracy |"),
    C("i36_tasks_comma", "eval -q --no-report --model bow --task sts,triplets --data sts/good.tsv --data trip/good.jsonl --out r", ("sts:good.tsv", "trip:good.jsonl"), 0, "triplets good"),
    C("i36_tasks_one_data", f"{TWO} --data sts/good.tsv --out r", "sts:good.tsv", 2, "--data: given 1 times for 2 tasks; give one per task", absent=("r",)),
    C("i36_tasks_twice", "eval -q --model bow --task sts --task sts --out r", "", 2, "--task sts: given twice", absent=("r",)),
    C("i36_tasks_option", f"{TWO} --task-option k=v --out r", "", 2, "--task-option: a setting of one task", absent=("r",)),
    C("i36_tasks_unknown", "eval -q --model bow --task sts --task nope --out r", "", 2, "--task 'nope': unknown task", absent=("r",)),
    C("i36_one_task_two_data", f"{EVAL} --task sts --data sts/good.tsv --data sts/good.tsv --out r", "sts:good.tsv", 2, "--data: given 2 times for one task", absent=("r",)),
]

TOP_ROWS = [
    C("top01", "", "", 2, "usage: bindkit"),
    C("top02", "evall --model bow", "", 2, "invalid choice: 'evall'"),
    C("top03", "models", "", 0, "backend"),
    C("top04", "models extra", "", 2, "unrecognized arguments: extra"),
]


# fmt: on

ROWS: list[Case] = [
    *TOP_ROWS,
    *SG_ROWS,
    *_saber_rows(),
    *SV_EXTRA,
    *ES_EXTRA,
    *EM_ROWS,
    *EF_ROWS,
    *EO_ROWS,
    *EC_ROWS,
    *ET_ROWS,
    *EZ_ROWS,
    *RP_ROWS,
    *SY_ROWS,
    *SO_ROWS,
    *VV_ROWS,
    *SS_ROWS,
    *CA_ROWS,
    *I21_ROWS,
    *I21_ANALYZE,
    *I21_TASKS,
    *I21_RENDER,
    *I21_REVIEW,
    *I21_SYNTH,
    *I21_DEMO,
    *S28_ROWS,
    *S29_ROWS,
    *S31_ROWS,
    *I36_ROWS,
]
INPUTS = ("saber", "vocab", "trip", "sts", "synth", "a", "b", "d2", "big.jsonl", "c.sqlite", "ad")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: a small SABER set, synth runs of 20 and 500 examples, a results directory."""
    from bindkit.saber.vocab import builtin_vocabulary_dir

    root = tmp_path_factory.mktemp("matrix-base")
    generate_saber_into(root / "saber_good")
    shutil.copytree(builtin_vocabulary_dir(), root / "vocab")
    for name, n in (("synth", "20"), ("synth500", "500")):
        argv = ["synth", "generate", "--backend", "template", "-q", "--n", n]
        assert main([*argv, "--out", str(root / name)]) == 0
    from bindkit.saber.build import generate_saber
    from bindkit.saber.render.procedural import ProceduralBackend
    from bindkit.saber.render.renderer import render_saber
    from bindkit.synth.splits import write_splits

    shutil.copytree(root / "synth500", root / "synth500_variants")
    write_splits(root / "synth500_variants", exclude_vocab="builtin", mixed_lengths=True)
    generate_saber(root / "saber_shapes", per_n=2, n_max=3, vocab="shapes")
    shutil.copytree(root / "saber_shapes", root / "saber_shapes_rendered")
    render_saber(root / "saber_shapes_rendered", ProceduralBackend(size=64), progress=False)
    saber = root / "saber" / "good"
    shutil.copytree(root / "saber_good", saber)
    eval_argv = ["eval", "-q", "--model", "bow", "--no-cache", "--no-report", "--data", str(saber)]
    assert main([*eval_argv, "--out", str(root / "results")]) == 0
    return root


def run_case(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    """This file's builders and guarded inputs through the shared engine (``tests/_matrix.py``)."""
    return run_matrix_case(case, cell, monkeypatch, _build, INPUTS)


def _params(slow: bool) -> list[object]:
    return [
        pytest.param(
            case,
            id=case.id,
            marks=[pytest.mark.skip(reason="fixed on another branch; lead enables at merge")]
            if case.id in PENDING_OTHER_HELPERS
            else [],
        )
        for case in ROWS
        if case.slow == slow
    ]


_check = check_outcome


@pytest.mark.parametrize("case", _params(slow=False))
def test_matrix_row(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    _check(case, run_case(case, cell, monkeypatch))


@pytest.mark.slow
@pytest.mark.parametrize("case", _params(slow=True))
def test_matrix_row_with_a_real_model(
    case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch
) -> None:
    _check(case, run_case(case, cell, monkeypatch))


def test_every_row_is_unique_and_every_pending_id_is_a_row() -> None:
    ids = [case.id for case in ROWS]
    assert len(ids) == len(set(ids))
    assert set(ids) >= PENDING_OTHER_HELPERS
