"""Model backends' glue: an OpenAI-compatible endpoint (a local fake server) and diffusers (a
fake pipeline object)."""

from __future__ import annotations

import base64
import io
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.saber.build import generate_saber
from bindkit.saber.io import read_saber
from bindkit.saber.render import make_backend
from bindkit.saber.render.diffusers import DiffusersBackend
from bindkit.saber.render.openai import OpenAIImagesBackend
from bindkit.saber.render.renderer import render_saber
from bindkit.saber.validate import validate_saber

Image = pytest.importorskip("PIL.Image")
pytest.importorskip("httpx")


def _png(color: tuple[int, int, int], size: int) -> bytes:
    picture = Image.new("RGB", (size, size), color)
    picture.putpixel((0, 0), (255, 255, 255))  # a marker that shows whether it was mirrored
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue()


class FakeImagesAPI:
    """POST /v1/images/generations: 429 on each prompt's first request, 400 for prompts that
    contain 'cube', else a PNG; records requests and the peak number in flight."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.seen: set[str] = set()
        self.in_flight = 0
        self.peak = 0
        self.lock = threading.Lock()

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        body = json.loads(handler.rfile.read(int(handler.headers["Content-Length"])))
        with self.lock:
            self.requests.append({"body": body, "auth": handler.headers.get("Authorization")})
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            first = body["prompt"] not in self.seen
            self.seen.add(body["prompt"])
        time.sleep(0.02)
        with self.lock:
            self.in_flight -= 1
        if handler.path != "/v1/images/generations":
            self._send(handler, 404, {"error": "not found"})
        elif "cube" in body["prompt"]:
            self._send(handler, 400, {"error": {"message": "content policy"}})
        elif first:
            self._send(handler, 429, {"error": "slow down"})
        else:
            size = int(body["size"].split("x")[0])
            data = base64.b64encode(_png((20, 200, 30), size)).decode()
            self._send(handler, 200, {"data": [{"b64_json": data}]})

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, status: int, payload: dict[str, Any]) -> None:
        raw = json.dumps(payload).encode()
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(raw)))
        handler.end_headers()
        handler.wfile.write(raw)


@pytest.fixture
def fake_api() -> Iterator[tuple[str, FakeImagesAPI]]:
    api = FakeImagesAPI()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            api.handle(self)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1", api
    server.shutdown()
    server.server_close()


def test_openai_backend_retries_limits_and_resumes(
    tmp_path: Path, fake_api: tuple[str, FakeImagesAPI]
) -> None:
    url, api = fake_api
    generate_saber(tmp_path, seed=0, per_n=2, n_max=2, vocab="shapes")
    items = [i for m in read_saber(tmp_path).mcqs for i in m.items]
    backend = OpenAIImagesBackend(
        model="fake-image", base_url=url, api_key="sk-test", size=32, backoff=0.01, retries=2
    )
    summary = render_saber(tmp_path, backend, workers=3, progress=False)
    failing = {i.id for i in items if "cube" in i.image_prompt}
    assert {f[0] for f in summary.failed} == failing
    assert all("HTTP 400" in message for _, message in summary.failed)
    assert summary.rendered == len(items) - len(failing)
    assert 1 < api.peak <= 3
    assert all(r["auth"] == "Bearer sk-test" for r in api.requests)
    assert api.requests[0]["body"]["model"] == "fake-image"
    assert api.requests[0]["body"]["size"] == "32x32"
    # every success needed one retry after its 429
    prompts = [r["body"]["prompt"] for r in api.requests if "cube" not in r["body"]["prompt"]]
    assert len(prompts) == 2 * len(set(prompts))
    data = read_saber(tmp_path)
    for item in (i for m in data.mcqs for i in m.items):
        assert (item.image is None) == (item.id in failing)
        if item.image:
            with Image.open(tmp_path / item.image) as picture:
                marker = (31, 0) if item.flip else (0, 0)
                assert picture.getpixel(marker) == (255, 255, 255)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["images"]["model"] == "fake-image"
    assert "sk-test" not in (tmp_path / "manifest.json").read_text()
    assert validate_saber(tmp_path, vocab="shapes").ok
    before = len(api.requests)
    again = render_saber(tmp_path, backend, workers=3, progress=False)
    assert again.kept == len(items) - len(failing) and again.rendered == 0
    assert len(api.requests) - before == 3 * len(failing)  # only the failures are retried


def test_openai_refused_connection_stops_without_retries(tmp_path: Path) -> None:
    """Nothing listening: no retry (a closed port stays closed), and the render stops (fatal);
    5xx and timeouts are retried (above)."""
    from bindkit.saber.render.openai import EndpointUnreachable

    generate_saber(tmp_path, seed=0, per_n=2, n_max=2, vocab="shapes")
    mcq = read_saber(tmp_path).mcqs[0]
    backend = OpenAIImagesBackend(
        model="m", base_url="http://127.0.0.1:9", retries=5, backoff=30.0, timeout=1.0
    )
    with pytest.raises(EndpointUnreachable, match="cannot connect") as raised:
        backend.render(mcq.query, mcq)
    assert raised.value.fatal


def test_openai_options_are_checked() -> None:
    with pytest.raises(BindkitError, match="--model is required"):
        OpenAIImagesBackend(model="")
    with pytest.raises(BindkitError, match="--base-url"):
        OpenAIImagesBackend(model="m", base_url="ftp://x")
    with pytest.raises(BindkitError, match="use one of"):
        make_backend("dall-e")


def test_cli_openai_reads_key_from_env_and_exits_1_on_failures(
    tmp_path: Path,
    fake_api: tuple[str, FakeImagesAPI],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url, api = fake_api
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    generate_saber(tmp_path, seed=0, per_n=2, n_max=2, vocab="shapes")
    argv = [
        "saber",
        "render",
        str(tmp_path),
        "--backend",
        "openai",
        "--model",
        "m",
        "--base-url",
        url,
        "--size",
        "16",
        "--backoff",
        "0",
        "--workers",
        "2",
        "--option",
        'quality="low"',
        "--option",
        "moderation=auto",
    ]
    has_cube = any("cube" in i.image_prompt for m in read_saber(tmp_path).mcqs for i in m.items)
    assert main(argv) == (1 if has_cube else 0)
    assert api.requests[0]["auth"] == "Bearer sk-env"
    assert api.requests[0]["body"]["quality"] == "low"
    assert api.requests[0]["body"]["moderation"] == "auto"
    assert "rendered now" in capsys.readouterr().out
    assert main([*argv[:-2], "--option", "broken"]) == 2


class FakePipeline:
    """Stands in for a diffusers pipeline: records calls, returns a solid image."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.calls.append(kwargs)
        seed = int(kwargs["generator"].initial_seed())
        color = (seed % 256, 10, 10)
        picture = Image.new("RGB", (kwargs["width"], kwargs["height"]), color)

        from types import SimpleNamespace

        return SimpleNamespace(images=[picture])


def test_diffusers_glue_with_a_fake_pipeline(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    generate_saber(tmp_path, seed=0, per_n=2, n_max=2)  # any vocabulary: a model draws it
    pipe = FakePipeline()
    backend = DiffusersBackend(
        model="my/model", size=24, steps=3, guidance=4.5, extra=(("eta", 0.5),), pipeline=pipe
    )
    summary = render_saber(tmp_path, backend, progress=False)
    items = [i for m in read_saber(tmp_path).mcqs for i in m.items]
    assert summary.rendered == len(items) == len(pipe.calls)
    call = pipe.calls[0]
    assert call["prompt"] == items[0].image_prompt
    assert (call["height"], call["width"], call["num_inference_steps"]) == (24, 24, 3)
    assert call["guidance_scale"] == 4.5 and call["eta"] == 0.5
    seeds = [c["generator"].initial_seed() for c in pipe.calls]
    assert len(set(seeds)) == len(seeds)  # one generator seed per item
    again = DiffusersBackend(model="my/model", size=24, pipeline=FakePipeline())
    mcq = read_saber(tmp_path).mcqs[0]
    a = np.asarray(again.render(mcq.query, mcq))
    assert a[0, 0, 0] == seeds[0] % 256  # the same item gets the same seed
    manifest = json.loads((tmp_path / "manifest.json").read_text())["images"]
    assert manifest["backend"] == "diffusers" and manifest["model"] == "my/model"
    assert manifest["options"]["steps"] == 3 and manifest["options"]["eta"] == 0.5
    assert validate_saber(tmp_path).ok


def test_diffusers_missing_package_is_one_line(tmp_path: Path) -> None:
    import importlib.util

    if importlib.util.find_spec("diffusers") is not None:
        pytest.skip("diffusers is installed here")
    generate_saber(tmp_path, seed=0, per_n=2, n_max=2)
    with pytest.raises(BindkitError, match="pip install diffusers"):
        render_saber(tmp_path, DiffusersBackend(model="x"), progress=False)
    with pytest.raises(BindkitError, match="--dtype"):
        DiffusersBackend(model="x", dtype="int8")


def test_openai_url_responses_are_fetched(tmp_path: Path) -> None:
    png = _png((200, 20, 20), 16)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            host = f"http://127.0.0.1:{self.server.server_address[1]}"
            FakeImagesAPI._send(self, 200, {"data": [{"url": f"{host}/files/x.png"}]})

        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", str(len(png)))
            self.end_headers()
            self.wfile.write(png)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        generate_saber(tmp_path, seed=0, per_n=2, n_max=2)
        mcq = read_saber(tmp_path).mcqs[0]
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        picture = OpenAIImagesBackend(model="m", base_url=url, size=16).render(mcq.query, mcq)
        assert picture.getpixel((5, 5)) == (200, 20, 20)
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def black_hole() -> Iterator[str]:
    """A server that accepts connections (the kernel's backlog) and never answers."""
    import socket

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    sock.close()


def test_openai_render_stops_at_its_deadline_with_one_line(
    tmp_path: Path, black_hole: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21: an endpoint that never answers kept a render going with no error."""
    generate_saber(tmp_path, seed=0, per_n=2, n_max=2, vocab="shapes")
    before = (tmp_path / "manifest.json").read_bytes()
    argv = ["saber", "render", str(tmp_path), "--backend", "openai", "--model", "m", "-q"]
    argv += ["--base-url", black_hole, "--timeout", "0.2", "--deadline", "1", "--retries", "50"]
    start = time.perf_counter()
    assert main([*argv, "--backoff", "0.01", "--workers", "2"]) == 2
    assert time.perf_counter() - start < 10
    err = capsys.readouterr().err
    assert err.startswith(f"bindkit: error: {black_hole}/images/generations: no image in ")
    assert "ReadTimeout" in err and "raise --deadline" in err and err.count("\n") == 1
    assert (tmp_path / "manifest.json").read_bytes() == before


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--size", "0", "--size 0: must be from 16 to 4096"),
        ("--size", "100000", "--size 100,000: must be from 16 to 4096"),
        ("--workers", "0", "--workers 0: must be from 1 to 256"),
        ("--timeout", "nan", "--timeout nan: must be more than 0 and at most 3600"),
        ("--deadline", "inf", "--deadline inf: must be more than 0 and at most 86,400"),
        ("--backoff", "-1", "--backoff -1: must be from 0 to 600"),
        ("--retries", "1000", "--retries 1000: must be from 0 to 100"),
        ("--guidance", "nan", "--guidance nan: must be from 0 to 100"),
        ("--steps", "0", "--steps 0: must be from 1 to 1000"),
    ],
)
def test_render_numbers_are_checked_before_any_work(
    tmp_path: Path, option: str, value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--size 0` rendered 256 px; every number now fails in one line, nothing read."""
    argv = ["saber", "render", str(tmp_path / "nowhere"), "--backend", "openai", "--model", "m"]
    assert main([*argv, option, value]) == 2
    assert capsys.readouterr().err == f"bindkit: error: {message}\n"


def test_procedural_size_zero_is_not_the_default(tmp_path: Path) -> None:
    """`--size 0` was read as 'not given' and rendered 256 px images."""
    generate_saber(tmp_path, seed=0, per_n=2, n_max=2, vocab="shapes")
    assert main(["saber", "render", str(tmp_path), "--size", "0", "-q"]) == 2
    assert not (tmp_path / "images").exists()
