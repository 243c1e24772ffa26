"""The docs site's generated reference (scripts/docs_reference.py): one page per command from the
argparse parsers, every recipe key, every task; a changed help or metadata changes its page."""

from __future__ import annotations

import argparse
import dataclasses
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bindkit.cli import build_parser
from script_module import ROOT, load_script

reference = load_script("scripts/docs_reference.py")


def _option(parser: argparse.ArgumentParser, words: tuple[str, ...], flag: str) -> argparse.Action:
    (leaf,) = [p for w, p, _ in reference.commands(parser) if w == words]
    (action,) = [a for a in leaf._actions if flag in a.option_strings]
    return action


def test_every_command_has_a_page_with_every_option_and_its_default() -> None:
    parser = build_parser()
    pages = reference.cli_pages(parser)
    leaves = reference.commands(parser)
    assert len(leaves) >= 20
    for words, command, _ in leaves:
        page = pages[reference.command_page_name(words)]
        assert page.startswith(f"# bindkit {' '.join(words)}\n")
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert f"`{flag}`" in page, (words, flag)
        assert f"bindkit {' '.join(words)}" in pages["reference/cli/index.md"]
    generate = pages["reference/cli/saber-generate.md"]
    assert "| `--per-n` | `PER_N` | MCQs per object count N" in generate
    assert "(default: 200) |" in generate
    assert "`--out` | `OUT` | output directory (required) |" in generate


def test_a_changed_option_help_changes_its_page() -> None:
    parser = build_parser()
    before = reference.cli_pages(parser)["reference/cli/saber-generate.md"]
    _option(parser, ("saber", "generate"), "--per-n").help = "a changed help (default: 200)"
    after = reference.cli_pages(parser)["reference/cli/saber-generate.md"]
    assert after != before
    assert "| `--per-n` | `PER_N` | a changed help (default: 200) |" in after


def test_the_recipe_key_page_lists_every_key_and_follows_a_changed_help(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bindkit.recipes.keys import recipe_keys
    from bindkit.train.config import TrainConfig

    page = reference.recipe_keys_page()
    for key in recipe_keys():
        assert f"| `{key.key}` |" in page, key.key
    assert "| `data.examples` | int | `24000` | template examples" in page
    assert "| `model` | str | required |" in page
    margin = TrainConfig.__dataclass_fields__["margin"]
    changed = dataclasses.field(default=margin.default, metadata={"help": "a changed margin help"})
    changed.name, changed.type, changed._field_type = margin.name, margin.type, margin._field_type  # type: ignore[attr-defined]
    monkeypatch.setitem(TrainConfig.__dataclass_fields__, "margin", changed)
    after = reference.recipe_keys_page()
    assert after != page
    assert "| `train.margin` | float | `0.05` | a changed margin help |" in after


def test_every_task_has_a_page_from_its_metadata(monkeypatch: pytest.MonkeyPatch) -> None:
    from bindkit.tasks.base import task_classes

    pages = reference.task_pages()
    for name, cls in task_classes().items():
        page = pages[f"reference/tasks/{name}.md"]
        assert page.startswith(f"# `{name}`\n")
        assert f"| main score | `{cls.metadata.main_score}` |" in page
        assert f"[`{name}`]({name}.md)" in pages["reference/tasks/index.md"]
    sugarcrepe = pages["reference/tasks/sugarcrepe.md"]
    assert "`bindkit fetch sugarcrepe` downloads it" in sugarcrepe and "## Protocol" in sugarcrepe
    cls = task_classes()["sugarcrepe"]
    new = dataclasses.replace(cls.metadata, description="a changed description")
    monkeypatch.setattr(cls, "metadata", new)
    assert "a changed description" in reference.task_pages()["reference/tasks/sugarcrepe.md"]


def test_the_hook_adds_the_reference_to_the_nav_before_the_experiments() -> None:
    config = {"nav": [{"Home": "index.md"}, {"Experiments": "experiments/index.md"}]}
    nav = reference.on_config(config)["nav"]
    assert list(nav[1]) == ["Reference"] and list(nav[2]) == ["Experiments"]
    pages = [p for p in str(nav[1]).split("'") if p.endswith(".md")]
    assert set(pages) == set(reference._PAGES)  # every generated page is in the nav
    assert reference.on_config(config)["nav"] == nav  # twice: one Reference section


def test_the_printer_lists_and_prints_pages(capsys: pytest.CaptureFixture[str]) -> None:
    assert reference.main([]) == 0
    assert "reference/cli/eval.md" in capsys.readouterr().out.splitlines()
    assert reference.main(["reference/recipe-keys.md"]) == 0
    assert capsys.readouterr().out.startswith("# Recipe keys")
    with pytest.raises(SystemExit):
        reference.main(["reference/nope.md"])


@pytest.mark.slow  # ~40 s: the whole site, mkdocstrings included
def test_the_site_builds_strictly(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    mkdocs = shutil.which("mkdocs")
    assert mkdocs is not None
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "s")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "s" / "reference" / "cli" / "saber-generate" / "index.html").is_file()
    assert not list(ROOT.glob("docs/reference"))  # generated in memory, never written
