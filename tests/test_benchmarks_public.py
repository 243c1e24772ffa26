"""``benchmarks/`` and ``scripts/`` stand on the library's public face, and every driver answers
``--help``.

A driver imports no private bindkit name (``_train``) and no private bindkit module
(``bindkit._io``, ``bindkit.tasks.pairs._aro_order``): what a benchmark needs is public in the
library (``bindkit.support`` for the file and option helpers), so the library can reorganise
its private parts without breaking the drivers. Dunder names (``__version__``) are public.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FILES = sorted(
    [*ROOT.glob("benchmarks/**/*.py"), *ROOT.glob("scripts/*.py")],
    key=lambda p: p.relative_to(ROOT).as_posix(),
)
DRIVERS = [p for p in FILES if 'if __name__ == "__main__":' in p.read_text("utf-8")]


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_imports(source: str) -> list[str]:
    """Every private bindkit module or name ``source`` imports (at any depth: lazy imports
    count), as ``module`` or ``module.name``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
            found += [m for m in modules if m.split(".")[0] == "bindkit" and
                      any(_private(p) for p in m.split("."))]  # fmt: skip
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.split(".")[0] != "bindkit":
                continue
            if any(_private(p) for p in node.module.split(".")):
                found.append(node.module)
            found += [f"{node.module}.{a.name}" for a in node.names if _private(a.name)]
    return found


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("path", FILES, ids=_name)
def test_imports_only_public_bindkit_names(path: Path) -> None:
    found = private_imports(path.read_text("utf-8"))
    assert found == [], f"{_name(path)}: private bindkit imports {found}"


def test_the_check_sees_private_modules_and_names() -> None:
    assert private_imports("from bindkit._io import atomic_write_text") == ["bindkit._io"]
    assert private_imports("def f():\n    from bindkit.demo.tiny_vlm import _train, LR") == [
        "bindkit.demo.tiny_vlm._train"
    ]
    assert private_imports("import bindkit.tasks.pairs._aro_order as order") == [
        "bindkit.tasks.pairs._aro_order"
    ]
    assert private_imports("from bindkit.tasks.pairs import _aro_order") == [
        "bindkit.tasks.pairs._aro_order"
    ]
    assert private_imports("from bindkit import __version__\nfrom _alternate import x") == []
    assert private_imports("from bindkit.support import check_range") == []


def test_every_driver_is_found() -> None:
    names = {_name(p) for p in DRIVERS}
    assert {"scripts/train_tiny_clip.py", "benchmarks/vlm_analyses.py"} <= names
    assert "benchmarks/_vlm_common.py" not in names  # a helper, no command line


@pytest.mark.parametrize("path", DRIVERS, ids=_name)
def test_driver_answers_help(path: Path) -> None:
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    done = subprocess.run(
        [sys.executable, str(path), "--help"],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("usage: "), done.stdout[:500]
