"""The package's imports run one way: no circle, and no module imports a layer above its own.

The layers are the ones docs/ARCHITECTURE.md draws (bottom first), and each is made of whole
packages and top-level modules, never a sub-module of a package: a package sits on one floor.
Every ``import`` of a bindkit module counts, at module level or inside a function, absolute or
relative (``from ..tasks import x`` is resolved against the importing module's package): a lazy
import is still a dependency. A module belongs to the longest prefix that names it; ``from
bindkit import __version__`` is the one import of the package face that any module may make.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from pathlib import Path

import bindkit

LAYERS: list[tuple[str, ...]] = [
    # foundations: errors, files, locks, progress, pure metrics
    ("bindkit.errors", "bindkit._checks", "bindkit._environment", "bindkit._io", "bindkit._lock",
     "bindkit._outputs", "bindkit._progress", "bindkit._staging", "bindkit.metrics",
     "bindkit.support"),
    # formats and models: SABER files, adapters, embedders
    ("bindkit.saber", "bindkit.adapters", "bindkit.embed", "bindkit.identity"),
    # synthetic training data (reads SABER's vocabulary and language)
    ("bindkit.synth",),
    # Hugging Face exports read back; result records, tables, per-query and instruction files
    ("bindkit.hfdata", "bindkit.records"),
    ("bindkit.mining",),
    ("bindkit.tasks",),
    # what runs tasks and models, and the views of their results; what builds the shipped
    # models (bindkit.builtin scores them through bindkit.evaluation)
    ("bindkit.evaluation", "bindkit.results", "bindkit.analysis", "bindkit.fetch",
     "bindkit.export", "bindkit.train", "bindkit.mteb_bridge",
     "bindkit.builtin"),
    # recipes: data → runs → soup → LiNeS → panel, over synth, train, adapters and evaluation
    ("bindkit.recipes",),
    ("bindkit.sweep", "bindkit.demo"),
    ("bindkit.cli", "bindkit.__main__", "bindkit"),
]  # fmt: skip

ROOT = Path(bindkit.__file__).resolve().parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        parts = ["bindkit", *path.relative_to(ROOT).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(
    module: str, source: str, modules: Collection[str], *, is_package: bool = False
) -> set[str]:
    """The bindkit modules that ``source``, the text of ``module``, imports (``from pkg import
    sub`` names ``pkg.sub``); a relative import is resolved against ``module``'s package (the
    module itself when ``is_package``: an ``__init__.py``)."""
    package = module.split(".") if is_package else module.split(".")[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level > 0:
                assert node.level <= len(package), f"{module}: {'.' * node.level} leaves bindkit"
                anchor = ".".join(package[: len(package) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            if base == "bindkit" and all(a.name == "__version__" for a in node.names):
                continue
            named = [f"{base}.{alias.name}" for alias in node.names]
            targets = [t for t in named if t in modules]
            if len(targets) < len(named):
                targets.append(base)
        else:
            continue
        found.update(t for t in targets if t in modules and t != module)
    return found


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the bindkit modules it imports."""
    return {
        name: imports_of(name, path.read_text("utf-8"), modules, is_package=path.stem == "__init__")
        for name, path in modules.items()
    }


def layer_of(module: str) -> int:
    best = max(
        ((i, len(prefix)) for i, names in enumerate(LAYERS) for prefix in names
         if module == prefix or module.startswith(prefix + ".")),
        key=lambda hit: hit[1],
        default=None,
    )  # fmt: skip
    assert best is not None, f"{module}: in no layer; add it to LAYERS and docs/ARCHITECTURE.md"
    return best[0]


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_circle() -> None:
    assert _cycles(_imports(_modules())) == []


def _upward(edges: dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in edges.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def test_no_module_imports_a_layer_above_its_own() -> None:
    assert _upward(_imports(_modules())) == []


def test_every_layer_entry_is_a_whole_package_or_a_top_level_module() -> None:
    modules = _modules()
    entries = [name for names in LAYERS for name in names]
    assert len(entries) == len(set(entries))
    assert [n for n in entries if n not in modules] == []
    assert [n for n in entries if n != "bindkit" and n.count(".") != 1] == []
    top = {".".join(name.split(".")[:2]) for name in modules}
    assert sorted(top - set(entries)) == []  # every package and top-level module has a floor


def test_relative_imports_are_resolved_against_the_importing_package() -> None:
    modules = {
        "bindkit.metrics", "bindkit.metrics.foo", "bindkit.metrics.bar", "bindkit.tasks",
        "bindkit.tasks._files", "bindkit.tasks.base",
    }  # fmt: skip
    up = imports_of("bindkit.metrics.foo", "from ..tasks import _files  # noqa\n", modules)
    assert up == {"bindkit.tasks._files"}
    assert _upward({"bindkit.metrics.foo": up}) == [
        f"bindkit.metrics.foo (layer {layer_of('bindkit.metrics')}) imports bindkit.tasks._files"
        f" (layer {layer_of('bindkit.tasks')})"
    ]
    assert imports_of("bindkit.metrics.foo", "from ..tasks.base import Task", modules) == {
        "bindkit.tasks.base"
    }
    siblings = "from . import bar\nfrom .bar import x\nfrom .. import __version__"
    assert imports_of("bindkit.metrics.foo", siblings, modules) == {"bindkit.metrics.bar"}
    package = imports_of("bindkit.metrics", "from .bar import x", modules, is_package=True)
    assert package == {"bindkit.metrics.bar"}


def test_the_checks_see_a_circle_and_an_upward_import() -> None:
    edges = {"bindkit.a": {"bindkit.b"}, "bindkit.b": {"bindkit.c"}, "bindkit.c": {"bindkit.a"}}
    assert _cycles(edges) == [["bindkit.a", "bindkit.b", "bindkit.c"]]
    assert _cycles({"bindkit.a": {"bindkit.b"}, "bindkit.b": set()}) == []
    assert layer_of("bindkit.embed.cache") < layer_of("bindkit.train.trainer")
    assert layer_of("bindkit.export.write") > layer_of("bindkit.hfdata.read")
    assert layer_of("bindkit.records.fields") < layer_of("bindkit.tasks.base")
    assert layer_of("bindkit.results.store") > layer_of("bindkit.tasks.base")
    assert layer_of("bindkit.train.trainer") < layer_of("bindkit.recipes.runner")
    assert layer_of("bindkit.recipes.runner") < layer_of("bindkit.sweep.study")
