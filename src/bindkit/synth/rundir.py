"""A synth run folder's own format: its manifest, what an --out must be, and stray temporaries.

Both ``synth.generate`` (which writes a run) and ``synth.splits`` (which rewrites its split set)
read and clean the folder through these, so neither imports the other for them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError, DataFormatError

EXAMPLES = "examples.jsonl"
MANIFEST = "manifest.json"
FORMAT = "bindkit-synth-run"


def read_manifest(out: Path) -> dict[str, Any] | None:
    """``OUT/manifest.json`` of a synth run, None when absent; a foreign one is an error."""
    path = out / MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise DataFormatError(
            f"{path}: corrupt manifest; restore it, or start a new --out"
        ) from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        kind = manifest.get("format") if isinstance(manifest, dict) else None
        raise BindkitError(
            f"{out}: holds another kind of data ({kind or 'an unknown manifest'}), not a synth "
            "run; choose an empty or new --out"
        )
    return manifest


def check_out(out: Path) -> None:
    """Refuse an --out that is not a synth run (a SABER directory, any other non-empty one);
    create a new one."""
    from bindkit._lock import LOCK_NAME

    if out.exists() and not out.is_dir():
        raise BindkitError(f"--out {out}: is a file, not a directory; choose a directory")
    if not out.exists():
        try:
            out.mkdir(parents=True)
        except OSError as exc:
            raise BindkitError(
                f"--out {out}: cannot create it ({exc.strerror}); choose another directory"
            ) from None
        return
    if (out / "saber.jsonl").exists():
        raise BindkitError(f"--out {out}: is a SABER directory; choose an empty or new --out")
    if read_manifest(out) is None and not (out / EXAMPLES).exists():
        foreign = sorted(
            p.name for p in out.iterdir() if p.name != LOCK_NAME and not _is_temporary(p)
        )
        if foreign:
            raise BindkitError(
                f"--out {out}: not empty ({foreign[0]}, ...) and not a synth run; choose an "
                "empty or new --out"
            )


def _is_temporary(path: Path) -> bool:
    return path.name.startswith(".") and path.name.endswith(".tmp")


def clean_temporary(out: Path) -> list[Path]:
    """Delete what killed runs left behind (atomic-write temp files, split staging folders).

    Call it only while holding the directory's lock: a live writer's temp files look the same.
    """
    removed = []
    for folder in [out, *(p for p in out.iterdir() if p.is_dir() and not _is_temporary(p))]:
        for path in folder.iterdir():
            if _is_temporary(path):
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed.append(path)
    return removed
