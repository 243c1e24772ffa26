"""Synthetic text-only binding data: seven construction types, a strict validator, diversity
controls, an offline template backend and an OpenAI-compatible LLM backend, splits and triplets.

>>> import bindkit.synth
>>> result = bindkit.synth.run("synth", 1000, seed=0, progress=False)  # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

__all__ = ["run", "verify_splits", "write_splits"]


def __getattr__(name: str) -> Any:
    # lazily, so that importing one synth module does not load the generation loop
    if name == "run":
        from bindkit.synth.command import run

        return run
    if name in ("write_splits", "verify_splits"):
        from bindkit.synth import splits

        return getattr(splits, name)
    raise AttributeError(name)
