"""Where candidate examples come from: an offline grammar or an LLM server.

:data:`BACKENDS` is the table the CLI and :func:`bindkit.synth.run` choose from; adding a
backend is one entry here and one module beside this one.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bindkit.errors import BindkitError

if TYPE_CHECKING:  # the table stays importable without the generation machinery (CLI --help)
    from bindkit.synth.backends.base import AsyncBackend, Backend


@dataclass(frozen=True)
class BackendOptions:
    """Everything a backend may need; each backend reads the fields it uses."""

    seed: int = 0
    base_url: str | None = None
    llm_model: str | None = None
    api_key: str | None = None
    timeout: float = 120.0
    max_retries: int = 5
    prompts: str | Path | None = None


@dataclass(frozen=True)
class BackendEntry:
    name: str
    help: str
    build: Callable[[BackendOptions], Backend | AsyncBackend]


def _template(options: BackendOptions) -> Backend:
    from bindkit.synth.backends.template import TemplateBackend

    return TemplateBackend(seed=options.seed)


def _openai(options: BackendOptions) -> AsyncBackend:
    from bindkit.synth.backends.openai import OpenAIBackend

    return OpenAIBackend(
        base_url=options.base_url,
        model=options.llm_model,
        api_key=options.api_key,
        timeout=options.timeout,
        max_retries=options.max_retries,
        prompts=options.prompts,
    )


BACKENDS: dict[str, BackendEntry] = {
    entry.name: entry
    for entry in (
        BackendEntry("template", "offline grammar (no server, the default)", _template),
        BackendEntry("openai", "any OpenAI-compatible chat server (--base-url)", _openai),
    )
}


def make_backend(name: str, options: BackendOptions) -> Backend | AsyncBackend:
    """Build the backend called ``name``; a wrong name gets the close matches."""
    if name not in BACKENDS:
        close = difflib.get_close_matches(name, BACKENDS, n=2)
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        raise BindkitError(f"--backend {name!r}: unknown; {hint}use one of {', '.join(BACKENDS)}")
    return BACKENDS[name].build(options)


def describe(backend: Backend | AsyncBackend) -> dict[str, Any]:
    """The backend's part of a run manifest (an LLM's model and URL, never its key)."""
    from bindkit.synth.backends.base import AsyncBackend

    if isinstance(backend, AsyncBackend):
        return backend.describe()
    return {"backend": backend.name}
