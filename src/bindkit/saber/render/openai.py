"""Any OpenAI-compatible image endpoint (``POST {base_url}/images/generations``).

Requests run concurrently (``--workers``); a rate limit (429), a server error (5xx), a timeout or
a dropped connection is retried with exponential backoff; a refused connection (nothing
listening) stops the render at once; any other error fails that item only.
A total deadline stops the whole render when no image has arrived for ``deadline`` seconds (900
by default, ``--deadline``): a server that accepts connections and never answers fails with one
line naming the endpoint instead of retrying for hours. The API key comes from ``--api-key`` or
``OPENAI_API_KEY`` and is never written anywhere.
"""

from __future__ import annotations

import base64
import io
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bindkit.errors import BindkitError
from bindkit.saber.io import MCQ, Item

_RETRYABLE = {408, 409, 429, 500, 502, 503, 504}
_local = threading.local()


class EndpointDeadline(BindkitError):
    """No image arrived for the whole deadline: the render stops (not just this item)."""

    fatal = True


class EndpointUnreachable(BindkitError):
    """Nothing answers at the endpoint (connection refused, no route): the render stops at once,
    as a retry a few seconds later would meet the same closed port."""

    fatal = True


class _Watch:
    """When the endpoint last delivered an image (or was first asked), shared by the workers."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last: float | None = None

    def start(self) -> None:
        with self.lock:
            if self.last is None:
                self.last = time.monotonic()

    def answered(self) -> None:
        with self.lock:
            self.last = time.monotonic()

    def silent_for(self) -> float:
        with self.lock:
            return 0.0 if self.last is None else time.monotonic() - self.last


def _client() -> Any:
    """One HTTP client per worker thread: connections and the TLS context are reused."""
    import httpx

    if getattr(_local, "client", None) is None:
        _local.client = httpx.Client()
    return _local.client


@dataclass(frozen=True)
class OpenAIImagesBackend:
    """Images from an OpenAI-compatible endpoint.

    Attributes:
        model: Model name sent with each request (e.g. ``gpt-image-1``).
        base_url: API root; the request goes to ``{base_url}/images/generations``.
        api_key: Bearer token; default ``OPENAI_API_KEY`` (may be empty for local servers).
        size: Square image size in pixels.
        quality: Optional ``quality`` field (``low``/``medium``/``high`` for gpt-image models).
        retries: Attempts after the first for retryable failures.
        backoff: First wait in seconds; doubled after each retry.
        timeout: Seconds per request.
        deadline: Stop the render when no image arrived for this many seconds.
        extra: Further request fields (``--option KEY=VALUE``).
    """

    model: str
    base_url: str = "https://api.openai.com/v1"
    api_key: str | None = field(default=None, repr=False)
    size: int = 1024
    quality: str | None = None
    retries: int = 5
    backoff: float = 2.0
    timeout: float = 300.0
    deadline: float = 900.0
    extra: tuple[tuple[str, Any], ...] = ()
    name: str = "openai"
    parallel: str = "thread"
    _watch: _Watch = field(default_factory=_Watch, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.model:
            raise BindkitError("--model is required for --backend openai, e.g. --model gpt-image-1")
        if not self.base_url.startswith(("http://", "https://")):
            raise BindkitError(f"--base-url {self.base_url!r}: must start with http:// or https://")
        if self.retries < 0 or self.backoff < 0:
            raise BindkitError("--retries and --backoff must not be negative")

    def describe(self) -> dict[str, Any]:
        options = {"size": self.size, "quality": self.quality, **dict(self.extra)}
        return {
            "backend": self.name,
            "model": self.model,
            "options": {**options, "base_url": self.base_url},
        }

    def check(self, mcqs: Sequence[MCQ]) -> None:
        import importlib.util

        if importlib.util.find_spec("httpx") is None:
            raise BindkitError("--backend openai needs httpx; pip install 'bindkit[llm]'")

    def _payload(self, prompt: str) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.model,
            "prompt": prompt,
            "n": 1,
            "size": f"{self.size}x{self.size}",
        }
        if self.quality:
            payload["quality"] = self.quality
        payload.update(dict(self.extra))
        return payload

    def render(self, item: Item, mcq: MCQ, variant: int = 0) -> Any:
        """One generation request (the endpoint samples anew on each: a redo's ``variant``
        needs no seed)."""
        import httpx
        from PIL import Image

        key = self.api_key if self.api_key is not None else os.environ.get("OPENAI_API_KEY", "")
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        url = self.base_url.rstrip("/") + "/images/generations"
        wait = self.backoff
        problem = ""
        self._watch.start()
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(wait)
                wait *= 2
            self._check_deadline(url, problem)
            try:
                response = _client().post(
                    url,
                    json=self._payload(item.image_prompt),
                    headers=headers,
                    timeout=self.timeout,
                )
            except httpx.ConnectError as exc:  # nothing listening, or no route to it
                raise EndpointUnreachable(
                    f"{url}: cannot connect ({exc or type(exc).__name__}); check that the server "
                    "is up and --base-url is right, then rerun the same command to resume"
                ) from None
            except httpx.TransportError as exc:  # timeouts and dropped connections
                problem = f"{type(exc).__name__}: {exc}"
                continue
            if response.status_code in _RETRYABLE:
                problem = f"HTTP {response.status_code}"
                continue
            if response.status_code >= 400:
                raise BindkitError(
                    f"{item.id}: HTTP {response.status_code} from {url}: {response.text[:200]}"
                )
            data = _image_bytes(response.json(), item.id, self.timeout)
            try:
                image = Image.open(io.BytesIO(data)).convert("RGB")
            except OSError as exc:
                problem = f"undecodable image ({exc})"
                continue
            self._watch.answered()
            return image
        self._check_deadline(url, problem)
        raise BindkitError(f"{item.id}: gave up after {self.retries + 1} attempts ({problem})")

    def _check_deadline(self, url: str, problem: str) -> None:
        silent = self._watch.silent_for()
        if silent > self.deadline:
            last = f" (last: {problem})" if problem else ""
            raise EndpointDeadline(
                f"{url}: no image in {silent:.0f} s{last}; check that the server is up and "
                "answering, or raise --deadline; rerun the same command to resume"
            )


def _image_bytes(body: Any, item_id: str, timeout: float) -> bytes:
    try:
        entry = body["data"][0]
    except (KeyError, IndexError, TypeError) as exc:
        raise BindkitError(f"{item_id}: response has no data[0] ({str(body)[:200]})") from exc
    if entry.get("b64_json"):
        return base64.b64decode(entry["b64_json"])
    if entry.get("url"):
        return bytes(_client().get(entry["url"], timeout=timeout).content)
    raise BindkitError(f"{item_id}: data[0] has neither b64_json nor url")
