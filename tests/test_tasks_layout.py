"""The shape of ``bindkit.tasks``, read from its source with ``ast``: task families share code
through public names only, and tasks never import the fetch layer above them (its download
plans are mirrored by ``TaskMetadata.fetchable``, checked here against the plans)."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

import bindkit.tasks
from bindkit.errors import BindkitError
from bindkit.tasks.base import resolve_data, task_classes, task_modules

PACKAGE = "bindkit.tasks"
ROOT = Path(bindkit.tasks.__file__).parent


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (``bindkit.tasks.pairs._base``)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join((PACKAGE, *parts))] = path
    return out


def _absolute(module: str, node: ast.ImportFrom) -> str:
    """The module an ``import from`` names, relative imports resolved."""
    if not node.level:
        return node.module or ""
    is_package = _modules()[module].name == "__init__.py"
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def private_imports(module: str, source: str) -> list[str]:
    """``from M import _name`` (``_name`` not a module) and ``alias._name`` on an imported task
    module, where M is another module of the package: another task's private names."""
    found = []
    tree = ast.parse(source)
    aliases: dict[str, str] = {}  # local name -> imported bindkit.tasks module
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            origin = _absolute(module, node)
            if not origin.startswith(PACKAGE) or origin == module:
                continue
            for alias in node.names:
                if _is_module(f"{origin}.{alias.name}"):
                    aliases[alias.asname or alias.name] = f"{origin}.{alias.name}"
                elif alias.name.startswith("_"):
                    found.append(f"{module}:{node.lineno} imports {alias.name} from {origin}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE) and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and not _is_module(f"{aliases[node.value.id]}.{node.attr}")
        ):
            found.append(f"{module}:{node.lineno} uses {aliases[node.value.id]}.{node.attr}")
    return found


def fetch_imports(module: str, source: str) -> list[str]:
    """Every import of ``bindkit.fetch`` (at any depth, in functions too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom):
            origin = _absolute(module, node)
            names = [origin] + [f"{origin}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        if any(n == "bindkit.fetch" or n.startswith("bindkit.fetch.") for n in names):
            found.append(f"{module}:{node.lineno} imports {names[0]}")
    return found


def test_no_task_module_imports_another_modules_private_names() -> None:
    found = [
        line
        for module, path in _modules().items()
        for line in private_imports(module, path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_tasks_import_nothing_from_fetch() -> None:
    found = [
        line
        for module, path in _modules().items()
        for line in fetch_imports(module, path.read_text(encoding="utf-8"))
    ]
    assert found == []


def test_the_checks_see_what_they_guard() -> None:
    """The two checks fire on the imports the families replaced."""
    module = "bindkit.tasks.instance.sculptures6k"
    assert private_imports(module, "from bindkit.tasks.instance._oxford import _where\n")
    assert private_imports(module, "from ._oxford import _where\n")
    assert private_imports(module, "from bindkit.tasks import _images\n_images._private(1)\n")
    assert not private_imports(module, "from bindkit.tasks import _images\n_images.present()\n")
    assert not private_imports(module, "from bindkit.tasks.instance import _boxes\n")
    assert fetch_imports(module, "def f():\n    from bindkit.fetch.sources import SOURCES\n")
    assert fetch_imports(module, "import bindkit.fetch.fetcher\n")
    assert fetch_imports(module, "from bindkit import fetch\n")


def test_fetchable_tasks_are_exactly_those_with_a_download_plan() -> None:
    from bindkit.fetch.sources import SOURCES

    fetchable = sorted(name for name, cls in task_classes().items() if cls.metadata.fetchable)
    assert fetchable == sorted(SOURCES)


def test_every_task_with_published_files_has_a_plan_or_says_why_not() -> None:
    from bindkit.fetch.sources import MANUAL, SOURCES

    published = {
        name
        for name, cls in task_classes().items()
        if cls.metadata.data_dir is not None or cls.metadata.fetchable
    }
    assert published == set(SOURCES) | set(MANUAL)
    assert not set(SOURCES) & set(MANUAL)


def test_a_missing_folder_names_fetch_only_for_a_fetchable_task(tmp_path: Path) -> None:
    tasks = task_classes()
    with pytest.raises(BindkitError) as fetchable:
        resolve_data(tasks["sts"].metadata, tmp_path / "absent")
    assert str(fetchable.value).endswith(
        "; `bindkit fetch sts` downloads it (or add --fetch to bindkit eval)"
    )
    with pytest.raises(BindkitError) as other:
        resolve_data(tasks["sculptures6k"].metadata, tmp_path / "absent")
    assert "bindkit fetch" not in str(other.value)


def test_the_registry_finds_the_tasks_of_every_family_folder() -> None:
    families = {name.split(".")[2] for name in task_modules() if name.count(".") == 3}
    assert families == {"instance", "mmeb", "pairs", "text"}
    modules = {cls.__module__ for cls in task_classes().values()}
    assert "bindkit.tasks.saber" in modules
    assert {"bindkit.tasks.pairs.winoground", "bindkit.tasks.instance.ilias"} <= modules
    assert not any(part.startswith("_") for m in task_modules() for part in m.split("."))


def test_package_data_resolves_from_the_tasks_package() -> None:
    from importlib import resources

    labels = resources.files(PACKAGE).joinpath("data/mmeb_v2_video_labels.json")
    assert labels.is_file()
