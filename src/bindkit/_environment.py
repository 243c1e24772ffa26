"""What produced a result besides bindkit itself: Python and the installed library versions.

Read from package metadata (``importlib.metadata``), so recording them imports no framework;
a library that is not installed is left out. Written beside a result's provenance, not into it:
a new library version is recorded, and the cache and result reuse stay keyed by the model's
fingerprint and the data (see ``embed.base`` and ``results.store.reusable``).
"""

from __future__ import annotations

import platform
import sys
from functools import cache
from importlib import metadata

#: the distributions whose version can change a vector or a score
LIBRARIES = (
    "torch",
    "transformers",
    "sentence-transformers",
    "peft",
    "accelerate",
    "open_clip_torch",
    "numpy",
    "faiss-cpu",
    "faiss-gpu",
    "safetensors",
    "tokenizers",
    "pillow",
    "mteb",
)


@cache
def library_versions() -> dict[str, str]:
    """``{"python": "3.11.7", "torch": "2.13.0+cpu", ...}`` for the installed libraries."""
    found = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


#: the versions of the libraries that move numbers (torch, transformers, sentence-transformers,
#: peft, tokenizers, numpy) that every README and docs table was made under: the pins of the
#: repository's ``constraints.txt`` (a test keeps the two equal)
PINNED = {
    "torch": "2.13.0",
    "transformers": "5.25.0",
    "sentence-transformers": "6.3.0",
    "peft": "0.21.2",
    "tokenizers": "0.23.3",
    "numpy": "2.4.6",
}


def _release(version: str) -> str:
    return version.split("+")[0]


def version_drift(made_under: dict[str, str] | None = None) -> str | None:
    """One line naming the libraries whose installed version differs from ``made_under``.

    ``made_under`` is the versions a table was made under: :data:`PINNED` by default (the
    README's tables), or the ``versions`` a result file recorded (a rerun into the same folder).
    Only the libraries of :data:`PINNED` are compared; a local label (``+cpu``, ``+cu124``) is
    not a difference. None when they all agree.
    """
    reference = PINNED if made_under is None else made_under
    installed = library_versions()
    changed = [
        f"{name} {installed.get(name, 'not installed')} (table: {reference[name]})"
        for name in PINNED
        if name in reference and _release(installed.get(name, "")) != _release(reference[name])
    ]
    if not changed:
        return None
    where = "the pinned install" if made_under is None else "the earlier run"
    return (
        f"note: {', '.join(changed)} differ from {where}: numbers can differ from its table "
        "(install with -c constraints.txt to reproduce it)"
    )


def note_version_drift(made_under: dict[str, str] | None = None) -> str | None:
    """Print :func:`version_drift`'s line to stderr (not silenced by ``-q``: it is no progress
    line but a reason the numbers may differ); returns it."""
    line = version_drift(made_under)
    if line is not None:
        print(f"bindkit: {line}", file=sys.stderr, flush=True)
    return line
