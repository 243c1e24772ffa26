"""The identity of anything bindkit reuses, and the one rule that compares two.

A training run, a recipe (with its soup, LiNeS output and panel), a sweep trial (a training run)
and a synth run are reused when a rerun finds them finished with the same identity; an embedding
cache entry is keyed by its model's fingerprint. Each identity is built from the same parts:

- **options**: every option that can change the result. A config lists the fields that cannot
  (where the output goes, how often it is saved), each with its reason
  (:data:`bindkit.train.config.OUTPUT_ONLY_FIELDS`); everything else counts.
- **inputs**: :func:`content_digest` of every file or folder read (a folder by its files' names
  and contents, so an input edited in place, or two files swapping names, count as another
  input, and a moved one as the same).
- **the base model**: :func:`model_weights`, the weights digest the embedding cache keys the
  model's vectors by (:func:`bindkit.embed.weights.weights_identity`), so ``+weights=DIR`` or a
  model folder edited in place counts as another model.

:func:`identity_change` names the first difference between a stored identity and the current
one, for the one line that refuses a reuse. Library versions are recorded beside an identity
(:func:`versions`), not in it: another torch changes the last bits, not what was asked for.

What a finished artefact produced is recorded by :func:`output_digests` and re-checked by
:func:`changed_output` before it is reused: a file edited or corrupted after the run finished
is not shipped.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from bindkit._io import sha256_file, tree_digest


def content_digest(path: Path) -> str:
    """sha256 of a file, or of a folder's files (relative names and contents, sorted)."""
    return sha256_file(path) if path.is_file() else tree_digest(path)


def model_weights(spec: str) -> dict[str, Any]:
    """The base model's weights identity, read from the spec without loading the model.

    The folder the spec's weights live in (``+weights=DIR``, a built-in model's package folder,
    ``st:default``'s packaged model, or a local model folder) is fingerprinted as the embedding
    cache fingerprints it (every weight, configuration and tokenizer file, by name and content);
    a hub id gives its locally cached revision (``"unresolved"`` when none is cached).

    Example:
        >>> model_weights("builtin:tiny-clip")["model"]
        'tiny_clip'
    """
    from bindkit.embed.registry import Spec
    from bindkit.embed.weights import weights_identity
    from bindkit.errors import BindkitError

    parsed = Spec.parse(spec)
    where = parsed.options.get("weights") or parsed.arg or parsed.name
    if "weights" not in parsed.options and parsed.name == "builtin" and parsed.arg:
        from bindkit.embed.backends.builtin import builtin_dir

        with contextlib.suppress(BindkitError):  # an unknown name: the model check names it
            where = str(builtin_dir(parsed.arg))
    elif parsed.name == "st" and parsed.arg == "default":
        from bindkit.embed.backends.st import default_model_path

        with contextlib.suppress(BindkitError):  # not installed: the model check says so
            where = default_model_path()
    return weights_identity(where)


def versions() -> dict[str, str]:
    """bindkit's and the numeric libraries' versions, recorded beside an identity."""
    from bindkit import __version__
    from bindkit._environment import library_versions

    return {"bindkit": __version__, **library_versions()}


def as_stored(identity: Mapping[str, Any]) -> dict[str, Any]:
    """``identity`` as a JSON file holds it (lists, not tuples), so a stored one compares equal."""
    return json.loads(json.dumps(identity))  # type: ignore[no-any-return]


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested dicts (and lists of dicts) as ``{"a.b[0].c": leaf}``."""
    if isinstance(value, Mapping):
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat |= flatten(item, f"{prefix}{key}.")
        return flat
    if isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        flat = {}
        for index, item in enumerate(value):
            flat |= flatten(item, f"{prefix[:-1]}[{index}].")
        return flat
    return {prefix[:-1]: value}


def identity_change(
    old: Any,
    new: Mapping[str, Any],
    *,
    shown: Callable[[str], str] = lambda key: key,
    contents: Iterable[str] = ("inputs", "model"),
) -> str | None:
    """The first way ``old`` (a stored identity) differs from ``new``, in words; None if equal.

    Top-level parts are compared in ``new``'s order, keys within a part by name. A part named
    in ``contents`` holds digests: its change reads ``NAME: its content changed``; any other
    reads ``NAME OLD then, NEW now``. ``shown`` turns a flattened key (``options.lr``) into the
    name the user typed (``--lr``).

    Example:
        >>> identity_change({"options": {"lr": 0.1}}, {"options": {"lr": 0.2}})
        'options.lr 0.1 then, 0.2 now'
    """
    if not isinstance(old, dict):
        return "it records no identity (an older bindkit, or not a bindkit output)"
    new = as_stored(new)
    digests = tuple(f"{part}." for part in contents) + tuple(contents)
    order = [*new, *(k for k in old if k not in new)]
    for part in order:
        before = flatten(old.get(part), f"{part}.") if part in old else {}
        now = flatten(new.get(part), f"{part}.") if part in new else {}
        for key in sorted({*before, *now}):
            if before.get(key, _MISSING) == now.get(key, _MISSING):
                continue
            name = shown(key)
            if not key.startswith(digests):
                return f"{name} {before.get(key)!r} then, {now.get(key)!r} now"
            if key not in before:
                return f"{name}: not given then"
            if key not in now:
                return f"{name}: given then, not now"
            return f"{name}: its content changed"
    return None


_MISSING = object()


def output_digests(root: Path, folders: Iterable[str]) -> dict[str, str]:
    """sha256 of every file under ``root/FOLDER`` for each folder that exists, by path relative
    to ``root``: recorded when an artefact is finished, re-checked by :func:`changed_output`."""
    digests = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*")):
            if path.is_file():
                digests[path.relative_to(root).as_posix()] = sha256_file(path)
    return digests


def changed_output(root: Path, recorded: Any) -> str | None:
    """The first recorded file under ``root`` that is missing or whose sha256 differs from
    ``recorded`` (as :func:`output_digests` wrote it), as a path; None when all match.

    A record without digests (an older bindkit) names the record itself: it cannot be checked.
    """
    if not isinstance(recorded, dict) or not recorded:
        return "(no file digests recorded)"
    for name, digest in sorted(recorded.items()):
        path = root / name
        if not path.is_file() or sha256_file(path) != digest:
            return str(path)
    return None


__all__ = [
    "as_stored",
    "changed_output",
    "content_digest",
    "flatten",
    "identity_change",
    "model_weights",
    "output_digests",
    "versions",
]
