"""What every backend shares: the rejection it raises, the two backend shapes, and redaction.

A backend turns a :class:`~bindkit.synth.diversity.Plan` into a candidate
:class:`~bindkit.synth.example.Example`. A synchronous backend (the offline grammar) implements
:class:`Backend`; a networked one subclasses :class:`AsyncBackend`, which the generation loop
drives with several requests in flight and closes when it is done.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from typing import Any, Protocol

from bindkit.errors import BindkitError
from bindkit.synth.diversity import Plan
from bindkit.synth.example import Example


class Rejected(Exception):
    """A backend's answer that cannot become an example (rule + message).

    ``transport`` marks a failure to reach the server (or to get any answer from it after the
    retries); the loop stops a run after too many of those in a row.
    """

    def __init__(self, rule: str, message: str, *, transport: bool = False) -> None:
        super().__init__(message)
        self.rule = rule
        self.transport = transport


class BackendUnavailable(BindkitError):
    """The backend cannot serve any request (bad key, wrong model or URL): stop the run."""


class Backend(Protocol):
    """A synchronous backend: one candidate per call."""

    name: str

    def produce(self, plan: Plan) -> Example: ...


class AsyncBackend(ABC):
    """A backend with requests in flight; the loop calls :meth:`aclose` when it is done."""

    name: str

    @abstractmethod
    async def produce_async(self, plan: Plan) -> Example: ...

    @abstractmethod
    async def aclose(self) -> None: ...

    @abstractmethod
    def describe(self) -> dict[str, Any]:
        """What identifies the backend's output in a run manifest (never a secret)."""

    @property
    @abstractmethod
    def host(self) -> str:
        """Where requests go, for error messages."""


_AUTHORIZATION = re.compile(
    r"(?i)(authorization|api[-_]?key|x-api-key)(\"?\s*[:=]\s*\"?)[^\s\"',}]+"
)
_BEARER = re.compile(r"(?i)\bbearer\s+[^\s\"',}]+")
REDACTED = "[redacted]"


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """``text`` with every secret, Authorization/API-key header value and bearer token removed.

    >>> redact('{"Authorization": "Bearer sk-1"} and sk-1', ["sk-1"])
    '{"Authorization": "[redacted]"} and [redacted]'
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    text = _BEARER.sub(REDACTED, text)
    return _AUTHORIZATION.sub(lambda m: m.group(1) + m.group(2) + REDACTED, text)
