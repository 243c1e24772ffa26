"""The package's imports run one way: no circle, and no module imports a layer above its own.

The layers are the ones docs/ARCHITECTURE.md draws (bottom first). Every ``import`` of a bindkit
module counts, at module level or inside a function: a lazy import is still a dependency. A
module belongs to the longest prefix that names it; ``from bindkit import __version__`` is the
one import of the package face that any module may make.
"""

from __future__ import annotations

import ast
from collections import defaultdict
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
    # reading exports; result records; instruction files
    ("bindkit.hub", "bindkit.results.records", "bindkit.results.tables",
     "bindkit.results.per_query", "bindkit.results.instructions"),
    ("bindkit.mining",),
    ("bindkit.tasks",),
    # what runs tasks and models, and the views of their results; what builds the shipped
    # models (bindkit.builtin scores them through bindkit.evaluation)
    ("bindkit.evaluation", "bindkit.results", "bindkit.analysis", "bindkit.fetch",
     "bindkit.hub.export", "bindkit.train", "bindkit.integrations", "bindkit.builtin"),
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


def _imports(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module → the bindkit modules it imports (``from pkg import sub`` names ``pkg.sub``)."""
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "bindkit" and all(a.name == "__version__" for a in node.names):
                    continue
                named = [f"{node.module}.{alias.name}" for alias in node.names]
                targets = [t for t in named if t in modules]
                if len(targets) < len(named):
                    targets.append(node.module)
            else:
                continue
            edges[name].update(t for t in targets if t in modules and t != name)
    return edges


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


def test_no_module_imports_a_layer_above_its_own() -> None:
    upward = sorted(
        f"{module} (layer {layer_of(module)}) imports {target} (layer {layer_of(target)})"
        for module, targets in _imports(_modules()).items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )
    assert upward == []


def test_the_checks_see_a_circle_and_an_upward_import() -> None:
    edges = {"bindkit.a": {"bindkit.b"}, "bindkit.b": {"bindkit.c"}, "bindkit.c": {"bindkit.a"}}
    assert _cycles(edges) == [["bindkit.a", "bindkit.b", "bindkit.c"]]
    assert _cycles({"bindkit.a": {"bindkit.b"}, "bindkit.b": set()}) == []
    assert layer_of("bindkit.embed.cache") < layer_of("bindkit.train.trainer")
    assert layer_of("bindkit.hub.export") > layer_of("bindkit.hub.read")
    assert layer_of("bindkit.results.store") > layer_of("bindkit.tasks.base")
    assert layer_of("bindkit.train.trainer") < layer_of("bindkit.recipes.run")
    assert layer_of("bindkit.recipes.run") < layer_of("bindkit.sweep.study")
