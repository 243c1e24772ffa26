"""SABER images: render every item's scene with a backend, resumably, and review the results.

Backends: ``procedural`` (numpy scenes of the shapes vocabulary; no model), ``diffusers`` (a local
text-to-image pipeline) and ``openai`` (any OpenAI-compatible image endpoint). See
:func:`bindkit.saber.render.renderer.render_saber`.
"""

from __future__ import annotations

from typing import Any

from bindkit.errors import BindkitError

BACKENDS = ("procedural", "diffusers", "openai")


def make_backend(name: str, **options: Any) -> Any:
    """Build a render backend by name; ``options`` are its dataclass fields."""
    if name == "procedural":
        from bindkit.saber.render.procedural import ProceduralBackend

        return ProceduralBackend(**options)
    if name == "diffusers":
        from bindkit.saber.render.diffusers import DiffusersBackend

        return DiffusersBackend(**options)
    if name == "openai":
        from bindkit.saber.render.openai import OpenAIImagesBackend

        return OpenAIImagesBackend(**options)
    raise BindkitError(f"--backend {name!r}: use one of {', '.join(BACKENDS)}")
