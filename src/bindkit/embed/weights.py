"""Identify model weights cheaply: a local directory's files, or a hub snapshot's revision."""

from __future__ import annotations

import difflib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf")
# configuration (.json) and tokenizer files (vocab.txt, merges.txt, *.model, *.tiktoken) change
# the vectors as much as the weights do
_FINGERPRINTED_SUFFIXES = (*_WEIGHT_SUFFIXES, ".json", ".txt", ".tiktoken")
DIGESTS_FILE = "weight_digests.json"
_MAX_REMEMBERED = 4096
_remembered: dict[str, str] = {}


def file_digest(path: Path) -> str:
    """sha256 of a file's whole content (24 hex digits).

    Every byte counts: a change anywhere in a checkpoint changes the fingerprint, so stale
    vectors are never reused. Hashing a multi-GB checkpoint on every load would cost more than
    the embedding, so the digest is remembered by (resolved path, size, mtime, inode), in memory
    and in ``$BINDKIT_CACHE_DIR/weight_digests.json``: a file rewritten in place gets a new
    mtime and is hashed again.
    """
    stat = path.stat()
    key = f"{path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{stat.st_ino}"
    if key in _remembered:
        return _remembered[key]
    stored = _read_digests()
    digest = stored.get(key)
    if not isinstance(digest, str):
        from bindkit._io import sha256_file

        digest = sha256_file(path)[:24]
        stored[key] = digest
        _write_digests(stored)
    _remembered[key] = digest
    return digest


def _digests_path() -> Path:
    from bindkit.embed.cache import default_cache_path

    return default_cache_path().parent / DIGESTS_FILE


def _read_digests() -> dict[str, str]:
    import json

    try:
        data = json.loads(_digests_path().read_text("utf-8"))
    except (OSError, ValueError):  # none yet, or unreadable: hash again
        return {}
    return {k: v for k, v in data.items() if isinstance(v, str)} if isinstance(data, dict) else {}


def _write_digests(stored: dict[str, str]) -> None:
    """Best effort (a read-only cache folder only costs a re-hash next time)."""
    import json

    from bindkit._io import atomic_write_text

    kept = dict(list(stored.items())[-_MAX_REMEMBERED:])
    path = _digests_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(kept, indent=0, sort_keys=False) + "\n")
    except OSError:
        pass


def directory_fingerprint(root: Path) -> str:
    """Digest of a model directory's weights, configuration and tokenizer files.

    Only the path *below* ``root`` decides what is skipped: a ``.cache`` folder inside the model
    folder (huggingface_hub's download bookkeeping) is not part of the model, but a model that
    itself lives under ``~/.cache`` (the hub cache, a venv, a training output) is hashed in full;
    skipping on the absolute path gave every such model the digest of nothing, so two of them
    shared cached vectors.
    """
    from bindkit._io import tree_digest

    def keep(relative: Path) -> bool:
        if ".cache" in relative.parts:
            return False
        return relative.suffix in _FINGERPRINTED_SUFFIXES or relative.name.endswith(".model")

    return tree_digest(root, keep=keep, digest=file_digest)[:24]


def weights_identity(name_or_path: str) -> dict[str, Any]:
    """``{"model": ..., "weights": digest or hub revision}`` for a local path or a hub id."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return {"model": path.name, "weights": directory_fingerprint(path.resolve())}
    revision = _hub_revision(name_or_path)
    return {"model": name_or_path, "weights": revision or "unresolved"}


def _hub_revision(repo_id: str) -> str | None:
    """The commit of the locally cached snapshot of ``repo_id``, without network access."""
    try:
        from huggingface_hub import snapshot_download

        snapshot = Path(snapshot_download(repo_id, local_files_only=True))
    except Exception:
        return None
    return snapshot.name


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def cached_hub_models() -> list[str]:
    """Ids of the models in the local Hugging Face cache (no network)."""
    try:
        from huggingface_hub import scan_cache_dir

        return sorted(r.repo_id for r in scan_cache_dir().repos if r.repo_type == "model")
    except Exception:  # no cache directory yet, or an unreadable one
        return []


def require_checkpoint(name: str, prefix: str, known: Sequence[str] = ()) -> None:
    """Fail within seconds, with close matches, when ``name`` is neither a local directory nor
    a cached hub snapshot, nor (when online) a model the hub knows.

    Without this, a typo such as ``st:defualt`` costs about 90 s of download retries before
    the library gives up. ``known`` are extra names worth suggesting (``default``).
    """
    if Path(name).expanduser().exists():
        return
    try:
        from huggingface_hub import try_to_load_from_cache
        from huggingface_hub.errors import HFValidationError
    except ImportError:  # pragma: no cover - transformers always brings huggingface_hub
        return
    try:
        cached = try_to_load_from_cache(name, "config.json")
    except HFValidationError as exc:
        raise BindkitError(
            f"{prefix}:{name}: not a local directory and not a valid hub id ({exc}); "
            "check the spelling"
        ) from exc
    if isinstance(cached, str):
        return
    reason = "the hub is off (HF_HUB_OFFLINE)"
    if not _offline():
        try:
            from huggingface_hub import model_info

            model_info(name, timeout=10)
            return  # the hub has it: the loader downloads it
        except Exception as exc:  # unreachable hub, unknown repo, gated repo: all mean "no"
            reason = f"the hub did not answer ({type(exc).__name__})"
    candidates = [*known, *cached_hub_models()]
    close = difflib.get_close_matches(name, candidates, n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(f'{prefix}:{c}' for c in close)}? " if close else ""
    raise BindkitError(
        f"{prefix}:{name}: not a local directory and not in the Hugging Face cache, and {reason}; "
        f"{hint}give a local model directory, or download it first: `hf download {name}`"
    )
