"""bindkit: measure and improve attribute-object binding in embedding models.

The public API is imported lazily so that ``import bindkit`` and ``bindkit --help`` stay fast.

Example:
    >>> import bindkit
    >>> manifest = bindkit.generate_saber("saber", seed=0)  # doctest: +SKIP
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("bindkit")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+unknown"

_LAZY = {
    "BindkitError": "bindkit.errors",
    "generate_saber": "bindkit.saber.build",
    "validate_saber": "bindkit.saber.validate",
    "read_saber": "bindkit.saber.io",
    "load_vocabulary": "bindkit.saber.vocab",
    "load_embedder": "bindkit.embed.registry",
    "list_backends": "bindkit.embed.registry",
    "EmbeddingCache": "bindkit.embed.cache",
    "ImageRef": "bindkit.embed.images",
    "evaluate": "bindkit.evaluation",
    "write_report": "bindkit.results.report",
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bindkit' has no attribute {name!r}")
