"""The docs site's reference pages, generated from the code when the site builds.

mkdocs loads this file as a hook (``hooks:`` in mkdocs.yml): :func:`on_config` adds the
Reference section to the navigation and :func:`on_files` adds the pages, generated in memory,
never written into ``docs/``, so a page cannot go stale:

- ``reference/cli/<command>.md``: one page per ``bindkit`` command, from its argparse parser
  (usage, description, every option with its help and default, as ``--help`` shows them);
- ``reference/recipe-keys.md``: every recipe key, from :func:`bindkit.recipes.keys.recipe_keys`
  (the dataclasses that check the keys, ``TrainConfig`` for ``[train]``);
- ``reference/tasks/<task>.md``: every task, from its ``TaskMetadata``, its class docstring
  (the protocol) and its fetch plan (:mod:`bindkit.fetch.sources`);
- ``reference/api.md``: the Python API, rendered by mkdocstrings from the docstrings.

Print one page: ``python scripts/docs_reference.py reference/cli/eval.md``.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

#: the modules and objects the Python API page documents, in order
API = (
    "bindkit",
    "bindkit.evaluation.evaluate",
    "bindkit.embed.registry.load_embedder",
    "bindkit.saber.build.generate_saber",
    "bindkit.saber.validate.validate_saber",
    "bindkit.recipes.recipe.Recipe",
    "bindkit.recipes.runner.run_recipe",
    "bindkit.train.config.TrainConfig",
    "bindkit.tasks.base.TaskMetadata",
)


def _cell(text: object) -> str:
    """``text`` as one markdown table cell (pipes escaped, newlines joined)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _rst(text: str) -> str:
    """A docstring's reST roles (``:mod:`x```, ``:class:`~a.B```) as code spans."""
    return re.sub(r":[a-z]+:`~?([^`]+)`", r"``\1``", text)


# -- the CLI ---------------------------------------------------------------------------------------
def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> list[tuple[tuple[str, ...], argparse.ArgumentParser, str]]:
    """Every runnable command: (its words after ``bindkit``, its parser, its one-line help)."""
    groups = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not groups:
        return [(path, parser, "")]
    helps = {a.dest: a.help or "" for a in groups[0]._choices_actions}
    found = []
    for name, sub in groups[0].choices.items():
        for words, leaf, summary in commands(sub, (*path, name)):
            found.append((words, leaf, summary or helps.get(name, "")))
    return found


def command_page_name(words: tuple[str, ...]) -> str:
    return "reference/cli/" + "-".join(words) + ".md"


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """An option's help as ``--help`` prints it (``%(default)s`` and ``%%`` expanded)."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    return parser._get_formatter()._expand_help(action)


def command_page(words: tuple[str, ...], parser: argparse.ArgumentParser, summary: str) -> str:
    """One command's reference page: usage, description, arguments and options."""
    lines = [f"# bindkit {' '.join(words)}", ""]
    if summary:
        lines += [summary[0].upper() + summary[1:] + ".", ""]
    usage = parser.format_usage().removeprefix("usage: ").strip()
    lines += ["```text", usage, "```", ""]
    if parser.description and parser.description.rstrip(".") != summary.rstrip("."):
        lines += [" ".join(parser.description.split()), ""]
    positionals = [a for a in parser._actions if not a.option_strings]
    options = [
        a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]
    if positionals:
        lines += ["## Arguments", "", "| argument | help |", "|---|---|"]
        for action in positionals:
            name = action.metavar or action.dest
            lines.append(f"| `{_cell(name)}` | {_cell(_help(parser, action))} |")
        lines.append("")
    if options:
        lines += ["## Options", "", "| option | value | help |", "|---|---|---|"]
        for action in options:
            flags = ", ".join(f"`{o}`" for o in action.option_strings)
            if action.nargs == 0:
                value = ""
            elif action.choices:
                value = " \\| ".join(f"`{c}`" for c in action.choices)
            else:
                value = f"`{_cell(action.metavar or action.dest.upper())}`"
            required = " (required)" if action.required else ""
            lines.append(f"| {flags} | {value} | {_cell(_help(parser, action))}{required} |")
        lines.append("")
    return "\n".join(lines)


def cli_pages(parser: argparse.ArgumentParser) -> dict[str, str]:
    """``{page path: markdown}``: an index and one page per command of ``parser``."""
    found = commands(parser)
    index = [
        "# Command-line reference",
        "",
        "Generated from bindkit's argparse parsers when the site builds: each page shows what",
        "`bindkit COMMAND --help` shows. Every command takes `-q/--quiet`.",
        "",
        "| command | what it does |",
        "|---|---|",
    ]
    pages = {}
    for words, command, summary in found:
        name = command_page_name(words)
        pages[name] = command_page(words, command, summary)
        link = name.removeprefix("reference/cli/")
        index.append(f"| [`bindkit {' '.join(words)}`]({link}) | {_cell(summary)} |")
    return {"reference/cli/index.md": "\n".join(index) + "\n", **pages}


# -- recipe keys -----------------------------------------------------------------------------------
_TABLES = {
    "": "Top level",
    "data": "`[data]`: the training data",
    "train": "`[train]`: training options (TrainConfig)",
    "runs[]": "`[[runs]]`: one training run each",
    "soup": "`[soup]`: runs averaged in weight space",
    "lines": "`[lines]`: LiNeS",
    "select": "`[select]`: what ships and what is scored",
    "panel[]": "`[[panel]]`: the scores of the table",
}


def _value(value: Any) -> str:
    from bindkit.recipes.keys import REQUIRED

    if value == REQUIRED:
        return "required"
    if value is None:
        return "unset"
    if value == {} or value == ():
        return "empty"
    return f"`{_cell(value)}`"


def recipe_keys_page(keys: list[Any] | None = None) -> str:
    """Every recipe key by table: key, type, default, help."""
    from bindkit.recipes.keys import recipe_keys

    keys = recipe_keys() if keys is None else keys
    lines = [
        "# Recipe keys",
        "",
        "Every key a recipe TOML takes, generated from the dataclasses that check them when the",
        "site builds. `bindkit finetune --show RECIPE` prints the same keys resolved for one",
        "recipe, with where each value came from; see",
        "[Finetune with a recipe](../guides/finetune.md) for how a recipe runs.",
        "",
    ]
    for table, title in _TABLES.items():
        rows = [
            k
            for k in keys
            if (k.key.rsplit(".", 1)[0] if "." in k.key else "") == table
            or (table == "" and "." not in k.key)
        ]
        if not rows:
            continue
        lines += [f"## {title}", "", "| key | type | default | help |", "|---|---|---|---|"]
        for k in rows:
            lines.append(f"| `{k.key}` | {k.type} | {_value(k.default)} | {_cell(k.help)} |")
        lines.append("")
    return "\n".join(lines)


# -- tasks -----------------------------------------------------------------------------------------
def _ties(ties: Any) -> str:
    if ties is None:
        return "none (rankings and correlations: the metric's own, see Protocol)"
    if isinstance(ties, str):
        return f"`{ties}`"
    return ", ".join(f"`{subset}`: `{rule}`" for subset, rule in ties.items())


def task_page(cls: type[Any], plan: Any | None, manual: str | None) -> str:
    """One task's page: metadata, protocol (its class docstring) and fetch plan."""
    import inspect

    meta = cls.metadata
    lines = [f"# `{meta.name}`", "", _cell(meta.description), ""]
    facts = [
        ("main score", f"`{meta.main_score}`"),
        ("further scores", ", ".join(f"`{s}`" for s in meta.scores) or "none"),
        ("subsets", ", ".join(f"`{s}`" for s in meta.subsets)),
        ("modalities", ", ".join(meta.modalities)),
        ("pairings", ", ".join(f"`{p}`" for p in meta.pairings)),
        ("ties", _ties(meta.ties)),
        ("reference", meta.reference or "none"),
        ("licence", meta.license or "not stated"),
        ("published", meta.published or "not stated"),
        ("`--data`", meta.data_help or "a folder"),
        ("default folder", f"`$BINDKIT_DATA/{meta.data_dir or meta.name}`"),
    ]
    lines += ["| | |", "|---|---|", *(f"| {k} | {_cell(v)} |" for k, v in facts), ""]
    doc = inspect.getdoc(cls)
    if doc:
        lines += ["## Protocol", "", _rst(doc), ""]
    lines += ["## Fetch", ""]
    if plan is not None:
        lines.append(f"`bindkit fetch {meta.name}` downloads it (licence: {_cell(plan.license)}).")
        lines += ["", "| part | source | pinned |", "|---|---|---|"]
        for part in plan.parts:
            source = getattr(part, "url", None) or f"Hub dataset `{part.repo_id}`"
            pinned = getattr(part, "sha256", None) or getattr(part, "revision", None)
            what = "images" if part.images else "annotations"
            name = f"{what} ({part.part})" if part.part else what
            lines.append(f"| {name} | {_cell(source)} | {'yes' if pinned else 'no'} |")
        lines += ["", f"How each source was verified: {_cell(plan.verified)}"]
        if plan.note:
            lines += ["", _cell(plan.note)]
    elif manual is not None:
        lines.append(f"No download plan: {_cell(manual)}")
    else:
        lines.append("No download plan: the data is made by bindkit or given with `--data`.")
    return "\n".join(lines) + "\n"


def task_pages() -> dict[str, str]:
    """``{page path: markdown}``: an index and one page per task."""
    from bindkit.fetch.sources import MANUAL, SOURCES
    from bindkit.tasks.base import task_classes

    tasks = task_classes()
    index = [
        "# Tasks",
        "",
        "Every benchmark `bindkit eval --task NAME` runs, generated from its `TaskMetadata` when",
        "the site builds. How to run them: [External benchmarks](../../guides/benchmarks.md).",
        "",
        "| task | what it measures | main score | fetch |",
        "|---|---|---|---|",
    ]
    pages = {}
    for name in sorted(tasks):
        cls = tasks[name]
        pages[f"reference/tasks/{name}.md"] = task_page(cls, SOURCES.get(name), MANUAL.get(name))
        fetch = "yes" if name in SOURCES else "no"
        description = _cell(cls.metadata.description)
        index.append(
            f"| [`{name}`]({name}.md) | {description} | `{cls.metadata.main_score}` | {fetch} |"
        )
    return {"reference/tasks/index.md": "\n".join(index) + "\n", **pages}


# -- the Python API --------------------------------------------------------------------------------
def api_page() -> str:
    lines = [
        "# Python API",
        "",
        "Rendered from the docstrings by mkdocstrings when the site builds. Everything the",
        "command line does is a library call first; these are the entry points.",
        "",
    ]
    for target in API:
        lines += [f"::: {target}", ""]
    return "\n".join(lines)


def reference_pages() -> dict[str, str]:
    """Every generated page: ``{path under docs/: markdown}``."""
    from bindkit.cli import build_parser

    return {
        "reference/index.md": "\n".join(
            [
                "# Reference",
                "",
                "Generated from the code each time the site builds, so it cannot drift:",
                "",
                "- [Command line](cli/index.md): every `bindkit` command and option.",
                "- [Recipe keys](recipe-keys.md): every key of a recipe TOML.",
                "- [Tasks](tasks/index.md): every benchmark, its protocol, scores and licence.",
                "- [Python API](api.md): the library's entry points.",
                "",
            ]
        ),
        **cli_pages(build_parser()),
        "reference/recipe-keys.md": recipe_keys_page(),
        **task_pages(),
        "reference/api.md": api_page(),
    }


# -- the mkdocs hook -------------------------------------------------------------------------------
_PAGES: dict[str, str] = {}


def _nav_tree(pages: dict[str, str]) -> list[Any]:
    clis = sorted(p for p in pages if p.startswith("reference/cli/") and not p.endswith("index.md"))
    tasks = sorted(p for p in pages if p.startswith("reference/tasks/") and "index" not in p)
    return [
        "reference/index.md",
        {"Command line": ["reference/cli/index.md", *clis]},
        {"Recipe keys": "reference/recipe-keys.md"},
        {"Tasks": ["reference/tasks/index.md", *tasks]},
        {"Python API": "reference/api.md"},
    ]


def on_config(config: Any) -> Any:
    """Generate the pages once per build and add the Reference section to the navigation."""
    _PAGES.clear()
    _PAGES.update(reference_pages())
    nav = [item for item in config["nav"] if not (isinstance(item, dict) and "Reference" in item)]
    at = next(
        (i for i, item in enumerate(nav) if isinstance(item, dict) and "Experiments" in item),
        len(nav),
    )
    nav.insert(at, {"Reference": _nav_tree(_PAGES)})
    config["nav"] = nav
    return config


def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site (in memory: nothing is written into docs/)."""
    from mkdocs.structure.files import File

    for path, text in _PAGES.items():
        files.append(File.generated(config, path, content=text))
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page", nargs="?", help="a page path (default: list the pages)")
    args = parser.parse_args(argv)
    pages = reference_pages()
    if args.page is None:
        print("\n".join(pages))
        return 0
    if args.page not in pages:
        parser.error(f"{args.page}: not a generated page; run without arguments for the list")
    print(pages[args.page], end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
