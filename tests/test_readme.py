"""The README's and the docs' snippets are tests: every fenced code block is extracted and checked.

The pages checked (:func:`doc_pages`): README.md and every markdown page under ``docs/``
except the lab notebook (``docs/experiments/``: dated records whose commands are kept as they
were run) and the pages the site generates from the code or from result files (``docs/reference/``,
``docs/results/``), and ``docs/ARCHITECTURE.md`` (data-flow diagrams). A new guide is checked as
soon as it is written.

How each block is checked:

- **Python blocks** run (``exec``) in a fresh temporary folder, offline. The folder holds what the
  block's marker names in ``setup=`` (see ``SETUPS``); the page says what such a file is.
- **Shell blocks** (``bash``, ``text`` or unlabelled ones holding ``bindkit`` lines): every
  ``bindkit ...`` line is parsed with bindkit's own argparse parser, so a renamed or removed
  option, a missing required argument or a wrong sub-command fails. Synopsis lines are normalised
  first: continuation lines (indented) join the line before, ``# comments`` go, optional
  ``[...]`` brackets are dropped (their contents kept), a ``...`` repetition mark goes, and of
  ``A|B`` alternatives the first is taken, and an upper-case placeholder of a numeric option
  (``--batch-size N``) becomes ``1``.
- A shell block whose marker says ``run`` also runs each of its ``bindkit`` and ``python -c``
  lines for real, in order, in one temporary folder (after its ``setup=``), and every line must
  exit 0. In the default suite the lines are shrunk so a block takes seconds (``shrink``:
  ``saber generate`` gets ``--per-n 2``, a SABER ``eval`` without ``--data`` gets a small set,
  ``train`` gets ``--max-steps 2`` and, without a LiNeS option, ``--lines-alpha 1``); under
  ``-m slow`` every run block runs exactly as written.
  ``pip``, ``export`` and ``python -m pytest`` lines are not run.

A marker is an HTML comment (invisible on GitHub) on the line right before the opening fence::

    <!-- readme-test: run setup=synth-data; parse only: bindkit demo finetune -->

``run`` and ``setup=NAME,NAME`` as above; ``slow`` keeps a run block out of the default suite
(its lines are still parsed there); ``parse only: PREFIX`` (repeatable, ``;``-separated)
keeps lines starting with PREFIX to the parse check in a ``run`` block (they need downloads, a
GPU or a long run); ``skip: REASON`` leaves a Python block unrun (it cannot run offline; the
reason says why). A block with no marker is parsed only (shell) or run (Python).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
ROOT = README.parent
#: folders under docs/ whose pages are not checked here (see the module docstring), and
#: ARCHITECTURE.md, whose blocks are data-flow diagrams, not commands
UNCHECKED = ("experiments", "reference", "results", "ARCHITECTURE.md")


def doc_pages() -> list[Path]:
    """README.md, then every checked page under docs/, sorted."""
    pages = [
        p
        for p in sorted((ROOT / "docs").rglob("*.md"))
        if p.relative_to(ROOT / "docs").parts[0] not in UNCHECKED
    ]
    return [README, *pages]


_FENCE = re.compile(r"^```(\S*)\s*$")
_MARKER = re.compile(r"^<!--\s*readme-test:\s*(.*?)\s*-->\s*$")


@dataclass
class Block:
    line: int  # 1-based line of the opening fence
    file: str  # the page, relative to the repository root
    lang: str
    text: str
    run: bool = False
    slow: bool = False  # a run block too long for the default suite: run under -m slow only
    skip: str = ""
    setup: tuple[str, ...] = ()
    parse_only: tuple[str, ...] = ()
    lines: list[tuple[int, str]] = field(default_factory=list)  # (page line, command)

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def _marker(text: str) -> dict[str, object]:
    """``run setup=a,b; parse only: X; skip: why`` → its parts."""
    out: dict[str, object] = {
        "run": False, "slow": False, "skip": "", "setup": (), "parse_only": ()
    }  # fmt: skip
    parse_only: list[str] = []
    for part in (p.strip() for p in text.split(";")):
        if part.startswith("parse only:"):
            parse_only.append(part.removeprefix("parse only:").strip())
        elif part.startswith("skip:"):
            out["skip"] = part.removeprefix("skip:").strip() or "no reason"
        elif part:
            for word in part.split():
                if word == "run":
                    out["run"] = True
                elif word == "slow":
                    out["slow"] = True
                elif word.startswith("setup="):
                    out["setup"] = tuple(word.removeprefix("setup=").split(","))
                else:
                    raise ValueError(f"unknown readme-test marker word {word!r} in {text!r}")
    out["parse_only"] = tuple(parse_only)
    return out


def _command_lines(start: int, text: str) -> list[tuple[int, str]]:
    """Shell lines of a block with continuation (indented) lines joined to the one before."""
    lines: list[tuple[int, str]] = []
    for offset, raw in enumerate(text.splitlines()):
        if raw.startswith((" ", "\t")) and lines:
            number, before = lines[-1]
            lines[-1] = (number, f"{before} {raw.strip()}")
        elif raw.strip():
            lines.append((start + 1 + offset, raw.strip()))
    return lines


def read_blocks(text: str, file: str = "README.md") -> list[Block]:
    blocks: list[Block] = []
    rows = text.splitlines()
    i = 0
    while i < len(rows):
        opening = _FENCE.match(rows[i])
        if not opening:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(rows)) if rows[j].startswith("```"))
        marker = _MARKER.match(rows[i - 1]) if i else None
        options = _marker(marker.group(1)) if marker else _marker("")
        body = "\n".join(rows[i + 1 : end])
        block = Block(
            line=i + 1,
            file=file,
            lang=opening.group(1),
            text=body,
            run=bool(options["run"]),
            slow=bool(options["slow"]),
            skip=str(options["skip"]),
            setup=options["setup"],  # type: ignore[arg-type]
            parse_only=options["parse_only"],  # type: ignore[arg-type]
        )
        if block.lang != "python":
            block.lines = _command_lines(i + 1, body)
        blocks.append(block)
        i = end + 1
    return blocks


PAGES = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in doc_pages()}
BLOCKS = [block for file, text in PAGES.items() for block in read_blocks(text, file)]


def synopsis_argv(line: str) -> list[str]:
    """A README command line (``bindkit ...``, maybe a synopsis) → argv after ``bindkit``."""
    tokens = shlex.split(line, comments=True)
    argv: list[str] = []
    for token in tokens[1:]:
        token = token.replace("[", "").replace("]", "")
        if token in ("", "...", "|"):
            continue
        if "|" in token and not token.startswith(("+", "http")):
            token = token.split("|", 1)[0]
        argv.append(token)
    return argv


def _bindkit_lines(block: Block) -> list[tuple[int, str]]:
    return [(n, line) for n, line in block.lines if line.startswith("bindkit ")]


def _subcommand(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.ArgumentParser:
    """The (sub-)parser the leading words of ``argv`` name."""
    for token in argv:
        choices = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not choices or token not in choices[0].choices:
            break
        parser = choices[0].choices[token]
    return parser


def _typed_placeholders(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """A synopsis placeholder (``--batch-size N``) of a numeric option → a number, so the
    parse checks the option, not the placeholder."""
    command = _subcommand(parser, argv)
    numeric = {o for a in command._actions if a.type in (int, float) for o in a.option_strings}
    return [
        "1" if i and argv[i - 1] in numeric and re.fullmatch(r"[A-Z][A-Z0-9_]*", t) else t
        for i, t in enumerate(argv)
    ]


def _parse(argv: list[str]) -> str:
    """The parser's complaint about ``argv`` ('' when it parses to a command)."""
    from bindkit.cli import build_parser

    parser = build_parser()
    argv = _typed_placeholders(parser, argv)
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            args, extras = parser.parse_known_args(argv)
    except SystemExit:
        return err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "exit"
    if extras:
        return f"unrecognized arguments: {' '.join(extras)}"
    if getattr(args, "handler", None) is None:
        return "no command"
    return ""


SHELL_BLOCKS = [b for b in BLOCKS if _bindkit_lines(b)]
PYTHON_BLOCKS = [b for b in BLOCKS if b.lang == "python"]
RUN_BLOCKS = [b for b in SHELL_BLOCKS if b.run]


def test_readme_has_blocks_of_each_kind() -> None:
    assert len(PYTHON_BLOCKS) >= 3
    assert len(SHELL_BLOCKS) >= 15
    assert len(RUN_BLOCKS) >= 5
    for block in BLOCKS:  # every setup a marker names exists
        assert set(block.setup) <= set(SETUPS), block.id


def test_the_guides_are_checked_and_the_notebook_is_not() -> None:
    files = {b.file for b in BLOCKS}
    assert {"README.md", "docs/quickstart.md", "docs/guides/finetune.md"} <= files
    assert not any(f.startswith("docs/experiments/") for f in PAGES)


def test_readme_fits_on_a_screen_and_starts_with_the_setup() -> None:
    """README.md is at most 300 lines; its first block installs and runs the main job, the second
    runs the tests (the docs site holds the rest)."""
    lines = PAGES["README.md"].splitlines()
    assert len(lines) <= 300, f"README.md has {len(lines)} lines; move the detail into docs/"
    first, second = [b for b in BLOCKS if b.file == "README.md"][:2]
    assert first.run and first.lines[0][1].startswith("pip install -c constraints.txt")
    assert first.lines[1][1] == "bindkit eval --model st:default --out results"
    assert second.text == "python -m pytest"


def _stray_commands(file: str, text: str, blocks: list[Block]) -> list[str]:
    from bindkit.cli import build_parser

    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    inside = {n for b in blocks for n in range(b.line, b.line + b.text.count("\n") + 2)}
    return [
        f"{file}:{n}: {row}"
        for n, row in enumerate(text.splitlines(), 1)
        if n not in inside
        and row.split(" ")[:1] == ["bindkit"]
        and row.split(" ")[1:2]
        and row.split(" ")[1] in commands.choices
    ]


def test_no_bindkit_command_outside_a_code_block() -> None:
    """A command written as prose (outside a fence) escapes these tests and renders as text."""
    stray = [
        line
        for file, text in PAGES.items()
        for line in _stray_commands(file, text, [b for b in BLOCKS if b.file == file])
    ]
    assert not stray, "\n".join(stray)
    prose = "Some text.\nbindkit eval --model bow\n"
    assert _stray_commands("x.md", prose, read_blocks(prose, "x.md"))  # the check can fail


@pytest.mark.parametrize(
    ("where", "line"),
    [(f"{b.file}:{n}", line) for b in SHELL_BLOCKS for n, line in _bindkit_lines(b)],
)
def test_every_bindkit_line_parses(where: str, line: str) -> None:
    complaint = _parse(synopsis_argv(line))
    assert not complaint, f"{where}: {line}\n  -> {complaint}"


def test_synopsis_normaliser() -> None:
    argv = synopsis_argv(
        "bindkit eval --model SPEC [--model SPEC ...] [--task NAME[,NAME] ...] "
        "[--out report.md|site/] # a comment"
    )
    expected = ["eval", "--model", "SPEC", "--model", "SPEC", "--task", "NAME,NAME"]
    assert argv == [*expected, "--out", "report.md"]
    assert synopsis_argv('bindkit eval --model "st:default+adapter=a b"') == [
        "eval",
        "--model",
        "st:default+adapter=a b",
    ]


def test_parse_check_catches_a_broken_option(tmp_path: Path) -> None:
    """The check can fail: a page with one option renamed has a line that does not parse."""
    text = PAGES["docs/guides/saber.md"]
    assert "--per-n 200" in text
    broken = read_blocks(text.replace("--per-n 200", "--per-nn 200", 1))
    complaints = [_parse(synopsis_argv(line)) for b in broken for _, line in _bindkit_lines(b)]
    assert any("unrecognized arguments: --per-nn" in c for c in complaints)
    dropped = read_blocks(text.replace("bindkit saber validate DIR", "bindkit saber validate", 1))
    assert any(
        "required" in _parse(synopsis_argv(line))
        for b in dropped
        for _, line in _bindkit_lines(b)
        if line.startswith("bindkit saber validate")
    )


def _keys(table: dict[str, object], prefix: str = "") -> set[str]:
    keys = set()
    for key, value in table.items():
        keys.add(prefix + key)
        if isinstance(value, dict):
            keys |= _keys(value, f"{prefix}{key}.")
        elif isinstance(value, list) and value and isinstance(value[0], dict):
            for item in value:
                keys |= _keys(item, f"{prefix}{key}[].")
    return keys


def test_readme_sweep_toml_is_a_valid_abridged_example(tmp_path: Path) -> None:
    """The sweeps guide's TOML loads with bindkit's sweep checker, and every key it shows is in
    examples/sweep.toml (the guide abridges that file)."""
    import tomllib

    from bindkit.sweep.config import load_config

    (toml,) = [b for b in BLOCKS if b.lang == "toml" and b.file == "docs/guides/sweeps.md"]
    example = (ROOT / "examples" / "sweep.toml").read_text(encoding="utf-8")
    assert _keys(tomllib.loads(toml.text)) <= _keys(tomllib.loads(example))
    (tmp_path / "demo" / "data").mkdir(parents=True)
    row = {"query": "a red cube", "positive": "a red cube.", "negative": "a cube, red."}
    for name in ("train-fullpararelnegLEOR.jsonl", "test-recipe.jsonl", "preserve-ctxgen.jsonl"):
        (tmp_path / "demo" / "data" / name).write_text(json.dumps(row) + "\n", encoding="utf-8")
    (tmp_path / "SICK_trial.txt").write_text("sentence_A\tsentence_B\trelatedness_score\n")
    (tmp_path / "examples").mkdir()
    for name, text in (("readme.toml", toml.text), ("sweep.toml", example)):
        (tmp_path / "examples" / name).write_text(text, encoding="utf-8")
        assert load_config(tmp_path / "examples" / name).objectives


# ---- setups: the offline files a block's marker asks for --------------------------------------


def _cli(argv: list[str]) -> None:
    from bindkit.cli import main

    rc = main(argv)
    assert rc == 0, f"bindkit {' '.join(argv)} -> exit {rc}"


def _setup_saber(folder: Path) -> None:
    from bindkit import generate_saber

    generate_saber(folder / "saber", seed=0, per_n=2)


def _setup_scene(folder: Path) -> None:
    from PIL import Image

    Image.new("RGB", (64, 48), (120, 60, 200)).save(folder / "scene.png")


def _setup_synth(name: str) -> Callable[[Path], None]:
    def setup(folder: Path) -> None:
        out = str(folder / name)
        _cli(["synth", "generate", "--n", "200", "--out", out, "--exclude-vocab", "builtin", "-q"])

    return setup


def _setup_prompts(folder: Path) -> None:
    """The docs' ``prompts.txt`` (the ``text`` block that starts with the sweep's comment)."""
    (block,) = [b for b in BLOCKS if b.text.startswith("# prompts.txt")]
    (folder / "prompts.txt").write_text(block.text + "\n", encoding="utf-8")


def _setup_rejects(folder: Path) -> None:
    (folder / "rejects.json").write_text(json.dumps({"rejected": ["n02-ind-0000-c1"]}))


SETUPS: dict[str, Callable[[Path], None]] = {
    "saber": _setup_saber,
    "scene.png": _setup_scene,
    "synth-data": _setup_synth("data"),
    "synth-run": _setup_synth("run"),
    "prompts.txt": _setup_prompts,
    "rejects.json": _setup_rejects,
}


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BINDKIT_PROGRESS", "0")
    monkeypatch.delenv("BINDKIT_DATA", raising=False)
    yield tmp_path


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=lambda b: b.id)
def test_python_block_runs(block: Block, in_tmp: Path) -> None:
    if block.skip:
        pytest.skip(f"{block.id}: {block.skip}")
    for name in block.setup:
        SETUPS[name](in_tmp)
    code = compile(block.text, block.id, "exec")
    exec(code, {"__name__": "readme"})  # the README's own snippet


# ---- running shell blocks ---------------------------------------------------------------------

SMALL_SABER = "_small_saber"


def shrink(argv: list[str]) -> list[str]:
    """The default suite's smaller version of a README command (the slow suite runs it as is)."""
    command = argv[:2]
    if command == ["saber", "generate"] and "--per-n" not in argv:
        return [*argv, "--per-n", "2"]
    if argv[0] == "eval" and "--data" not in argv:
        tasks = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--task"]
        if not tasks or tasks == ["saber"]:
            return [*argv, "--data", SMALL_SABER]
    if command == ["train", "triplets"] and "--max-steps" not in argv:
        lines = [] if {"--lines-alpha", "--no-lines"} & set(argv) else ["--lines-alpha", "1"]
        return [*argv, "--max-steps", "2", *lines]  # no LiNeS sweep: 11 evaluations
    return argv


def _run_line(line: str, where: str, small: bool) -> None:
    if line.startswith("python -c "):
        code = shlex.split(line)[2]
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ)
        )
        assert proc.returncode == 0, f"{where}: {line}\n{proc.stderr[-2000:]}"
        return
    argv = shlex.split(line, comments=True)[1:]
    if small:
        argv = shrink(argv)
    from bindkit.cli import main

    rc = main(argv)
    assert rc == 0, f"{where}: bindkit {' '.join(argv)} -> exit {rc}"


def _run_block(block: Block, folder: Path, small: bool) -> None:
    for name in block.setup:
        SETUPS[name](folder)
    if small:
        from bindkit import generate_saber

        generate_saber(folder / SMALL_SABER, seed=0, per_n=2)
    for number, line in block.lines:
        if line.startswith(("pip ", "python -m pytest", "export ")):
            continue
        if any(line.startswith(prefix) for prefix in block.parse_only):
            continue
        where = f"{block.file}:{number}"
        assert line.startswith(("bindkit ", "python -c ")), f"{where}: cannot run {line}"
        _run_line(line, where, small)


@pytest.mark.parametrize("block", [b for b in RUN_BLOCKS if not b.slow], ids=lambda b: b.id)
def test_run_block_small(block: Block, in_tmp: Path) -> None:
    _run_block(block, in_tmp, small=True)


@pytest.mark.slow
@pytest.mark.parametrize("block", RUN_BLOCKS, ids=lambda b: b.id)
def test_run_block_as_written(block: Block, in_tmp: Path) -> None:
    _run_block(block, in_tmp, small=False)


def test_shrink() -> None:
    assert shrink(["saber", "generate", "--out", "s"])[-2:] == ["--per-n", "2"]
    assert shrink(["saber", "generate", "--per-n", "5"]) == ["saber", "generate", "--per-n", "5"]
    assert shrink(["eval", "--model", "bow"])[-2:] == ["--data", SMALL_SABER]
    assert shrink(["eval", "--model", "bow", "--task", "sts"]) == [
        "eval",
        "--model",
        "bow",
        "--task",
        "sts",
    ]
    assert shrink(["train", "triplets", "--out", "r"])[-4:] == [
        "--max-steps",
        "2",
        "--lines-alpha",
        "1",
    ]
    assert shrink(["train", "triplets", "--no-lines"])[-2:] == ["--max-steps", "2"]


def test_a_failing_line_fails_its_block(in_tmp: Path) -> None:
    """A run block whose command exits non-zero fails the test (the check can go red)."""
    text = "<!-- readme-test: run -->\n```bash\nbindkit saber validate nowhere\n```\n"
    (block,) = read_blocks(text)
    with pytest.raises(AssertionError, match="exit 2"):
        _run_block(block, in_tmp, small=True)
