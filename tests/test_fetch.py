"""`bindkit fetch`: resumable, checked downloads into the task layout; a local HTTP server and a
monkeypatched ``snapshot_download`` stand in for the network."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import io
import json
import re
import socketserver
import tarfile
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.fetch import sources
from bindkit.fetch.download import download, extract, member_target
from bindkit.fetch.fetcher import STATE, fetch
from bindkit.fetch.sources import SOURCES, Plan, Url


class Handler(BaseHTTPRequestHandler):
    """Serves ``files`` with Range support; ``cut[name]`` bytes, then a dropped connection, on
    the next request for ``name``."""

    files: ClassVar[dict[str, bytes]] = {}
    cut: ClassVar[dict[str, int]] = {}
    pace: ClassVar[dict[str, float]] = {}  # seconds between 10-byte pieces of ``name``
    requests: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        name = self.path.lstrip("/")
        self.requests.append((name, self.headers.get("Range")))
        if name not in self.files:
            self.send_error(404)
            return
        data = self.files[name]
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range") or "")
        if match:
            start = int(match.group(1))
            if start >= len(data):
                self.send_error(416)
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        cut = self.cut.pop(name, None)
        if name in self.pace:
            for start in range(0, len(body), 10):  # bounded by the body's length
                self.wfile.write(body[start : start + 10])
                self.wfile.flush()
                time.sleep(self.pace[name])
            return
        self.wfile.write(body if cut is None else body[:cut])
        self.wfile.flush()
        if cut is not None:
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextlib.contextmanager
def background(server: socketserver.BaseServer) -> Iterator[int]:
    """Run ``server`` on a thread while the block runs; yields its port."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        address = server.server_address
        assert isinstance(address, tuple)  # an AF_INET server: (host, port)
        yield int(address[1])
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def serving() -> Iterator[str]:
    """A :class:`Handler` server on 127.0.0.1 (its files emptied); yields its base URL."""
    Handler.files, Handler.cut, Handler.pace, Handler.requests = {}, {}, {}, []
    with background(ThreadingHTTPServer(("127.0.0.1", 0), Handler)) as port:
        yield f"http://127.0.0.1:{port}"


@pytest.fixture
def server() -> Iterator[str]:
    with serving() as base:
        yield base


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def zip_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buffer.getvalue()


def tar_bytes(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def test_a_cut_off_download_resumes_with_a_range_request(server: str, tmp_path: Path) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB
    Handler.files["big.bin"] = data
    Handler.cut["big.bin"] = 300_000
    dest = tmp_path / "big.bin"
    with pytest.raises(BindkitError, match=r"after 300000 of 1048576 bytes; run again to resume"):
        download(f"{server}/big.bin", dest, sha256=sha(data))
    part = tmp_path / "big.bin.part"
    assert not dest.exists() and part.stat().st_size == 300_000
    assert download(f"{server}/big.bin", dest, sha256=sha(data)) == dest
    assert dest.read_bytes() == data and not part.exists()
    assert Handler.requests == [("big.bin", None), ("big.bin", "bytes=300000-")]
    download(f"{server}/big.bin", dest, sha256=sha(data))  # complete: no request
    assert len(Handler.requests) == 2
    dest.write_bytes(b"something else")
    with pytest.raises(BindkitError, match=r"big.bin: not the file published at .*remove it"):
        download(f"{server}/big.bin", dest, sha256=sha(data))


def test_a_whole_part_left_behind_is_checked_and_kept(server: str, tmp_path: Path) -> None:
    Handler.files["a.json"] = b'{"a": 1}'
    (tmp_path / "a.json.part").write_bytes(b'{"a": 1}')  # killed before the rename
    meta = {"url": f"{server}/a.json", "length": 8}  # the sidecar the download wrote
    (tmp_path / "a.json.part.json").write_text(json.dumps(meta))
    download(f"{server}/a.json", tmp_path / "a.json", sha256=sha(b'{"a": 1}'))
    assert (tmp_path / "a.json").read_bytes() == b'{"a": 1}'
    assert Handler.requests == [("a.json", "bytes=8-")]  # answered 416: nothing more to send
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json"]


def test_a_checksum_mismatch_leaves_nothing_behind(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    Handler.files["add_att.json"] = b"{}"
    wrong = "0" * 64
    plan = Plan("sugarcrepe", "MIT", (Url(f"{server}/add_att.json", "add_att.json", wrong),), "t")
    monkeypatch.setitem(SOURCES, "sugarcrepe", plan)
    assert main(["fetch", "sugarcrepe", "--to", str(tmp_path / "sc"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert f"sha256 {sha(b'{}')} is not the pinned {wrong}; the download was removed" in err
    assert not (tmp_path / "sc").exists()  # a failure leaves no empty folder it made


def test_a_transfer_past_its_deadline_stops_and_the_next_run_resumes(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.fetch import download as module

    data = bytes(range(200))
    Handler.files["slow.bin"], Handler.pace["slow.bin"] = data, 0.05  # 1 s in all
    monkeypatch.setattr(module, "PART_DEADLINE", 0.3)
    dest = tmp_path / "slow.bin"
    with pytest.raises(BindkitError, match=r"still downloading after 0.3 s .*run again to resume"):
        download(f"{server}/slow.bin", dest, sha256=sha(data))
    kept = (tmp_path / "slow.bin.part").stat().st_size
    assert 0 < kept < len(data) and not dest.exists()
    del Handler.pace["slow.bin"]
    download(f"{server}/slow.bin", dest, sha256=sha(data))
    assert dest.read_bytes() == data and Handler.requests[-1] == ("slow.bin", f"bytes={kept}-")


def test_the_state_file_is_checked_against_the_files_on_disk(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Handler.files |= {
        "swap_att.json": b'{"0": {}}',
        "val2017.zip": zip_bytes({"val2017/1.jpg": b"jpg1", "val2017/2.jpg": b"jpg2"}),
    }
    plan = Plan(
        "demo",  # not a task: no reader checks the made-up files
        "MIT",
        (
            Url(f"{server}/swap_att.json", "swap_att.json"),
            Url(f"{server}/val2017.zip", "images", extract=True, strip=1),
        ),
        "test",
    )
    out = tmp_path / "sc"
    fetch(plan, out, log=None)
    (out / "images" / "2.jpg").unlink()
    (out / "swap_att.json").write_bytes(b'{"0"')  # truncated since
    capsys.readouterr()
    fetch(plan, out)
    printed = capsys.readouterr().out
    assert "swap_att.json changed since it was fetched: fetching" in printed
    assert "images holds 1 of the 2 files extracted: fetching" in printed
    assert (out / "swap_att.json").read_bytes() == b'{"0": {}}'
    assert (out / "images" / "2.jpg").read_bytes() == b"jpg2"
    fetch(plan, out)
    assert capsys.readouterr().out.count("  have ") == 2


@pytest.mark.parametrize(
    ("name", "data", "problem"),
    [
        ("g.pkl", b"\x80\x04rest", None),
        ("g.pkl", b"PK\x03\x04 a zip", "does not start like a .pkl file"),
        ("a.json", b'  \n{"a": 1}', None),
        ("a.json", b"<!DOCTYPE html><html>", "an HTML page"),
        ("x.tgz", b"<?xml version='1.0'?><Error>AccessDenied</Error>", "an XML document"),
        ("1qaPlrwhGNMrR3a11iopZUT", b"<html><body>Virus scan warning", "an HTML page"),
        ("page.html", b"<html>", None),
        ("t.txt", b"", "an empty file"),
    ],
)
def test_an_unpinned_file_must_look_like_its_kind(
    tmp_path: Path, name: str, data: bytes, problem: str | None
) -> None:
    from bindkit.fetch.download import content_problem

    (tmp_path / "f").write_bytes(data)
    found = content_problem(tmp_path / "f", name)
    assert found == problem if problem is None else problem in str(found)


def test_http_errors_are_one_line(server: str, tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match=r"missing.json: HTTP 404"):
        download(f"{server}/missing.json", tmp_path / "m.json")
    with pytest.raises(BindkitError, match=r"cannot connect"):
        download("http://127.0.0.1:9/x", tmp_path / "x")


def test_archive_members_land_in_the_layout_and_never_outside(tmp_path: Path) -> None:
    assert str(member_target("val2017/000001.jpg", strip=1)) == "000001.jpg"
    assert member_target("val2017/", strip=1) is None
    assert str(member_target("paris/defense/a.jpg", flatten=True)) == "a.jpg"
    assert member_target("__MACOSX/._a.jpg") is None
    archive = tmp_path / "evil.zip"
    archive.write_bytes(zip_bytes({"../evil.txt": b"x"}))
    with pytest.raises(BindkitError, match=r"leaves the folder; the archive is unsafe"):
        extract(archive, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists()


def test_fetch_builds_the_task_layout_records_it_and_skips_what_it_has(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Handler.files |= {
        "swap_att.json": b'{"0": {}}',
        "val2017.zip": zip_bytes({"val2017/000001.jpg": b"jpg1", "val2017/000002.jpg": b"jpg2"}),
        "paris_1.tgz": tar_bytes({"paris/defense/p1.jpg": b"p1", "paris/louvre/p2.jpg": b"p2"}),
    }
    plan = Plan(
        "demo",  # not a task: no reader checks the made-up files
        "MIT (annotations)",
        (
            Url(f"{server}/swap_att.json", "swap_att.json", sha(b'{"0": {}}')),
            Url(f"{server}/val2017.zip", "images", extract=True, strip=1, images=True),
            Url(f"{server}/paris_1.tgz", "jpg", extract=True, flatten=True, images=True),
        ),
        "test",
    )
    out = tmp_path / "sc"
    fetch(plan, out, images=False)
    assert (out / "swap_att.json").is_file() and not (out / "images").exists()
    assert "left out (--no-images): 2 image part(s)" in capsys.readouterr().out
    fetch(plan, out)
    assert (out / "images" / "000001.jpg").read_bytes() == b"jpg1"
    assert (out / "jpg" / "p1.jpg").read_bytes() == b"p1" and (out / "jpg" / "p2.jpg").is_file()
    assert not (out / ".downloads").exists()  # archives removed once extracted
    state = json.loads((out / STATE).read_text())
    assert state["license"] == "MIT (annotations)"
    assert state["parts"][f"{server}/swap_att.json"]["pinned"] is True
    assert state["parts"][f"{server}/val2017.zip"]["files"] == 2
    served = len(Handler.requests)
    fetch(plan, out)
    assert len(Handler.requests) == served  # every part recorded: nothing fetched again
    printed = capsys.readouterr().out
    assert printed.splitlines()[0] == "demo: licence: MIT (annotations)"
    assert f"files in {out}; licence: MIT (annotations)" in printed


def test_fetch_sugarcrepe_into_bindkit_data_then_eval_reads_it(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.tasks.base import get_task, resolve_data

    rows = {"0": {"filename": "000001.jpg", "caption": "a red cube", "negative_caption": "x"}}
    names = ("add_att", "add_obj", "replace_att", "replace_obj", "replace_rel", "swap_att")
    payloads = {f"{n}.json": json.dumps(rows).encode() for n in (*names, "swap_obj")}
    Handler.files |= payloads
    real = SOURCES["sugarcrepe"]
    local = tuple(
        dataclasses.replace(p, url=f"{server}/{p.to}", sha256=sha(payloads[p.to]))
        for p in real.parts
        if isinstance(p, Url) and not p.images
    )
    monkeypatch.setitem(SOURCES, "sugarcrepe", dataclasses.replace(real, parts=local))
    monkeypatch.setenv("BINDKIT_DATA", str(tmp_path / "data"))
    task = get_task("sugarcrepe")
    with pytest.raises(BindkitError, match=r"not found; .*; `bindkit fetch sugarcrepe` downloads"):
        resolve_data(task.metadata, None)
    assert main(["fetch", "sugarcrepe", "--no-images", "-q"]) == 0
    folder = resolve_data(task.metadata, None)
    assert folder == tmp_path / "data" / "sugarcrepe"
    dataset = task.load(folder)
    assert set(dataset.subsets) == {*names, "swap_obj"}


def test_the_real_plans_pin_the_published_layout() -> None:
    from bindkit.tasks.base import task_classes

    tasks = task_classes()
    for name, plan in SOURCES.items():
        assert name == plan.task and name in tasks and plan.license and plan.verified
        for part in plan.parts:
            if isinstance(part, Url):
                assert part.url.startswith(("http://", "https://", "ftp://"))
                assert part.sha256 is None or re.fullmatch(r"[0-9a-f]{64}", part.sha256)
    sc = [p for p in SOURCES["sugarcrepe"].parts if isinstance(p, Url) and not p.images]
    assert sorted(p.to for p in sc) == sorted(
        f"{s}.json" for s in tasks["sugarcrepe"].metadata.subsets
    )
    assert all(sources.SUGARCREPE_COMMIT in p.url and p.sha256 for p in sc)
    shared = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "sugarcrepe"
    if shared.is_dir():  # the published files, as copied into the project's shared data
        for part in sc:
            assert part.sha256 == sha((shared / part.to).read_bytes()), part.to
    assert "gated" in SOURCES["winoground"].verified and SOURCES["winoground"].parts[0].gated  # type: ignore[union-attr]


def _fake_snapshot(hub: Path, seen: list[dict[str, Any]]) -> Any:
    import fnmatch
    import shutil

    def snapshot_download(repo_id: str, **kwargs: Any) -> str:
        seen.append({"repo_id": repo_id, **kwargs})
        local = Path(kwargs["local_dir"])
        for file in (hub / repo_id).rglob("*"):
            name = file.relative_to(hub / repo_id).as_posix()
            if file.is_file() and any(fnmatch.fnmatch(name, p) for p in kwargs["allow_patterns"]):
                (local / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(file, local / name)
        return str(local)

    return snapshot_download


def test_a_hub_plan_snapshots_moves_and_extracts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    hub = tmp_path / "hub"
    repo = hub / "facebook" / "winoground" / "data"
    repo.mkdir(parents=True)
    row = {"id": 0, "caption_0": "a", "caption_1": "b", "image_0": "ex_0_img_0"}
    (repo / "examples.jsonl").write_text(json.dumps({**row, "image_1": "ex_0_img_1"}) + "\n")
    (repo / "images.zip").write_bytes(zip_bytes({"images/ex_0_img_0.png": b"png"}))
    (repo / "other.bin").write_bytes(b"not asked for")
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", _fake_snapshot(hub, seen))
    out = tmp_path / "wg"
    fetch("winoground", out, log=None)
    assert json.loads((out / "examples.jsonl").read_text())["caption_0"] == "a"
    assert (out / "images" / "ex_0_img_0.png").read_bytes() == b"png"
    assert not (out / "data" / "images.zip").exists() and not (out / "data" / "other.bin").exists()
    assert seen[0]["repo_type"] == "dataset" and seen[0]["local_dir"] == str(out)
    assert seen[0]["allow_patterns"] == ["data/examples.jsonl", "data/images.zip"]


def test_a_gated_dataset_says_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import huggingface_hub

    def gated(repo_id: str, **kwargs: Any) -> str:
        raise huggingface_hub.errors.GatedRepoError("401 gated", response=_response())

    monkeypatch.setattr(huggingface_hub, "snapshot_download", gated)
    assert main(["fetch", "winoground", "--to", str(tmp_path / "wg"), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "bindkit: error: facebook/winoground: a gated dataset; accept its terms at "
        "https://huggingface.co/datasets/facebook/winoground and log in (`hf auth login`) "
        f"(next: `bindkit fetch winoground --to {tmp_path / 'wg'}`)"
    )


def _response() -> Any:
    import httpx

    return httpx.Response(401, request=httpx.Request("GET", "https://huggingface.co/x"))


def test_fetch_names_a_close_task_and_needs_a_place(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["fetch", "sugarcrep"]) == 2
    assert "no download plan (did you mean sugarcrepe?)" in capsys.readouterr().err
    assert main(["fetch", "sick"]) == 2
    assert "fetch 'sick': no download plan (did you mean sts? it fetches sick)" in (
        capsys.readouterr().err
    )
    monkeypatch.delenv("BINDKIT_DATA", raising=False)
    assert main(["fetch", "mmeb"]) == 2
    assert "fetch mmeb: pass --to DIR or set BINDKIT_DATA=ROOT" in capsys.readouterr().err
    assert main(["fetch", "--list"]) == 0
    assert re.search(r"^winoground +Winoground licence", capsys.readouterr().out, re.M)
