"""The export format's names, shared by ``export.write`` (which writes it) and ``hfdata.read``."""

from __future__ import annotations

from bindkit.errors import BindkitError

EXPORT_FILE = "bindkit.json"
SIDECARS = "bindkit"
FORMAT = "bindkit-hf-export"
FORMAT_VERSION = 2  # 2: synth trainer configs hold query/positive/negative, *_full the rest
READABLE = (1, 2)
KINDS = ("saber", "synth", "clusters")


def require_hf() -> None:
    """Refuse, in one line, when the Hugging Face extra is not installed."""
    try:
        import datasets  # noqa: F401
        import huggingface_hub  # noqa: F401
    except ImportError:
        raise BindkitError(
            "Hugging Face export and import need `datasets`: pip install 'bindkit[hf]'"
        ) from None
