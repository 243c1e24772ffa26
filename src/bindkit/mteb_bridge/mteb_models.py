"""mteb's model metadata (``ModelMeta``) for a bindkit model: its name, revision and fields.

A bindkit model is ``bindkit/<spec>`` at its fingerprint (the revision), an ``mteb:`` model
keeps mteb's own name and revision. The other fields come from mteb's registry where mteb knows
the model (``mteb:NAME``; ``st:default`` is mteb's ``sentence-transformers/all-MiniLM-L6-v2``;
``st:ORG/NAME`` when mteb registers ``ORG/NAME``): parameters, dimension, licence, release
date, languages. With a LoRA adapter the weights are no longer mteb's, so only the size
fields are kept and ``adapted_from`` names mteb's model. Otherwise they come from what bindkit
knows (the embedding size where the fingerprint records it) and stay null where unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# bindkit specs whose weights are a model of mteb's registry
KNOWN = {"st:default": "sentence-transformers/all-MiniLM-L6-v2"}

# ModelMeta fields that describe the weights themselves (kept from mteb only when the weights
# are mteb's model unchanged)
_SAME_WEIGHTS = (
    "release_date",
    "languages",
    "license",
    "open_weights",
    "public_training_code",
    "public_training_data",
    "reference",
    "training_datasets",
    "citation",
    "use_instructions",
)
_SIZE = ("n_parameters", "n_embedding_parameters", "memory_usage_mb", "max_tokens", "embed_dim")

_FRAMEWORKS = {"bow": ["NumPy"], "st": ["Sentence Transformers", "PyTorch"]}
# bindkit's own backends: what their fingerprint implies (bow: hashed words, no weights)
_OWN: dict[str, dict[str, Any]] = {"bow": {"n_parameters": 0, "license": "mit"}}


def model_name(spec: str) -> str:
    """mteb's name for a bindkit model: ``bindkit/<spec>`` (its revision: the fingerprint)."""
    return f"bindkit/{spec}"


def name_and_revision(
    spec: str, fingerprint: str, description: dict[str, Any] | None
) -> tuple[str, str]:
    """mteb's (name, revision) of a bindkit model: mteb's own for ``mteb:`` models."""
    if description and description.get("backend") == "mteb":
        return str(description["model"]), str(description["revision"])
    return model_name(spec), fingerprint


def counterpart(spec: str, description: dict[str, Any] | None) -> str | None:
    """The name in mteb's registry of the model these weights are (before any adapter), or
    None when mteb does not register it."""
    import mteb

    backend = (description or {}).get("backend")
    if backend == "mteb":
        return str((description or {})["model"])
    candidates = [KNOWN.get(spec.split("+")[0])]
    if backend == "st":
        candidates.append(str((description or {}).get("model")))
    for name in candidates:
        if not name:
            continue
        try:
            mteb.get_model_meta(name)
        except (KeyError, ValueError):
            continue
        return name
    return None


def count_parameters(embedder: Any) -> int | None:
    """The number of parameters of a bindkit embedder's torch model, or None (no torch model)."""
    module = getattr(embedder, "model", None)
    parameters = getattr(module, "parameters", None)
    if not callable(parameters):
        return None
    try:
        return int(sum(p.numel() for p in parameters()))
    except (TypeError, AttributeError):
        return None


def model_meta(
    spec: str,
    fingerprint: str,
    description: dict[str, Any] | None,
    *,
    modalities: Sequence[str],
    embed_dim: int | None = None,
    n_parameters: int | None = None,
    loader: Any = None,
) -> Any:
    """mteb's ``ModelMeta`` of a bindkit model (see the module docstring)."""
    import mteb
    from mteb.models.model_meta import ModelMeta, ScoringFunction

    description = description or {}
    name, revision = name_and_revision(spec, fingerprint, description)
    backend = description.get("backend")
    if backend == "mteb":  # mteb's own model: its registry entry as it is
        return mteb.get_model_meta(name, revision)
    fields: dict[str, Any] = {
        "name": name,
        "revision": revision,
        "modalities": list(modalities),
        "similarity_fn_name": ScoringFunction.COSINE,
        "framework": _FRAMEWORKS.get(str(backend), ["PyTorch"]),
        "open_weights": True,  # bindkit runs the weights locally
        "embed_dim": embed_dim if embed_dim is not None else description.get("dim"),
        "n_parameters": n_parameters,
        **_OWN.get(str(backend), {}),
    }
    base = counterpart(spec, description)
    if base is not None:
        known = mteb.get_model_meta(base).to_dict()
        adapted = bool(description.get("adapter"))
        for key in (*_SIZE, *(() if adapted else _SAME_WEIGHTS)):
            if known.get(key) is not None and fields.get(key) is None:
                fields[key] = known[key]
        if known.get("framework"):  # mteb's list names the libraries the model loads with
            fields["framework"] = known["framework"]
        if isinstance(fields.get("training_datasets"), list):
            fields["training_datasets"] = set(fields["training_datasets"])
        if adapted:
            fields["adapted_from"] = base
    meta = ModelMeta.create_empty(fields)
    if loader is not None:
        meta = meta.model_copy(update={"loader": loader})
    return meta
