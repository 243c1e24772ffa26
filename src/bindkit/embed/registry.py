"""Model spec strings → embedders.

A spec is ``NAME[:ARG][+KEY=VALUE ...]``, e.g. ``st:default``, ``bow``,
``open_clip:ViT-B-32/openai``, ``qwen3-vl-embedding:Qwen/Qwen3-VL-Embedding-2B+dim=1024`` or
``mllm:/models/Qwen2-VL-2B-Instruct+layout=hierarchical+adapter=runs/lora``. Other packages add
backends through the ``bindkit.embedders`` entry-point group: the entry point's name is the spec
NAME and it loads a callable ``factory(arg, **options) -> Embedder``.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from bindkit.embed.base import BaseEmbedder
from bindkit.embed.cache import EmbeddingCache
from bindkit.embed.protocol import Embedder
from bindkit.errors import BindkitError

ENTRY_POINT_GROUP = "bindkit.embedders"


@dataclass(frozen=True)
class Backend:
    """One registered model family."""

    name: str
    target: str  # "module:Class"
    description: str
    example: str
    modalities: str
    needs: tuple[str, ...] = ()  # importable modules
    extra: str | None = None  # pip extra that installs them
    arg: str = "required"  # required | none
    fixed: dict[str, Any] = field(default_factory=dict)

    def available(self) -> bool:
        return all(importlib.util.find_spec(module) is not None for module in self.needs)


_MLLM = "bindkit.embed.backends.mllm:MLLMEmbedder"
_TORCH_TF = ("torch", "transformers", "PIL")
BACKENDS: dict[str, Backend] = {
    b.name: b
    for b in (
        Backend(
            "bow",
            "bindkit.embed.backends.bow:BagOfWordsEmbedder",
            "order-blind bag of hashed words (the binding baseline)",
            "bow",
            "text",
            arg="none",
        ),
        Backend(
            "st",
            "bindkit.embed.backends.st:SentenceTransformerEmbedder",
            "sentence-transformers text encoder; st:default = all-MiniLM-L6-v2 (offline)",
            "st:default",
            "text",
            ("torch", "sentence_transformers"),
            "st",
        ),
        Backend(
            "open_clip",
            "bindkit.embed.backends.open_clip:OpenClipEmbedder",
            "open_clip dual encoder (CLIP, SigLIP, ...)",
            "open_clip:ViT-B-32/openai",
            "text, image",
            ("torch", "open_clip", "PIL"),
            "clip",
        ),
        Backend(
            "builtin",
            "bindkit.embed.backends.builtin:BuiltinEmbedder",
            "models shipped inside bindkit; builtin:tiny-clip = a few-MB image-text fixture "
            "for shapes scenes (offline)",
            "builtin:tiny-clip",
            "text, image",
            ("torch", "safetensors", "PIL"),
            "builtin",
        ),
        Backend(
            "qwen3-vl-embedding",
            _MLLM,
            "Qwen3-VL-Embedding (instruction as system message, last-token pooling, MRL dim)",
            "qwen3-vl-embedding:Qwen/Qwen3-VL-Embedding-2B",
            "text, image",
            _TORCH_TF,
            "mllm",
            fixed={"family": "qwen3-vl-embedding"},
        ),
        Backend(
            "gme",
            _MLLM,
            "GME-Qwen2-VL (hand-built prompt, default instruction on documents)",
            "gme:Alibaba-NLP/gme-Qwen2-VL-2B-Instruct",
            "text, image",
            _TORCH_TF,
            "mllm",
            fixed={"family": "gme"},
        ),
        Backend(
            "vlm2vec",
            _MLLM,
            "VLM2Vec on a Qwen2-VL backbone (MMEB prompt, last token)",
            "vlm2vec:TIGER-Lab/VLM2Vec-Qwen2VL-2B",
            "text, image",
            _TORCH_TF,
            "mllm",
            fixed={"family": "vlm2vec"},
        ),
        Backend(
            "mteb",
            "bindkit.embed.backends.mteb:MtebEmbedder",
            "a model of mteb's registry (mteb.get_model) with its prompts; +task=MTEB_TASK picks "
            "task prompts, weights from the local hub cache",
            "mteb:intfloat/e5-small-v2",
            "text, image (per model)",
            ("torch", "mteb"),
            "mteb",
        ),
        Backend(
            "mllm",
            _MLLM,
            "any Qwen-VL chat model as an embedder; +layout=none|user|system|hierarchical",
            "mllm:Qwen/Qwen2-VL-2B-Instruct+layout=hierarchical",
            "text, image",
            _TORCH_TF,
            "mllm",
            fixed={"family": "mllm"},
        ),
    )
}


@dataclass(frozen=True)
class Spec:
    name: str
    arg: str | None
    options: dict[str, str]

    @classmethod
    def parse(cls, spec: str) -> Spec:
        if not spec or not spec.strip():
            raise BindkitError("empty model spec; e.g. --model st:default")
        head, *option_parts = spec.split("+")
        name, sep, arg = head.partition(":")
        options: dict[str, str] = {}
        for part in option_parts:
            key, eq, value = part.partition("=")
            if not eq or not key:
                raise BindkitError(f"model spec {spec!r}: option {part!r} must look like KEY=VALUE")
            key = key.replace("-", "_")
            if key in options:
                raise BindkitError(
                    f"model spec {spec!r}: option {key!r} is given twice; keep one {key}=VALUE"
                )
            options[key] = value
        return cls(name.strip(), arg if sep else None, options)


def _plugins() -> dict[str, Any]:
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def list_backends() -> list[dict[str, Any]]:
    """Every backend with what it embeds and whether its dependencies are installed."""
    rows = [
        {
            "name": b.name,
            "example": b.example,
            "modalities": b.modalities,
            "installed": b.available(),
            "needs": f"pip install 'bindkit[{b.extra}]'" if b.extra else "-",
            "description": b.description,
        }
        for b in BACKENDS.values()
    ]
    for name, ep in sorted(_plugins().items()):
        if name not in BACKENDS:
            rows.append(
                {
                    "name": name,
                    "example": f"{name}:...",
                    "modalities": "?",
                    "installed": True,
                    "needs": "-",
                    "description": f"plugin {ep.value}",
                }
            )
    return rows


def _coerce(value: str) -> Any:
    lowered = value.lower()
    if lowered in ("true", "false"):
        return lowered == "true"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def _accepted(factory: Callable[..., Any]) -> set[str]:
    names: set[str] = set()
    for cls in inspect.getmro(factory) if inspect.isclass(factory) else (factory,):
        init = cls.__init__ if inspect.isclass(factory) else cls
        params = inspect.signature(init).parameters.values()
        names |= {p.name for p in params if p.kind is p.KEYWORD_ONLY}
    return names


def load_embedder(
    spec: str,
    *,
    batch_size: int | None = None,
    cache: bool | str | Path | EmbeddingCache = True,
    progress: bool | None = None,
    **options: Any,
) -> Embedder:
    """Build the embedder a spec string names.

    Args:
        spec: ``NAME[:ARG][+KEY=VALUE ...]``; see :func:`list_backends` for names.
        batch_size: Inputs per forward pass (backs off automatically on out-of-memory).
        cache: True for the default on-disk cache, False for none, or a path / cache object.
        progress: Show progress bars (default: on unless ``BINDKIT_PROGRESS=0``).
        **options: Backend options; they override ``+KEY=VALUE`` parts of the spec.

    Raises:
        BindkitError: unknown backend (with close-match suggestions), missing argument, unknown
            option, or missing dependency.

    Example:
        >>> model = load_embedder("bow", cache=False)
        >>> model.embed_texts(["a red cube"]).shape
        (1, 512)
    """
    parsed = Spec.parse(spec)
    merged: dict[str, Any] = {k: _coerce(v) for k, v in parsed.options.items()}
    merged.update(options)
    if batch_size is not None:
        merged["batch_size"] = batch_size
    if cache is True:
        merged["cache"] = EmbeddingCache()
    elif cache is not False:
        merged["cache"] = cache if isinstance(cache, EmbeddingCache) else EmbeddingCache(cache)
    merged.setdefault("progress", progress)
    merged["spec"] = spec

    backend = BACKENDS.get(parsed.name)
    if backend is None:
        plugin = _plugins().get(parsed.name)
        if plugin is not None:
            return plugin.load()(parsed.arg, **merged)  # type: ignore[no-any-return]
        names = sorted({*BACKENDS, *_plugins()})
        close = difflib.get_close_matches(parsed.name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        if "/" in parsed.name:  # a bare hub id such as sentence-transformers/all-MiniLM-L6-v2
            hint = f"; a model id needs its backend: write st:{spec} (sentence-transformers)"
        raise BindkitError(
            f"unknown model backend {parsed.name!r} in {spec!r}{hint} "
            f"(available: {', '.join(names)}; see `bindkit models`)"
        )
    if backend.arg == "required" and not parsed.arg:
        raise BindkitError(f"model spec {spec!r} needs an argument, e.g. {backend.example}")
    if backend.arg == "none" and parsed.arg:
        raise BindkitError(
            f"model spec {spec!r}: {backend.name} takes no argument; use {backend.example}"
        )
    missing = [m for m in backend.needs if importlib.util.find_spec(m) is None]
    if missing:
        raise BindkitError(
            f"{backend.name} needs {', '.join(missing)}; pip install 'bindkit[{backend.extra}]'"
        )
    module, _, attr = backend.target.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    allowed = _accepted(factory) | {"spec"}
    unknown = sorted(set(merged) - allowed - set(backend.fixed))
    if unknown:
        valid = sorted(allowed - {"spec", "cache", "progress", "model", "tokenizer", "family"})
        close = difflib.get_close_matches(unknown[0], valid, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BindkitError(
            f"model spec {spec!r}: unknown option {unknown[0]!r}{hint}; valid: {', '.join(valid)}"
        )
    merged.update(backend.fixed)
    embedder: BaseEmbedder = factory(parsed.arg, **merged) if parsed.arg else factory(**merged)
    return embedder
