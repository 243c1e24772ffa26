"""Identify model weights cheaply: a local directory's files, or a hub snapshot's revision."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf")
_SAMPLE = 1 << 20


def file_digest(path: Path) -> str:
    """sha256 of a file's size, its first and its last MiB (full hash for small files).

    Reading whole multi-GB checkpoints on every load would cost more than the embedding; the
    size plus both ends changes whenever a checkpoint is retrained or re-saved.
    """
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with path.open("rb") as handle:
        if size <= 4 * _SAMPLE:
            digest.update(handle.read())
        else:
            digest.update(handle.read(_SAMPLE))
            handle.seek(size - _SAMPLE)
            digest.update(handle.read(_SAMPLE))
    return digest.hexdigest()[:24]


def directory_fingerprint(root: Path) -> str:
    """Digest of a model directory's weights and configuration files."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        if not path.is_file() or ".cache" in path.parts:
            continue
        if (
            path.suffix in _WEIGHT_SUFFIXES
            or path.suffix == ".json"
            or path.name.endswith(".model")
        ):
            digest.update(f"{path.relative_to(root)}={file_digest(path)}\n".encode())
    return digest.hexdigest()[:24]


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
