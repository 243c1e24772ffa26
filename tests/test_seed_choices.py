"""Every claim about the seeds in a help text or docstring points at docs/seed-choices.md.

A help text that names a seed ("the seed's rules", "[seed 002 §IV-A1]") must have a row in the
page's "Help texts that name a seed" table, and an option whose default is labelled with a seed
section or as bindkit's choice must have its row in the recipe table, citing the same section or
giving bindkit's reason. A docstring that calls something the seed's default or recipe must link
the page, at a heading that exists.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "seed-choices.md"
NAMES_A_SEED = re.compile(r"(?i)\bthe seed\b|\bseed's\b|\bseed 00\d\b|\bthe paper's\b")
LABEL = re.compile(r"\[(seed 00\d [^\]]*|bindkit's choice: [^\]]*)\]")
# a docstring that calls a value or a recipe the seed's
CLAIM = re.compile(r"(?i)\bseed(?: 00\d)?'s (?:defaults?|recipe|values?)\b|\bas in the seed\b")


def _slug(heading: str) -> str:
    """The docs site's anchor of a markdown heading (Python-Markdown's toc slugify, which the
    strict mkdocs build checks links against: runs of spaces and hyphens become one hyphen)."""
    from markdown.extensions.toc import slugify

    return str(slugify(heading.strip(), "-"))


def _page() -> str:
    return PAGE.read_text(encoding="utf-8")


def _anchors(text: str) -> set[str]:
    return {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def _section(text: str, heading: str) -> str:
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else len(text)]


def _rows(section: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.strip().strip("|").split("|")]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("|---")
    ]


def _help_texts() -> Iterator[tuple[str, str, str]]:
    """(command, option or "", text) of every description and option help of the CLI."""
    from bindkit.cli import build_parser

    def walk(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, str, str]]:
        yield path, "", parser.description or ""
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{path} {name}".strip())
            elif action.help and action.help != argparse.SUPPRESS:
                option = max(action.option_strings, key=len, default=action.dest)
                yield path, option, " ".join(str(action.help).split())

    yield from walk(build_parser(), "bindkit")


def test_every_help_text_that_names_a_seed_has_an_entry() -> None:
    text = _page()
    rows = _rows(_section(text, "Help texts that name a seed"))
    keys = {re.sub(r"\s*\(.*", "", row[0]).strip("`") for row in rows[1:]}
    anchors = _anchors(text)
    for row in rows[1:]:  # each entry's link lands on a heading of the page
        for anchor in re.findall(r"\]\(#([^)]+)\)", row[1]):
            assert anchor in anchors, anchor
    missing = []
    for command, option, help_text in _help_texts():
        if not NAMES_A_SEED.search(help_text):
            continue
        key = f"{command} {option}".strip()
        labelled = LABEL.search(help_text) and f"{command} --OPTION" in keys
        if key not in keys and not labelled:
            missing.append(key)
    assert not missing, f"help texts naming a seed without a row in {PAGE.name}: {missing}"


def test_each_labelled_default_has_its_row_with_the_same_source() -> None:
    recipe = _rows(_section(_page(), "Seed 002's training recipe"))
    by_option: dict[str, list[str]] = {}
    for row in recipe[1:]:
        for option in re.findall(r"--[a-z-]+", row[0]):
            by_option[option] = row
    labelled = 0
    for command, option, help_text in _help_texts():
        found = LABEL.search(help_text)
        if found is None:
            continue
        labelled += 1
        assert command == "bindkit train clusters", (command, option)
        assert option in by_option, f"{option}: no row in the seed 002 recipe table"
        says, why = by_option[option][1], by_option[option][3]
        label = found.group(1)
        if label.startswith("seed 002 "):
            place = re.search(r"§[IVX]+-[A-Z]\d|§[IVX]+-[A-Z]|Table [IVX]+", label)
            assert place is not None and place.group(0) in says, (option, label, says)
            assert why.startswith("stated"), (option, why)
        else:
            assert not why.startswith("stated") and len(why) > 10, (option, why)
    assert labelled >= 15  # every default bindkit sets for the recipe is labelled


def _docstrings() -> Iterator[tuple[str, str]]:
    for path in sorted((ROOT / "src" / "bindkit").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node)
                if doc:
                    name = getattr(node, "name", path.stem)
                    yield f"{path.relative_to(ROOT)}:{name}", doc


def test_every_docstring_that_calls_something_the_seeds_links_its_entry() -> None:
    anchors = _anchors(_page())
    claims = 0
    for where, doc in _docstrings():
        if not CLAIM.search(doc):
            continue
        claims += 1
        links = re.findall(r"docs/seed-choices\.md#([\w-]+)", " ".join(doc.split()))
        assert links, f"{where}: claims the seed's default or recipe without a link to the page"
        for anchor in links:
            assert anchor in anchors, f"{where}: #{anchor} is not a heading of {PAGE.name}"
    assert claims >= 3


@pytest.mark.parametrize(
    ("heading", "anchor"),
    [
        (
            "Seed 002's training recipe (`bindkit train clusters`)",
            "seed-002s-training-recipe-bindkit-train-clusters",
        ),
        ("Synthetic training data (`bindkit synth`)", "synthetic-training-data-bindkit-synth"),
    ],
)
def test_slug_is_githubs(heading: str, anchor: str) -> None:
    assert _slug(heading) == anchor
