"""The user-facing scripts follow the library's rules: ``scripts/train_tiny_vlm.py`` (the command
of :mod:`bindkit.builtin.tiny_vlm`),
``benchmarks/vlm_base_search.py`` and ``benchmarks/vlm_analyses.py`` check every argument before
any work, each bad one in one line naming it, exit 2, and leave no output folder behind.

The work itself (training, the demo, an analysis) is replaced by a function that fails the
test: a check that lets a bad argument through is caught before it costs a run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from script_module import load_script

TRAIN = "scripts/train_tiny_vlm.py"
SEARCH = "benchmarks/vlm_base_search.py"
ANALYSES = "benchmarks/vlm_analyses.py"

# (script, arguments, fixture, fragment of the one error line)
ROWS: list[tuple[str, list[str], str, str]] = [
    (TRAIN, ["--lr", "nan"], "", "--lr nan: must be more than 0 and at most 1"),
    (TRAIN, ["--lr", "0"], "", "--lr 0: must be more than 0"),
    (TRAIN, ["--steps", "10000000"], "", "--steps 10,000,000: must be from 1 to 1,000,000"),
    (TRAIN, ["--warmup", "-1"], "", "--warmup -1: must be from 0"),
    (TRAIN, ["--text-weight", "inf"], "", "--text-weight inf: must be from 0 to 1000"),
    (TRAIN, ["--per-n", "3"], "", "--per-n 3: must be a positive even number"),
    (TRAIN, ["--n-min", "5", "--n-max", "3"], "", "--n-max 3: must be at least --n-min (5)"),
    (TRAIN, ["--batch", "1"], "", "--batch 1: must be from 2 to 4096"),
    (TRAIN, ["--max-pixels", "100"], "", "--max-pixels 100: must be from 4096"),
    (TRAIN, ["--threads", "0"], "", "--threads 0: must be from 1 to 1024"),
    (TRAIN, ["--out", "afile"], "afile", "--out afile: is a file; give a folder"),
    (TRAIN, ["--out", "afile/o"], "afile", "afile/o: not a directory"),
    (TRAIN, ["--out", "notes"], "notes", "--out notes: not empty and not a tiny-vlm checkpoint"),
    (TRAIN, ["--out", "synth"], "synth", "--out synth: holds a bindkit synth run (manifest.json)"),
    (TRAIN, ["--eval", "nosaber"], "", "nosaber/saber.jsonl"),
    (
        TRAIN,
        ["--eval", "saber"],
        "saber",
        "--eval saber: not rendered (40 items without an image); run `bindkit saber render saber",
    ),
    (SEARCH, ["--only", "capp"], "", "--only capp: not a variant"),
    (SEARCH, ["--lr", "2"], "", "--lr 2.0: a learning rate in (0, 1)"),
    (SEARCH, ["--saber-per-n", "3"], "", "--saber-per-n 3: must be even"),
    (SEARCH, ["--steps", "0"], "", "--steps 0: must be from 1 to 100,000"),
    (SEARCH, ["--threads", "5000"], "", "--threads 5000: must be from 1 to 1024"),
    (SEARCH, ["--out", "afile"], "afile", "--out afile: is a file; give a folder"),
    (SEARCH, ["--out", "synth"], "synth", "--out synth: holds a bindkit synth run"),
    (
        ANALYSES,
        ["overlap", "--steps", "10000000"],
        "",
        "--steps 10,000,000: must be from 1 to 1,000,000",
    ),
    (ANALYSES, ["overlap", "--threads", "5000"], "", "--threads 5000: must be from 1 to 1024"),
    (ANALYSES, ["saha", "--seed", "-1"], "", "--seed -1: must be from 0"),
    (ANALYSES, ["saha", "--k", "100000"], "", "--k 100,000: must be from 1 to 1000"),
    (ANALYSES, ["gap", "--pairs", "1000000"], "", "--pairs 1,000,000: must be from 1 to 100,000"),
    (ANALYSES, ["gap", "--adapter", "nope"], "", "--adapter nope: not a LoRA adapter folder"),
    (
        ANALYSES,
        ["gap", "--model", "qwen3-vl-embedding:nope"],
        "",
        "--model qwen3-vl-embedding:nope: nope is not a folder",
    ),
    (
        ANALYSES,
        ["gap", "--model", "builtin:tiny-vlm+adapter=nope"],
        "",
        "--adapter nope: not a LoRA adapter folder",
    ),
    (ANALYSES, ["gap", "--out", "afile"], "afile", "--out afile: is a file; give a folder"),
    (ANALYSES, ["gap", "--out", "afile/o"], "afile", "afile/o: not a directory"),
]


def _fixture(name: str, root: Path) -> None:
    if name == "afile":
        (root / "afile").write_text("x")
    elif name == "notes":
        (root / "notes").mkdir()
        (root / "notes" / "notes.txt").write_text("mine")
    elif name == "synth":
        (root / "synth").mkdir()
        (root / "synth" / "manifest.json").write_text(json.dumps({"format": "bindkit-synth-run"}))
    elif name == "saber":  # generated, never rendered
        from bindkit.saber.build import generate_saber

        generate_saber(root / "saber", per_n=2, n_max=5)


def _no_work(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("the work started although an argument is bad")


def _load(script: str) -> ModuleType:
    """The module whose ``main`` the script runs: the library's for the training script."""
    if script == TRAIN:
        import bindkit.builtin.tiny_vlm

        assert load_script(script).main is bindkit.builtin.tiny_vlm.main
        return bindkit.builtin.tiny_vlm
    return load_script(script)


def _module(script: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    module = _load(script)
    if script == TRAIN:
        monkeypatch.setattr(module, "train", _no_work)
    elif script == SEARCH:
        monkeypatch.setattr(module, "run_variant", _no_work)
    else:
        for name in ("run_overlap", "run_gap", "run_saha"):
            monkeypatch.setattr(module, name, _no_work)
    return module


@pytest.mark.parametrize(
    ("script", "arguments", "fixture", "fragment"),
    ROWS,
    ids=[f"{Path(s).stem}:{' '.join(a)}" for s, a, _f, _m in ROWS],
)
def test_a_bad_argument_is_one_line_before_any_work(
    script: str,
    arguments: list[str],
    fixture: str,
    fragment: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("BINDKIT_CACHE_DIR", str(tmp_path / "cache"))
    _fixture(fixture, tmp_path)
    module = _module(script, monkeypatch)
    before = sorted(p.name for p in tmp_path.iterdir())
    if "--out" not in arguments:
        position = 1 if script == ANALYSES else 0  # after the subcommand
        arguments = [*arguments[:position], "--out", "o", *arguments[position:]]
    if script == ANALYSES and arguments[0] == "gap":
        arguments = [*arguments, "--no-scores"]
    assert module.main(arguments) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert fragment in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no output folder made


def test_good_arguments_reach_the_work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks pass the scripts' defaults (and a tiny-vlm checkpoint as --out): the work
    is called, so no row above passes by refusing everything."""
    from bindkit.embed.backends.builtin import builtin_dir

    monkeypatch.chdir(tmp_path)
    calls: list[str] = []

    def work(*args: Any, **kwargs: Any) -> Any:
        calls.append("work")
        raise SystemExit(0)

    shutil.copytree(builtin_dir("tiny-vlm"), tmp_path / "ckpt")
    for script, arguments in (
        (TRAIN, ["--out", "ckpt"]),
        (SEARCH, ["--out", "search", "--only", "cap"]),
        (ANALYSES, ["gap", "--out", "an", "--no-scores"]),
    ):
        module = _load(script)
        for name in ("train", "run_variant", "run_gap"):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, work)
        with pytest.raises(SystemExit):
            module.main(arguments)
    assert calls == ["work"] * 3
