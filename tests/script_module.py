"""Load a script of the repository (``benchmarks/…``, ``scripts/…``) as a module for tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def load_script(relative: str, name: str | None = None) -> ModuleType:
    """Execute ``ROOT/relative`` as module ``name`` (default: the file's stem), registered in
    ``sys.modules`` first so that its dataclasses can look their module up; the script's folder
    is on ``sys.path`` (as when it runs), so its ``_helper`` modules import."""
    path = ROOT / relative
    if str(path.parent) not in sys.path:  # as ``python path`` does: the script's own helpers
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module
