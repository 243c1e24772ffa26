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
    trainable: bool = False  # a torch embedder that LoRA finetuning can train

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
            trainable=True,
        ),
        Backend(
            "open_clip",
            "bindkit.embed.backends.open_clip:OpenClipEmbedder",
            "open_clip dual encoder (CLIP, SigLIP, ...)",
            "open_clip:ViT-B-32/openai",
            "text, image",
            ("torch", "open_clip", "PIL"),
            "clip",
            trainable=True,
        ),
        Backend(
            "builtin",
            "bindkit.embed.backends.builtin:open_builtin",
            "models shipped inside bindkit; builtin:tiny-clip (dual encoder) and builtin:tiny-vlm "
            "(Qwen3-VL) = few-MB image-text fixtures for shapes scenes (offline)",
            "builtin:tiny-clip",
            "text, image",
            ("torch", "safetensors", "PIL"),
            "builtin",
            trainable=True,
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
            trainable=True,
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
            trainable=True,
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
            trainable=True,
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
            trainable=True,
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


def takes_option(spec: str, option: str) -> bool:
    """Whether the backend ``spec`` names accepts ``+option=`` (False for an unknown backend,
    a plugin or a bare model id, which are left as they are)."""
    backend = BACKENDS.get(Spec.parse(spec).name)
    if backend is None:
        return False
    module, _, attr = backend.target.partition(":")
    try:
        factory = getattr(importlib.import_module(module), attr)
    except ImportError:  # its extra is missing: loading it says so
        return False
    return option in _accepted(factory)


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
    if merged.get("device") is not None:
        from bindkit.embed.devices import check_device

        check_device(str(merged["device"]))  # before the cache or any weights are opened
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
        bare = bare_model_id(parsed)
        if bare is not None:  # a model id or folder without a backend prefix
            resolved = resolve_model_id(bare)
            rest = spec[len(spec.split("+")[0]) :]
            return load_embedder(
                resolved + rest, batch_size=batch_size, cache=cache, progress=progress, **options
            )
        if looks_like_path(parsed.name) and not Path(parsed.name).expanduser().exists():
            raise no_such_folder(parsed.name)
        names = sorted({*BACKENDS, *_plugins()})
        close = difflib.get_close_matches(parsed.name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        if "/" in parsed.name:  # a path or id that is not there, e.g. with a revision
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


# -- bare model ids ------------------------------------------------------------------------
# (name pattern in the folder or repo name, the config's model_type, the backend) of the MLLM
# embedders bindkit knows; another Qwen-VL checkpoint gets a hint, not a guess
KNOWN_MLLM = (
    ("gme-qwen2-vl", ("qwen2_vl",), "gme"),
    ("vlm2vec", ("qwen2_vl", "qwen2_5_vl"), "vlm2vec"),
    ("qwen3-vl-embedding", ("qwen3_vl",), "qwen3-vl-embedding"),
)
QWEN_VL_TYPES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
_LOOKED_AT = ("modules.json", "config_sentence_transformers.json", "config.json")


def check_trainable(spec: str) -> None:
    """Refuse, in seconds and before any weights load, a spec that cannot be finetuned: an
    unknown backend, one without a torch path (``bow``, ``mteb:``), one whose libraries are
    missing, or a checkpoint that is neither a local folder nor a cached or reachable hub model.

    Raises:
        BindkitError: one line naming the spec and what to give instead.
    """
    from bindkit.embed.weights import require_checkpoint

    parsed = Spec.parse(spec)
    backend = BACKENDS.get(parsed.name)
    if backend is None and parsed.name not in _plugins():
        bare = bare_model_id(parsed)
        path_like = parsed.name.startswith((".", "/", "~"))
        if (bare is None and "/" in parsed.name) or (
            path_like and not Path(parsed.name).expanduser().is_dir()
        ):
            raise BindkitError(
                f"--model {spec}: not a folder, and not a model id; give a local model folder "
                "or a backend prefix (st:ID, mllm:ID; see `bindkit models`)"
            )
        if bare is not None:
            check_trainable(resolve_model_id(bare) + spec[len(spec.split("+")[0]) :])
            return
        names = sorted({*BACKENDS, *_plugins()})
        close = difflib.get_close_matches(parsed.name, names, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise BindkitError(f"--model {spec}: unknown model backend {parsed.name!r}{hint}")
    if backend is None:  # a plugin: only loading it can tell
        return
    if not backend.trainable:
        trainable = ", ".join(f"{b.name}:" for b in BACKENDS.values() if b.trainable)
        raise BindkitError(
            f"--model {spec}: the {backend.name} backend has no trainable torch path; give a "
            f"model of {trainable}"
        )
    if backend.arg == "required" and not parsed.arg:
        raise BindkitError(f"--model {spec}: needs an argument, e.g. {backend.example}")
    missing = [m for m in backend.needs if importlib.util.find_spec(m) is None]
    if missing:
        raise BindkitError(
            f"--model {spec}: needs {', '.join(missing)}; pip install 'bindkit[{backend.extra}]'"
        )
    weights = parsed.options.get("weights")
    if backend.name == "builtin":
        from bindkit.embed.backends.builtin import builtin_dir

        builtin_dir(str(parsed.arg))
        if weights is not None and not Path(weights).expanduser().is_dir():
            raise BindkitError(f"--model {spec}: weights={weights} is not a folder")
    elif backend.name != "open_clip" and parsed.arg and parsed.arg != "default":
        require_checkpoint(parsed.arg, backend.name)


def bare_model_id(parsed: Spec) -> str | None:
    """The model id or folder a spec without a known backend prefix names, or None."""
    if parsed.name == "hf-hub" and parsed.arg:
        return f"hf-hub:{parsed.arg}"
    if parsed.arg is not None:
        return None
    name = parsed.name
    if Path(name).expanduser().is_dir() or (name.count("/") == 1 and not name.startswith("/")):
        return name
    return None


def _local_files(model_id: str, cache_dir: str | Path | None) -> dict[str, Path]:
    """The files of ``_LOOKED_AT`` a local folder or the local Hugging Face cache holds for
    ``model_id``; nothing is asked of the network."""
    folder = Path(model_id).expanduser()
    if folder.is_dir():
        return {f: folder / f for f in _LOOKED_AT if (folder / f).is_file()}
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:
        return {}
    found = {}
    for filename in _LOOKED_AT:
        try:
            hit = try_to_load_from_cache(model_id, filename, cache_dir=cache_dir)
        except ValueError:  # not a valid hub id (HFValidationError), e.g. ./no-such-folder
            return {}
        if isinstance(hit, str):
            found[filename] = Path(hit)
    return found


def looks_like_path(name: str) -> bool:
    """``./x``, ``../x``, ``~/x``, ``/x``, ``C:\\x``: a folder, never a hub id (ORG/NAME)."""
    return name.startswith((".", "~", "/")) or "\\" in name


def no_such_folder(name: str) -> BindkitError:
    return BindkitError(
        f"model {name!r}: no such folder; check the path (a Hugging Face id is ORG/NAME, "
        "e.g. st:sentence-transformers/all-MiniLM-L6-v2)"
    )


def resolve_model_id(model_id: str, *, cache_dir: str | Path | None = None) -> str:
    """The full spec for a bare model id or folder, decided from local files only: a
    sentence-transformers model (``modules.json`` / ``config_sentence_transformers.json``) →
    ``st:ID``; a known MLLM embedder (its name and its config's ``model_type``) → ``gme:``,
    ``vlm2vec:`` or ``qwen3-vl-embedding:``. Anything else is a one-line hint naming the spec.

    Args:
        model_id: A Hugging Face id (``org/name``), a local folder, or ``hf-hub:org/name``.
        cache_dir: The hub cache to look in (default: huggingface_hub's, ``HF_HUB_CACHE``).
    """
    import json

    if model_id.startswith("hf-hub:"):
        raise BindkitError(
            f"model {model_id!r}: an open_clip hub model needs its backend, and the open_clip "
            "backend takes ARCH/PRETRAINED: write e.g. open_clip:ViT-B-32/openai"
        )
    files = _local_files(model_id, cache_dir)
    if "modules.json" in files or "config_sentence_transformers.json" in files:
        return f"st:{model_id}"
    where = "a local folder" if Path(model_id).expanduser().is_dir() else "the local hub cache"
    if "config.json" in files:
        try:
            model_type = json.loads(files["config.json"].read_text(encoding="utf-8")).get(
                "model_type"
            )
        except (OSError, ValueError, AttributeError):
            model_type = None
        name = Path(model_id.rstrip("/")).name.lower()
        for pattern, types, backend in KNOWN_MLLM:
            if pattern in name and model_type in types:
                return f"{backend}:{model_id}"
        if model_type in QWEN_VL_TYPES:
            raise BindkitError(
                f"model {model_id!r}: a {model_type} checkpoint in {where} that is not a known "
                f"embedder; write gme:{model_id}, vlm2vec:{model_id}, "
                f"qwen3-vl-embedding:{model_id} or mllm:{model_id} (any Qwen-VL model)"
            )
        raise BindkitError(
            f"model {model_id!r}: a {model_type or 'transformers'} checkpoint in {where} with no "
            f"sentence-transformers files; write st:{model_id} to load it with mean pooling, or "
            "name another backend (see `bindkit models`)"
        )
    if Path(model_id).expanduser().is_dir():
        raise BindkitError(
            f"model {model_id!r}: a local folder with no model files (no config.json, "
            "modules.json or config_sentence_transformers.json); give the folder that holds "
            "the checkpoint, or a backend prefix (see `bindkit models`)"
        )
    if looks_like_path(model_id):
        raise no_such_folder(model_id)
    raise BindkitError(
        f"model {model_id!r}: no backend prefix and no local copy to tell which (offline: not "
        f"a folder, not in the Hugging Face cache); write st:{model_id} (sentence-transformers), "
        f"mllm:{model_id} (Qwen-VL; gme:, vlm2vec:, qwen3-vl-embedding: for those embedders) "
        "or open_clip:ARCH/PRETRAINED"
    )
