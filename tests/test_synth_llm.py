"""The OpenAI-compatible backend against a local fake server (real HTTP on loopback) that gives
good, malformed, slow and failing answers."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("httpx")

from bindkit.errors import BindkitError
from bindkit.synth.backends.base import BackendUnavailable, Rejected, redact
from bindkit.synth.backends.openai import OpenAIBackend, build_prompt, load_prompts
from bindkit.synth.backends.template import TemplateBackend
from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.diversity import Controller, Plan
from bindkit.synth.generate import EXAMPLES, REJECTED, generate


def good_answer(targets: dict[str, Any]) -> str:
    """What a capable LLM would write: the template grammar, for the plan in the prompt."""
    plan = Plan(
        attempt=targets["attempt"],
        type=targets["type"],
        length_band=tuple(targets["length_band"]),  # type: ignore[arg-type]
        distance_window=tuple(targets["distance_window"]),  # type: ignore[arg-type]
        distractors=targets["distractors"],
        scene=targets["context"],
        time=None,
        weather=None,
        register=targets["register"],
        opener=targets["opener"],
        order=targets["order"],
        avoid=[],
        banned=[],
        suggestions={},
    )
    ex = TemplateBackend(seed=99).produce(plan)
    return json.dumps(
        {
            "bindings": ex.bindings,
            "slots": ex.slots,
            "distractors": ex.distractors,
            "positive": ex.positive,
        }
    )


class FakeLLM(BaseHTTPRequestHandler):
    seen: ClassVar[Counter[int]] = Counter()
    statuses: ClassVar[Counter[str]] = Counter()
    lock = threading.Lock()

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        prompt = body["messages"][0]["content"]
        targets = json.loads(re.search(r"Targets \(JSON\): (\{.*\})", prompt).group(1))  # type: ignore[union-attr]
        attempt = targets["attempt"]
        with self.lock:
            FakeLLM.seen[attempt] += 1
            tries = FakeLLM.seen[attempt]
        mode = attempt % 7
        if mode == 1 and tries == 1:
            return self._status(500, "boom")
        if mode == 2 and tries == 1:
            return self._status(429, "slow down", {"Retry-After": "0"})
        if mode == 4 and tries == 1:
            time.sleep(1.0)  # longer than the client's timeout
        if mode == 5:
            return self._status(503, "down")
        content = "this is not JSON" if mode == 3 else good_answer(targets)
        self._json(200, {"choices": [{"message": {"role": "assistant", "content": content}}]})

    def _status(self, code: int, text: str, headers: dict[str, str] | None = None) -> None:
        FakeLLM.statuses[str(code)] += 1
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(text.encode())

    def _json(self, code: int, payload: dict[str, Any]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(data)  # the client may have given up (timeout)


@pytest.fixture
def server() -> Iterator[str]:
    FakeLLM.seen.clear()
    FakeLLM.statuses.clear()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeLLM)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def test_llm_backend_handles_good_malformed_slow_and_failing(server: str, tmp_path: Path) -> None:
    backend = OpenAIBackend(base_url=server, model="fake", timeout=0.5, max_retries=2, backoff=0.01)
    controller, _stats = generate(tmp_path, 25, backend, concurrency=4, progress=False)
    assert controller.accepted == 25
    rows = (tmp_path / EXAMPLES).read_text().splitlines()
    assert len(rows) == 25 and len({json.loads(r)["id"] for r in rows}) == 25
    rejected = Counter(
        json.loads(r)["rule"] for r in (tmp_path / REJECTED).read_text().splitlines()
    )
    assert rejected["malformed"] >= 1  # mode 3: not JSON, regenerated under a new attempt
    assert rejected["backend_error"] >= 1  # mode 5: 503 until the retries run out
    # retried after 500, 429 and a timeout, then accepted
    accepted_attempts = {json.loads(r)["source"]["attempt"] for r in rows}
    assert any(a % 7 in (1, 2, 4) for a in accepted_attempts)
    assert FakeLLM.statuses["500"] >= 1 and FakeLLM.statuses["429"] >= 1
    assert any(FakeLLM.seen[a] >= 2 for a in accepted_attempts if a % 7 == 4)


def test_prompt_templates_fill_every_field() -> None:
    controller = Controller()
    templates = load_prompts()
    kinds = sorted(CONSTRUCTIONS)
    for attempt in range(42):
        plan = controller.plan(attempt, 0, kinds[attempt % len(kinds)])
        prompt = build_prompt(plan, templates)
        assert "{" not in prompt.split("Answer with JSON only")[0]
        assert f"{plan.length_band[0]} to {plan.length_band[1]} words" in prompt
        assert json.loads(prompt.split("Targets (JSON): ")[1])["type"] == plan.type


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again: nothing listens there


def test_nothing_listening_ends_in_one_line_within_30_seconds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.cli import main

    monkeypatch.setenv("BINDKIT_PROGRESS", "1")

    port = _free_port()
    start = time.monotonic()
    code = main(
        [
            *("synth", "generate", "--n", "50", "--out", str(tmp_path), "--backend", "openai"),
            *("--base-url", f"http://127.0.0.1:{port}/v1", "--llm-model", "m"),
        ]
    )
    assert time.monotonic() - start < 30
    err = capsys.readouterr().err
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"bindkit: error: 127.0.0.1:{port}: 20 requests in a row failed")
    assert "cannot connect" in last and "--base-url" in last
    assert "failed=" in err  # the progress bar showed the failures as they happened
    rows = [json.loads(r) for r in (tmp_path / REJECTED).read_text().splitlines()]
    assert len(rows) == 20 and {r["rule"] for r in rows} == {"backend_error"}


KEY = "sk-test-SECRET-0123456789"


class EchoLLM(BaseHTTPRequestHandler):
    """Echoes the request's Authorization header back: as a 503 body, as a 401 body, or inside
    an answer that the validator rejects (so it is stored in rejected.jsonl)."""

    mode: ClassVar[str] = "503"
    requests: ClassVar[int] = 0

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        EchoLLM.requests += 1
        echo = f"Authorization: {self.headers.get('Authorization')}"
        if EchoLLM.mode == "answer":
            content = json.dumps(
                {"bindings": [["red", "cube"], ["blue", "ball"]], "positive": f"A red {echo}"}
            )
            data = json.dumps({"choices": [{"message": {"content": content}}]}).encode()
            code = 200
        else:
            data, code = f"you sent {echo} and key {KEY}".encode(), int(EchoLLM.mode)
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def echo() -> Iterator[str]:
    EchoLLM.requests = 0
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), EchoLLM)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


def _files_text(directory: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in directory.rglob("*") if p.is_file())


@pytest.mark.parametrize("mode", ["503", "answer"])
def test_the_key_never_reaches_a_file(echo: str, tmp_path: Path, mode: str) -> None:
    from bindkit.synth import run

    EchoLLM.mode = mode
    options: dict[str, Any] = {"backend": "openai", "base_url": echo, "llm_model": "fake"}
    options |= {"api_key": KEY, "max_retries": 0, "progress": False, "concurrency": 2}
    if mode == "503":
        with pytest.raises(BindkitError, match="20 requests in a row failed") as info:
            run(tmp_path, 5, **options)
        assert KEY not in str(info.value)
    else:
        with pytest.raises(BindkitError, match="stopped after 30 attempts"):
            run(tmp_path, 5, **options, max_attempts=30)
    text = _files_text(tmp_path)
    assert "[redacted]" in text and KEY not in text and "Bearer" not in text
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["identity"]["llm_model"] == "fake"
    assert manifest["identity"]["base_url"] == echo


def test_a_client_error_stops_at_once_without_retries(echo: str, tmp_path: Path) -> None:
    EchoLLM.mode = "401"
    backend = OpenAIBackend(base_url=echo, model="fake", api_key=KEY, backoff=0.01)
    with pytest.raises(BackendUnavailable, match=r"HTTP 401 .*check --base-url, --llm-model") as e:
        generate(tmp_path, 50, backend, concurrency=3, progress=False)
    assert KEY not in str(e.value) and "\n" not in str(e.value)
    assert EchoLLM.requests <= 3  # the requests in flight, none retried
    assert backend._client is None  # closed


def test_a_broken_prompt_placeholder_is_one_line_and_no_task_noise(
    server: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import gc
    import shutil
    from importlib.resources import as_file, files

    prompts = tmp_path / "prompts"
    with as_file(files("bindkit.synth").joinpath("data/prompts")) as packaged:
        shutil.copytree(packaged, prompts)
    (prompts / "pair_swap.txt").write_text("Write about {colour}.\n")
    with pytest.raises(BindkitError, match="prompt template for pair_swap: bad placeholder 'col"):
        OpenAIBackend(base_url=server, model="fake", prompts=prompts)
    # a template that breaks after the up-front check: the loop still ends in one error
    backend = OpenAIBackend(base_url=server, model="fake", timeout=0.5, backoff=0.01)
    backend.templates = dict.fromkeys(backend.templates, "{nope}")
    with pytest.raises(BindkitError, match="bad placeholder 'nope'"):
        generate(tmp_path / "run", 40, backend, concurrency=4, progress=False)
    gc.collect()  # an exception nobody retrieved is logged when its task is collected
    assert "never retrieved" not in caplog.text


def test_redact() -> None:
    text = f'{{"authorization": "Bearer {KEY}", "x-api-key": "abc123"}} token {KEY}'
    clean = redact(text, [KEY])
    assert KEY not in clean and "abc123" not in clean and "Bearer" not in clean
    assert redact("nothing secret here", [KEY]) == "nothing secret here"


def test_a_connect_timeout_is_short_and_not_retried() -> None:
    import asyncio

    import httpx

    class Blackhole:
        calls = 0

        async def post(self, url: str, json: Any) -> None:
            Blackhole.calls += 1
            raise httpx.ConnectTimeout("")

    backend = OpenAIBackend(base_url="http://10.255.255.1/v1", model="m", max_retries=5)
    client = backend.make_client()
    assert client.timeout.connect == 10.0 and client.timeout.read == 120.0
    backend._client = Blackhole()
    with pytest.raises(Rejected, match=r"cannot connect \(ConnectTimeout\)") as info:
        asyncio.run(backend.produce_async(Controller().plan(0, 0)))
    assert info.value.transport and Blackhole.calls == 1


def test_a_server_that_never_answers_meets_the_total_deadline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 21: accepted connections and no answer ran 10+ minutes with progress at 0."""
    from bindkit.cli import main

    monkeypatch.setenv("BINDKIT_PROGRESS", "1")
    with socket.socket() as hole:  # the kernel accepts connections; nobody ever answers
        hole.bind(("127.0.0.1", 0))
        hole.listen(64)
        port = hole.getsockname()[1]
        start = time.monotonic()
        code = main(
            [
                *("synth", "generate", "--n", "5", "--out", str(tmp_path), "--backend", "openai"),
                *("--base-url", f"http://127.0.0.1:{port}/v1", "--llm-model", "m"),
                *("--timeout", "0.5", "--max-retries", "50", "--concurrency", "3"),
                *("--deadline", "2"),
            ]
        )
    assert time.monotonic() - start < 15
    err = capsys.readouterr().err
    assert code == 2
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"bindkit: error: 127.0.0.1:{port}: no answer in 2 s (3 requests")
    assert "raise --deadline" in last
    assert "3 requests waiting" in err.strip().splitlines()[-2]  # the progress line said so


def test_the_deadline_is_checked_with_the_other_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.cli import main

    base = ["synth", "generate", "--n", "5", "--out", str(tmp_path / "s"), "--backend", "openai"]
    base += ["--base-url", "http://127.0.0.1:9/v1", "--llm-model", "m"]
    for value in ("nan", "10", "1e9"):
        assert main([*base, "--deadline", value]) == 2
        assert "--deadline" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
