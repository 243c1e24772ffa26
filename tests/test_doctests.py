"""The examples in bindkit's docstrings run (``>>>`` lines), module by module."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest

import bindkit


def modules_with_examples() -> list[str]:
    names = []
    for info in pkgutil.walk_packages(bindkit.__path__, "bindkit."):
        spec = importlib.util.find_spec(info.name)
        origin = Path(spec.origin) if spec and spec.origin else None
        if origin and origin.suffix == ".py" and ">>>" in origin.read_text(encoding="utf-8"):
            names.append(info.name)
    return names


@pytest.mark.parametrize("name", modules_with_examples())
def test_docstring_examples_run(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
