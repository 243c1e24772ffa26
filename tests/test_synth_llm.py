"""The OpenAI-compatible backend against a local fake server (real HTTP on loopback) that gives
good, malformed, slow and failing answers."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

pytest.importorskip("httpx")

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
