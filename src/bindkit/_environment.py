"""What produced a result besides bindkit itself: Python and the installed library versions.

Read from package metadata (``importlib.metadata``), so recording them imports no framework;
a library that is not installed is left out. Written beside a result's provenance, not into it:
a new library version is recorded, and the cache and result reuse stay keyed by the model's
fingerprint and the data (see ``embed.base`` and ``results.store.reusable``).
"""

from __future__ import annotations

import platform
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
