"""Resume equals an uninterrupted run: a command killed with SIGKILL at a fixed point and rerun
writes the same bytes as one that was never stopped (review cells F103 / S49).

The kill is real: a child process runs the command's ``main`` with one of its writes wrapped so
that the k-th write puts out half its line and then the process sends itself SIGKILL (a torn
line, as a kill in the middle of a write leaves). The default suite kills at two points per
command; ``-m slow`` walks a fixed list of points.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from bindkit.cli import main

# the k-th write to examples.jsonl (or rejected.jsonl) is torn and the process killed there;
# 50 and 100 sit on the diversity controls' refresh boundary (diversity.REFRESH)
KILL_POINTS = [1, 7, 23, 49, 50, 51, 99, 100, 163]

_KILLER = textwrap.dedent(
    """
    import importlib, json, os, signal, sys
    import bindkit.synth.generate as generate
    from bindkit.cli import main

    where, kill_at = sys.argv[1], int(sys.argv[2])
    calls = 0

    def due():
        global calls
        calls += 1
        return calls >= kill_at

    if where.startswith("file:"):  # the k-th line written to this file is torn, then the kill
        plain = generate._append

        def torn(handle, row):
            if not handle.name.endswith(where[5:]) or not due():
                return plain(handle, row)
            line = json.dumps(row, ensure_ascii=False) + "\\n"
            handle.write(line[: len(line) // 2])
            handle.flush()
            os.kill(os.getpid(), signal.SIGKILL)

        generate._append = torn
    else:  # "call:module:attr" or "call:module:Class.attr": killed on entering the k-th call
        _, module, attr = where.split(":")
        owner = importlib.import_module(module)
        *path, name = attr.split(".")
        for part in path:
            owner = getattr(owner, part)
        plain_call = getattr(owner, name)

        def killed(*args, **kwargs):
            if due():
                os.kill(os.getpid(), signal.SIGKILL)
            return plain_call(*args, **kwargs)

        setattr(owner, name, killed)
    if sys.argv[3] == "build_data":  # a recipe's data step alone: RECIPE.toml FOLDER
        from pathlib import Path
        from bindkit.recipes.data import build_data
        from bindkit.recipes.recipe import Recipe

        build_data(Recipe.from_toml(sys.argv[4]), Path(sys.argv[5]), progress=False)
        sys.exit(0)
    sys.exit(main(sys.argv[3:]))
    """
)


def _killed(argv: list[str], where: str, kill_at: int) -> None:
    """Run ``bindkit ARGV`` (or ``build_data RECIPE.toml FOLDER``) in a child that SIGKILLs
    itself at the ``kill_at``-th write to the file ``where`` names (``file:NAME``) or call of
    the function it names (``call:MODULE:ATTR``)."""
    done = subprocess.run(
        [sys.executable, "-c", _KILLER, where, str(kill_at), *argv],
        env={**os.environ, "BINDKIT_PROGRESS": "0"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]


def _same_files(made: Path, reference: Path, names: list[str]) -> None:
    for name in names:
        assert (made / name).read_bytes() == (reference / name).read_bytes(), name


def _synth(out: Path, n: int) -> list[str]:
    return ["synth", "generate", "--n", str(n), "--seed", "3", "--out", str(out), "-q"]


SYNTH_FILES = ["examples.jsonl", "rejected.jsonl", "train.jsonl", "val.jsonl", "test.jsonl"]


@pytest.fixture(scope="module")
def synth_reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("uninterrupted")
    assert main(_synth(out, 240)) == 0
    return out


def _resumed_synth(tmp_path: Path, target: str, kill_at: int) -> Path:
    out = tmp_path / "resumed"
    _killed(_synth(out, 240), f"file:{target}", kill_at)
    assert main(_synth(out, 240)) == 0
    return out


@pytest.mark.parametrize("kill_at", [23, 51])
def test_synth_generate_killed_and_rerun_equals_an_uninterrupted_run(
    synth_reference: Path, tmp_path: Path, kill_at: int
) -> None:
    out = _resumed_synth(tmp_path, "examples.jsonl", kill_at)
    _same_files(out, synth_reference, SYNTH_FILES)


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", KILL_POINTS)
def test_synth_generate_resumes_to_the_same_bytes_from_every_kill_point(
    synth_reference: Path, tmp_path: Path, kill_at: int
) -> None:
    out = _resumed_synth(tmp_path, "examples.jsonl", kill_at)
    _same_files(out, synth_reference, SYNTH_FILES)


def test_a_controller_rebuilt_mid_block_plans_what_the_running_one_plans() -> None:
    """The unit of the rule: the banned and avoid lists depend on the counts at the last
    refresh boundary, not on when a plan first asks for them."""
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.diversity import Controller
    from bindkit.synth.generate import accept_or_reject

    backend, running, accepted = TemplateBackend(0), Controller(), []
    attempt = 0
    while running.accepted < 80:
        plan = running.plan(attempt, 0)
        attempt += 1
        example, _, _ = accept_or_reject(backend.produce(plan), running, 0)
        if example is not None:
            running.record(example)
            accepted.append(example)
    asked = Controller()  # asked for a plan mid-block, as a running generator does
    for example in accepted[:60]:
        asked.record(example)
    asked.plan(attempt, 0)
    for example in accepted[60:73]:
        asked.record(example)
    rebuilt = Controller()  # rebuilt from the file at 73, as a resumed one is
    for example in accepted[:73]:
        rebuilt.record(example)
    assert asked.plan(attempt, 0) == rebuilt.plan(attempt, 0)


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["synth", "mix", "--mix", "fullpara", "--max-rows", "40"], "train-fullpara.jsonl"),
        (["synth", "preserve", "--set", "ctxgen", "--max-rows", "30"], "preserve-ctxgen.jsonl"),
    ],
)
def test_synth_mix_and_preserve_killed_between_file_and_record_resume(
    synth_reference: Path, tmp_path: Path, argv: list[str], name: str
) -> None:
    """A kill between the data file's rename and its record's (the record is written last):
    the same command again writes both, the same bytes, instead of refusing the file it left
    (a finished file still needs --overwrite)."""
    import shutil

    reference = tmp_path / "reference"
    shutil.copytree(synth_reference, reference)
    assert main([*argv[:2], str(reference), *argv[2:], "-q"]) == 0
    killed = tmp_path / "killed"
    shutil.copytree(synth_reference, killed)
    shutil.copy(reference / name, killed / name)  # the data file in place, no record yet
    assert main([*argv[:2], str(killed), *argv[2:], "-q"]) == 0
    record = Path(name).with_suffix(".json").name
    for file in (name, record):
        assert (killed / file).read_bytes() == (reference / file).read_bytes(), file
    assert main([*argv[:2], str(killed), *argv[2:], "-q"]) == 2  # finished: --overwrite


TINY_RECIPE = """
name = "tiny"
model = "builtin:tiny-clip"

[data]
examples = 100
max_triplets = 8
val_triplets = 8
test_triplets = 8

[train]
batch_size = 4
max_steps = 3
save_every = 1
preserve_batch = 2

[[runs]]
name = "a"
seed = 0
preservation = "ctxgen"

[[runs]]
name = "b"
seed = 1
preservation = "none"

[soup]
name = "soup"
runs = ["a", "b"]

[lines]
alpha = 0.5

[[panel]]
name = "heldout"
task = "triplets"
data = "{test}"
score = "triplet_accuracy"
"""


def _data_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.jsonl"))}


def test_finetune_killed_while_generating_its_data_resumes_to_the_same_data(
    tmp_path: Path,
) -> None:
    """Review cell F103: kill -9 during a recipe's data generation, rerun: every data file (and
    so every run trained on them) equals an uninterrupted run's. The data step alone
    (:func:`bindkit.recipes.data.build_data`, what ``finetune`` runs first into ``OUT/data``);
    the whole command from fixed kill points is the slow test below."""
    from bindkit.recipes.data import build_data
    from bindkit.recipes.recipe import Recipe

    path = tmp_path / "tiny.toml"
    path.write_text(TINY_RECIPE)
    recipe = Recipe.from_toml(path)
    reference = build_data(recipe, tmp_path / "reference", progress=False)
    out = tmp_path / "ft"
    _killed(["build_data", str(path), str(out / "data")], "file:examples.jsonl", 37)
    assert 0 < (out / "data" / "examples.jsonl").read_text().count("\n") < 100
    resumed = build_data(recipe, out / "data", progress=False)
    assert resumed.counts == reference.counts
    assert _data_files(out / "data") == _data_files(tmp_path / "reference")


# (where, k): in data generation; in run a's training (entering its 2nd checkpoint: it resumes
# from the 1st); between the runs
# (run b's adapter being saved); in the soup; in the panel (its 3rd model)
FINETUNE_KILLS = [
    ("file:examples.jsonl", 37),
    ("call:bindkit.train.loop:save_checkpoint", 2),
    ("call:bindkit.adapters.lora:save_adapter", 2),
    ("call:bindkit.adapters.soup:average_adapters", 1),
    ("call:bindkit.recipes.runner:score_panel", 3),
]


def _finetune(path: Path, out: Path) -> list[str]:
    return ["finetune", str(path), "--out", str(out), "--threads", "1", "-q"]


def _shipped(out: Path) -> dict[str, bytes]:
    files = {f"data/{k}": v for k, v in _data_files(out / "data").items()}
    for folder in ("adapter", "adapter-raw", "runs/a/adapter-raw", "runs/b/adapter-raw"):
        for p in sorted((out / folder).glob("*.safetensors")):
            files[f"{folder}/{p.name}"] = p.read_bytes()
    return files


@pytest.fixture(scope="module")
def finetune_reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    pytest.importorskip("peft")
    root = tmp_path_factory.mktemp("finetune")
    path = root / "tiny.toml"
    path.write_text(TINY_RECIPE)
    assert main(_finetune(path, root / "uninterrupted")) == 0
    return path, root / "uninterrupted"


@pytest.mark.slow  # ~1 min per kill point on 2 CPU cores
@pytest.mark.parametrize(("where", "kill_at"), FINETUNE_KILLS)
def test_finetune_killed_anywhere_resumes_to_the_same_bytes(
    finetune_reference: tuple[Path, Path], tmp_path: Path, where: str, kill_at: int
) -> None:
    import json

    path, reference = finetune_reference
    out = tmp_path / "ft"
    _killed(_finetune(path, out), where, kill_at)
    assert main(_finetune(path, out)) == 0
    assert _shipped(out) == _shipped(reference)
    table = json.loads((out / "recipe.json").read_text())["table"]
    assert table == json.loads((reference / "recipe.json").read_text())["table"]
