# ruff: noqa: E501 - the matrix reads best as a table, one row per line
"""The turn-4 reliability review's non-clean cells of fetch, export, export-results, compare and
report-site (``../shared/reviews/turn4/reliability.md``), one row each, through the shared engine
(``tests/_matrix.py``); plus two concurrent exports into one ``--out``.

Fetch rows run the real ``bindkit fetch roxford5k --no-images`` with its plan pointed at a local
HTTP server on 127.0.0.1 (one route per behaviour: a good file, an HTML error page, a trickle, a
server that never answers), and the socket timeout and stall window shortened, so every row ends
in seconds; each server loop is bounded.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from _matrix import C, Case, Cell, Outcome, check_outcome, run_matrix_case
from bindkit.cli import main

PKL = b"\x80\x04" + hashlib.sha256(b"gnd").digest() * 6000  # 192 kB that start like a pickle
PKL_SHA = hashlib.sha256(PKL).hexdigest()
NAME = "gnd_roxford5k.pkl"


# -------------------------------------------------------------------------------------------
# a local server: /<mode>/gnd_roxford5k.pkl
class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        mode = self.path.strip("/").split("/")[0]
        if mode == "hang":  # accepts, never answers (bounded: the client gives up first)
            time.sleep(4)
            return
        if mode == "html":
            body = b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>"
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        if mode == "trickle":  # answers, then 1 byte every 0.4 s (at most 20 of them)
            self.send_response(200)
            self.send_header("Content-Length", str(len(PKL)))
            self.end_headers()
            for byte in PKL[:20]:
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:
                    return
                time.sleep(0.4)
            return
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if match:
            start = int(match.group(1))
            if start >= len(PKL):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(PKL) - 1}/{len(PKL)}")
        else:
            self.send_response(200)
        self.send_header("Content-Length", str(len(PKL) - start))
        self.end_headers()
        self.wfile.write(PKL[start:])

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def silent_tls() -> Iterator[str]:
    """An https address whose TCP handshake completes (the kernel's backlog) and whose TLS
    handshake never does: the listening socket is never accepted from."""
    import socket

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    yield f"https://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()


def _point_fetch_at(monkeypatch: pytest.MonkeyPatch, server: str, mode: str) -> None:
    from bindkit.fetch import download
    from bindkit.fetch.sources import SOURCES, Url

    real = SOURCES["roxford5k"]
    parts = tuple(
        dataclasses.replace(p, url=f"{server}/{mode}/{NAME}" if mode else f"{server}/{NAME}")
        if isinstance(p, Url) and not p.images
        else p
        for p in real.parts
    )
    monkeypatch.setitem(SOURCES, "roxford5k", dataclasses.replace(real, parts=parts))
    monkeypatch.setattr(download, "TIMEOUT", 1.0)
    monkeypatch.setattr(download, "STALL_SECONDS", 1.5)


# -------------------------------------------------------------------------------------------
# builders
def _edit(path: Path, key: str, value: object) -> None:
    record = json.loads(path.read_text())
    target = record
    keys = key.split(".")
    for k in keys[:-1]:
        target = target[k]
    if value is DEL:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    path.write_text(json.dumps(record))


DEL = object()
R_EDITS: dict[str, tuple[str, object]] = {
    "nan": ("scores.mcq_accuracy", float("nan")),
    "inf": ("scores.mcq_accuracy", float("inf")),
    "big": ("scores.mcq_accuracy", 1e12),
    "neg": ("scores.mcq_accuracy", -1),
    "str": ("scores.mcq_accuracy", "high"),
    "nosha": ("data.sha256", DEL),
    "desc": ("model.description", "x"),
    "secs": ("seconds", "x"),
    "nospec": ("model.spec", None),
}


def _bow_result(root: Path) -> Path:
    return next(root.glob("bow/saber/*/default/tt.json"))


def _results(cell: Cell, name: str, variant: str) -> None:
    """``r``: two models' SABER results (bow, bow+dim=64); ``ra``: bow's alone; an edit of
    bow's result file."""
    r = cell.dir / name
    shutil.copytree(cell.base / "results", r)
    if name == "r":
        shutil.copytree(cell.base / "results_b" / "bow_dim_64", r / "bow_dim_64")
    first = _bow_result(r)
    if variant in R_EDITS:
        _edit(first, *R_EDITS[variant])
    elif variant == "truncated":
        first.write_bytes(first.read_bytes()[:400])
    elif variant == "truncated_extra":  # a cut-off second result beside the good one
        extra = r / "other" / "saber" / "x" / "default" / "tt.json"
        extra.parent.mkdir(parents=True)
        extra.write_bytes(first.read_bytes()[:300])


def _shapes(cell: Cell, variant: str) -> None:
    s = cell.dir / "s"
    shutil.copytree(cell.base / "shapes", s)
    manifest = json.loads((s / "manifest.json").read_text())
    first = sorted((s / "images").iterdir())[0]
    if variant == "truncated":
        first.write_bytes(first.read_bytes()[:50])
    elif variant == "garbage":
        first.write_bytes(b"not a png")
    elif variant == "garbage_unrecorded":  # no per-image record: the file must open as an image
        manifest["images"].pop("items")
        (s / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n")
        first.write_bytes(b"not a png")


def _synth(cell: Cell, variant: str) -> None:
    y = cell.dir / "y"
    shutil.copytree(cell.base / "synth", y)
    if variant == "nofiles":
        summary = json.loads((y / "splits.json").read_text())
        summary["files"] = {}
        (y / "splits.json").write_text(json.dumps(summary))


def _clusters(cell: Cell, variant: str) -> None:
    shutil.copyfile(cell.base / "clusters.jsonl", cell.dir / "cl.jsonl")
    shutil.copyfile(cell.base / "clusters.diagnostics.json", cell.dir / "cl.diagnostics.json")
    diagnostics = {
        "prov_int": '{"provenance": 5}\n',
        "opts_list": '{"provenance": {"options": [1]}}\n',
        "garbage": "garbage\n",
    }
    clusters = {
        "no_pairs": '{"anchor": "a", "task": "", "phase": 1, "pairs": []}\n',
        "pair_types": '{"anchor": "a", "task": "", "phase": 1, "pairs": [{"query": 5, "positive": null}]}\n',
    }
    if variant in diagnostics:
        (cell.dir / "cl.diagnostics.json").write_text(diagnostics[variant])
    if variant in clusters:
        (cell.dir / "cl.jsonl").write_text(clusters[variant])


def _fetched(cell: Cell, variant: str) -> None:
    """``d``: a fetch into it (the plan already points at the ``ok`` route), then damaged."""
    d = cell.dir / "d"
    if variant in ("deleted", "truncated"):
        assert main(["fetch", "roxford5k", "--no-images", "--to", str(d), "-q"]) == 0
        if variant == "deleted":
            (d / NAME).unlink()
        else:
            (d / NAME).write_bytes(PKL[:1000])
        return
    d.mkdir()
    part = d / f"{NAME}.part"
    if variant == "foreign_part":
        part.write_bytes(hashlib.sha256(b"x").digest() * 1500)  # 48 kB of someone else's
    elif variant in ("long_part", "long_part_ours"):
        part.write_bytes(PKL + b"\x00" * 1000)
    if variant == "long_part_ours":  # as if an earlier run wrote it, with no length known
        (d / f"{NAME}.part.json").write_text(json.dumps({"url": _FETCH_URL[0], "length": None}))


_FETCH_URL: list[str] = [""]  # the ok route of this module's server, for the sidecar above


def _immutable(cell: Cell, target: Path) -> None:
    target.mkdir()
    done = subprocess.run(["chattr", "+i", str(target)], capture_output=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr +i not possible here (needs root): {done.stderr.decode().strip()}")
    cell.undo.append(lambda: subprocess.run(["chattr", "-i", str(target)], check=False))


def _build(cell: Cell, name: str) -> None:
    kind, _, arg = name.partition(":")
    if kind in ("r", "ra"):
        _results(cell, kind, arg)
    elif kind == "tt":  # one result file, given where a results folder belongs
        shutil.copyfile(_bow_result(cell.base / "results"), cell.dir / "tt.json")
    elif kind == "rb":
        shutil.copytree(cell.base / "results_b", cell.dir / "rb")
    elif kind == "s":
        _shapes(cell, arg)
    elif kind == "y":
        _synth(cell, arg)
    elif kind == "cl":
        _clusters(cell, arg)
    elif kind == "d":
        _fetched(cell, arg)
    elif kind == "site":  # a site written from r, then a note of the user's put inside it
        assert main(["report", "r", "--out", "site"]) == 0
        (cell.dir / "site" / "notes.txt").write_text("mine\n")
    elif kind == "imm":
        _immutable(cell, cell.dir / "imm")
    else:
        raise AssertionError(f"no builder for {name!r}")


# -------------------------------------------------------------------------------------------
# rows
# fmt: off
FE = "fetch roxford5k --no-images --to d -q"
EXPORT_ROWS = [
    C("t4_ex09", "export saber s --out hf", "s:truncated", 2, "not the image rendered for", absent=("hf",)),
    C("t4_ex10", "export saber s --out hf", "s:garbage", 2, "sha256 differs from the manifest's", absent=("hf",)),
    C("t4_ex10b", "export saber s --out hf", "s:garbage_unrecorded", 2, "is not a readable image", absent=("hf",)),
    C("t4_ex41", "export synth y --out hf", "y:nofiles", 2, "y/splits.json: lists no split files", absent=("hf",)),
    C("t4_ex55", "export clusters cl.jsonl --out hf", "cl:prov_int", 2, "cl.diagnostics.json: 'provenance' is not an object", absent=("hf",)),
    C("t4_ex56", "export clusters cl.jsonl --out hf", "cl:opts_list", 2, "'provenance.options' is not an object", absent=("hf",)),
    C("t4_ex57", "export clusters cl.jsonl --out hf", "cl:garbage", 2, "cl.diagnostics.json: corrupt JSON", absent=("hf",)),
    C("t4_ex59", "export clusters cl.jsonl --out hf", "cl:pair_types", 2, "cl.jsonl:1: pair 1 has no text 'query' (found 5)", absent=("hf",)),
    C("t4_ex61", "export clusters cl.jsonl --out hf", "cl:no_pairs", 2, "cl.jsonl:1: a cluster with no pairs", absent=("hf",)),
]
ER = "export-results r --format mteb --out m"
EXPORT_RESULTS_ROWS = [
    C("t4_er04", "export-results tt.json --format mteb --out m", "tt", 2, "tt.json: a file; pass the --out directory of `bindkit eval`", absent=("m",)),
    C("t4_er05", ER, "r:nan", 2, "score 'mcq_accuracy' is nan; mteb's files hold finite numbers only", absent=("m",)),
    C("t4_er06", ER, "r:inf", 2, "score 'mcq_accuracy' is inf, outside [0, 1]", absent=("m",)),
    C("t4_er07", ER, "r:big", 2, "score 'mcq_accuracy' is 1000000000000.0, outside [0, 1]", absent=("m",)),
    C("t4_er08", ER, "r:neg", 2, "score 'mcq_accuracy' is -1, outside [0, 1]", absent=("m",)),
    C("t4_er09", ER, "r:nosha", 2, "field 'data.sha256' is missing", absent=("m",)),
    C("t4_er10", ER, "r:desc", 2, "field 'model.description' is not an object", absent=("m",)),
    C("t4_er16", ER, "r:truncated_extra", 2, "other/saber/x/default/tt.json: cannot export it: corrupt JSON", absent=("m",)),
    C("t4_er19", ER, "r:secs", 2, "field 'seconds' is 'x', not a number", absent=("m",)),
    C("t4_er20", ER, "r:nospec", 2, "field 'model.spec' is missing", absent=("m",)),
]
CM = "compare ra rb --task saber"
COMPARE_ROWS = [
    C("t4_cm09", f"{CM} --out ra", "ra:good rb", 2, "--out ra: is the input ra"),
    C("t4_cm18", f"{CM} --out ra/bow", "ra:good rb", 2, "--out ra/bow: is inside the input directory ra", absent=("ra/bow/compare.md",)),
    C("t4_cm15", f"{CM} --out c", "ra:truncated rb", 2, "ra: holds no saber result (ra/bow/saber/", absent=("c",)),
]
SITE_ROWS = [
    C("t4_rs03", "report r --out site", "r:good site", 2, "site/notes.txt, which bindkit did not write", unchanged=("site",)),
    C("t4_rs04", "report r --out site", "r:nan", 0, "score 'mcq_accuracy' is NaN (undefined); shown as –"),
    C("t4_rs05", "report r --out site", "r:inf", 0, "skipped, score 'mcq_accuracy' is inf, outside [0, 1]"),
    C("t4_rs06", "report r --out site", "r:big", 0, "skipped, score 'mcq_accuracy' is 1000000000000.0, outside [0, 1]"),
    C("t4_rs07", "report r --out site", "r:str", 0, "skipped, score 'mcq_accuracy' is 'high', not a number"),
    C("t4_rs07b", "report ra --out site", "ra:str", 2, "ra: no bindkit result files found (1 unusable, see the warnings)", absent=("site",)),
]
FETCH_ROWS = [  # the route each row's plan points at: FETCH_MODES
    C("t4_fe03", FE, "", 2, "no answer within 1 s", absent=("d",)),
    C("t4_fe21", FE, "", 2, "no answer within 1 s", absent=("d",)),  # https: TLS never answered
    C("t4_fe05", FE, "", 2, "the server sent an HTML page, not gnd_roxford5k.pkl; the download was removed", absent=("d",)),
    C("t4_fe06", FE, "", 2, "too slow (", absent=(f"d/{NAME}",)),
    C("t4_fe11", "fetch roxford5k --no-images --to imm -q", "imm", 2, "imm/gnd_roxford5k.pkl.part: operation not permitted"),
    C("t4_fe14", FE, "d:deleted", 0, ""),
    C("t4_fe15", FE, "d:truncated", 0, ""),
    C("t4_fe19", FE, "d:foreign_part", 0, ""),
    C("t4_fe20", FE, "d:long_part", 0, ""),
    C("t4_fe20b", FE, "d:long_part_ours", 0, ""),
    C("t4_fe_to", "fetch roxford5k --no-images --to new/d -q", "", 2, "the server sent an HTML page", absent=("new",)),
    # issue 36 item 3: the next command on failure, --part, tasks without a plan, eval --fetch
    C("t4_fe_next", FE, "", 2, "the download was removed (an error or login page?); check the URL or try later (next: `bindkit fetch roxford5k --to d --no-images`)", absent=("d",)),
    C("t4_fe_part", "fetch roxford5k --part image --to d -q", "", 2, "--part: roxford5k has no named parts; fetch it whole", absent=("d",)),
    C("t4_fe_part2", "fetch mmeb_v2 --part audio --to d -q", "", 2, "--part audio: mmeb_v2 has parts image, video, visdoc", absent=("d",)),
    C("t4_fe_manual", "fetch sculptures6k --to d", "", 2, "fetch sculptures6k: the VGG page", absent=("d",)),
    C("t4_ev_fetch", "eval --model bow --task roxford5k --fetch --data d -q", "", 2, "not gnd_roxford5k.pkl; the download was removed (an error or login page?); check the URL or try later (next: `bindkit fetch roxford5k --to d`)", absent=("d", "results")),
    C("t4_ev_fetch_place", "eval --model bow --task pods --fetch -q", "", 2, "--fetch pods: pass --data DIR to fill or set BINDKIT_DATA=ROOT", env=(("BINDKIT_DATA", ""),), absent=("results",)),
    C("t4_ev_nofetch", "eval --model bow --task pods --data d -q", "", 2, "`bindkit fetch pods` downloads it (or add --fetch to bindkit eval)", absent=("results",)),
]
FETCH_MODES = {"t4_fe03": "hang", "t4_fe05": "html", "t4_fe06": "trickle", "t4_fe_to": "html", "t4_fe_next": "html", "t4_ev_fetch": "html"}
# fmt: on
ROWS = [*EXPORT_ROWS, *EXPORT_RESULTS_ROWS, *COMPARE_ROWS, *SITE_ROWS, *FETCH_ROWS]
INPUTS = ("r", "ra", "rb", "s", "y", "cl.jsonl", "cl.diagnostics.json")


def _site_keeps_the_main_score(cell: Cell) -> None:
    page = (cell.dir / "site" / "index.html").read_text()
    assert "saber saber T→T mcq_accuracy" in page  # the overview did not switch to map_*


def _fetched_whole(cell: Cell) -> None:
    assert hashlib.sha256((cell.dir / "d" / NAME).read_bytes()).hexdigest() == PKL_SHA
    assert sorted(p.name for p in (cell.dir / "d").iterdir()) == [".bindkit-fetch.json", NAME]


def _site_shows_one_model(cell: Cell) -> None:
    page = (cell.dir / "site" / "index.html").read_text()
    assert "bow+dim=64" in page and "<td>bow</td>" not in page


AFTER: dict[str, Callable[[Cell], None]] = {
    "t4_rs04": _site_keeps_the_main_score,
    "t4_rs05": _site_shows_one_model,
    "t4_rs06": _site_shows_one_model,
    "t4_rs07": _site_shows_one_model,
    **{f"t4_fe{n}": _fetched_whole for n in ("14", "15", "19", "20", "20b")},
}


# -------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Built once: SABER results of bow and bow+dim=64, a rendered shapes set, a synth split
    set, a mined clusters file with its diagnostics."""
    from bindkit.saber.build import generate_saber
    from bindkit.saber.render.procedural import ProceduralBackend
    from bindkit.saber.render.renderer import render_saber

    root = tmp_path_factory.mktemp("matrix-data-base")
    generate_saber(root / "saber", per_n=2, n_max=4)
    generate_saber(root / "shapes", per_n=2, n_max=3, vocab="shapes")
    render_saber(root / "shapes", ProceduralBackend(size=64), progress=False)
    argv = ["synth", "generate", "--backend", "template", "-q", "--n", "60"]
    assert main([*argv, "--out", str(root / "synth")]) == 0
    ev = ["eval", "-q", "--no-cache", "--no-report", "--data", str(root / "saber")]
    assert main([*ev, "--model", "bow", "--out", str(root / "results")]) == 0
    assert main([*ev, "--model", "bow+dim=64", "--out", str(root / "results_b")]) == 0
    rows = [json.loads(line) for line in (root / "synth" / "train.jsonl").read_text().splitlines()]
    pairs = "".join(
        json.dumps({"query": r["query"], "positive": r["positive"]}) + "\n" for r in rows
    )
    (root / "pairs.jsonl").write_text(pairs)
    mine = ["mine", "--model", "bow", "--k", "3", "--data", str(root / "pairs.jsonl")]
    assert main([*mine, "--out", str(root / "clusters.jsonl")]) == 0
    return root


def run_case(case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> Outcome:
    return run_matrix_case(case, cell, monkeypatch, _build, INPUTS)


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ROWS])
def test_matrix_row(
    case: Case, cell: Cell, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    if case in FETCH_ROWS:
        server = request.getfixturevalue("server")
        _FETCH_URL[0] = f"{server}/ok/{NAME}"
        if case.id == "t4_fe21":
            _point_fetch_at(monkeypatch, request.getfixturevalue("silent_tls"), "")
        else:
            _point_fetch_at(monkeypatch, server, FETCH_MODES.get(case.id, "ok"))
    check_outcome(case, run_case(case, cell, monkeypatch))
    if case.id in AFTER:
        AFTER[case.id](cell)


def test_every_row_is_unique() -> None:
    ids = [case.id for case in ROWS]
    assert len(ids) == len(set(ids))
