"""``bindkit sweep``: the TOML checks, the Pareto front, a 2-trial study on builtin:tiny-clip
end to end (outputs, resume), a diverging trial recorded as failed, a kill -9 and resume."""

from __future__ import annotations

import csv
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.sweep.config import load_config
from bindkit.sweep.front import dominates, pareto_front

ROOT = Path(__file__).resolve().parents[1]
PAIRS = [("red", "blue"), ("striped", "green"), ("white", "orange"), ("golden", "matte")]
TRIPLETS = [
    {
        "query": f"a {a} cube and a {b} heart",
        "positive": f"a {b} heart and a {a} cube",
        "negative": f"a {b} cube and a {a} heart",
    }
    for a, b in PAIRS * 2
]
STS = [
    {"sentence1": "a red cube", "sentence2": "a red cube", "score": 5.0},
    {"sentence1": "a red cube", "sentence2": "a blue cube", "score": 3.0},
    {"sentence1": "a red cube", "sentence2": "a blue heart", "score": 1.0},
    {"sentence1": "a striped star", "sentence2": "a striped star", "score": 4.8},
    {"sentence1": "a striped star", "sentence2": "a golden ring", "score": 0.5},
]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


SEARCH_LR = """
[search.lr]
type = "categorical"
choices = [0.01, 0.02]
"""


def write_sweep(tmp: Path, search: str = SEARCH_LR, **train: Any) -> Path:
    _jsonl(tmp / "train.jsonl", TRIPLETS)
    _jsonl(tmp / "sts.jsonl", STS)
    options = {"max_steps": 2, "batch_size": 4, "save_every": 0, **train}
    fixed = "\n".join(f"{k} = {json.dumps(v)}" for k, v in options.items())
    text = f"""
[study]
name = "t"
sampler = "grid"
trials = 2
lines_alphas = [0.5]

[train]
model = "builtin:tiny-clip"
train = "train.jsonl"
{fixed}
{search}
[[panel]]
name = "bind"
task = "triplets"
data = "train.jsonl"
score = "triplet_accuracy"

[[panel]]
name = "sts"
task = "sts"
data = "sts.jsonl"
score = "spearman"

[objectives]
binding = ["bind"]
general = "sts"
"""
    path = tmp / "sweep.toml"
    path.write_text(text)
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


# -- the front (pure) ------------------------------------------------------------------------


def test_front_on_hand_made_points() -> None:
    points = [(0.9, 0.70), (0.8, 0.80), (0.7, 0.75), (0.95, 0.60), (0.8, 0.80), (0.5, 0.90)]
    # (0.7, 0.75) is dominated by (0.8, 0.8); equal points both stay; the extremes stay
    assert pareto_front(points) == [True, True, False, True, True, True]
    assert dominates((1, 1), (1, 0)) and not dominates((1, 1), (1, 1))
    assert pareto_front([(1.0,), (2.0,), (2.0,)]) == [False, True, True]
    assert pareto_front([]) == []


# -- the TOML checks ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("search", "message"),
    [
        ('[search.lr]\ntype = "log-float"\nlow = 0.0\nhigh = 1.0\n', r"search\.lr\.low 0\.0"),
        ('[search.lr]\ntype = "float"\nlow = 2.0\nhigh = 1.0\n', r"search\.lr: low 2\.0"),
        ('[search.lr]\ntype = "gauss"\n', r"search\.lr\.type 'gauss'"),
        ('[search.lr]\ntype = "float"\nlow = 1\nhigh = 2\nmu = 3\n', r"unknown key search\.lr\.mu"),
        ('[search.lora_rank]\ntype = "int"\nlow = 1\nhigh = 4\n', r"search\.lora_rank: not a Tra"),
        ('[search.lora_r]\ntype = "float"\nlow = 1\nhigh = 4\n', r"search\.lora_r\.type 'float'"),
        ('[search.margin]\ntype = "categorical"\nchoices = []\n', r"search\.margin\.choices"),
        ('[search.margin]\ntype = "float"\nlow = 0.0\nhigh = 0.1\n', r"grid sampler needs"),
        # the far end of the space is checked too, not only its first point
        ('[search.lr]\ntype = "categorical"\nchoices = [0.01, 2.0]\n', r"search\]: --lr 2"),
        ('[search.lr]\ntype = "categorical"\nchoices = [0.01, 5.0, 0.02]\n', r"--lr 5"),
    ],
)
def test_bad_distributions_name_the_key(tmp_path: Path, search: str, message: str) -> None:
    with pytest.raises(BindkitError, match=message):
        load_config(write_sweep(tmp_path, search=search))


def test_bad_keys_and_fields_name_the_key(tmp_path: Path) -> None:
    path = write_sweep(tmp_path)
    text = path.read_text()
    cases = {
        "[study]\n": ("[study]\nsamplr = 'tpe'\n", r"unknown key study\.samplr \(did you mean"),
        "[train]\n": ("[train]\nlearning_rate = 0.1\n", r"train\.learning_rate: not a Train"),
        'sampler = "grid"': ('sampler = "annealing"', r"study\.sampler 'annealing'"),
        'binding = ["bind"]': ('binding = ["bnd"]', r"objectives\.binding: 'bnd' is not a"),
        'task = "sts"': ('task = "stss"', r"panel\[1\]\.task"),
        "max_steps = 2": ('max_steps = "2"', r"train\.max_steps '2': max_steps takes a int"),
        'train = "train.jsonl"': ('train = "none.jsonl"', r"--train .*none\.jsonl: file not"),
        "lines_alphas = [0.5]": ("lines_alphas = [1.5]", r"study\.lines_alphas"),
    }
    for old, (new, message) in cases.items():
        assert old in text
        path.write_text(text.replace(old, new, 1))
        with pytest.raises(BindkitError, match=message):
            load_config(path)
    path.write_text(text + "\n[extra]\n")
    with pytest.raises(BindkitError, match="unknown key extra"):
        load_config(path)
    path.write_text(text.replace("[train]\n", '[train]\nout = "x"\n'))
    with pytest.raises(BindkitError, match="the sweep sets out itself"):
        load_config(path)
    path.write_text("[study\n")
    with pytest.raises(BindkitError, match="not a readable TOML"):
        load_config(path)


def test_paths_are_relative_to_the_file(tmp_path: Path) -> None:
    config = load_config(write_sweep(tmp_path))
    assert config.fixed["train"] == str(tmp_path / "train.jsonl")
    assert config.panel[1].data == str(tmp_path / "sts.jsonl")
    assert config.objectives == {"binding": ("bind",), "general": ("sts",)}


def test_a_study_definition_is_by_content_not_path(tmp_path: Path) -> None:
    """Workers on other machines hold the same files elsewhere: they define the same study."""
    from bindkit.sweep.study import study_definition

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    here, there = write_sweep(tmp_path / "a"), write_sweep(tmp_path / "b")
    assert study_definition(load_config(here)) == study_definition(load_config(there))
    (tmp_path / "b" / "sts.jsonl").write_text(json.dumps(STS[0]) + "\n")
    assert study_definition(load_config(here)) != study_definition(load_config(there))


def test_shipped_example_parses() -> None:
    pytest.importorskip("optuna")
    text = (ROOT / "examples" / "sweep.toml").read_text()
    assert "[[panel]]" in text and "[objectives]" in text
    import tomllib

    data = tomllib.loads(text)
    assert {"study", "train", "search", "panel", "objectives"} <= set(data)


# -- studies on builtin:tiny-clip ------------------------------------------------------------


optuna = pytest.importorskip("optuna")
pytest.importorskip("peft")


def test_two_trial_study_end_to_end_and_rerun(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_sweep(tmp_path)
    out = tmp_path / "sweep"
    assert main(["sweep", str(config), "--out", str(out), "-q"]) == 0, capsys.readouterr().err
    assert "2 complete" in capsys.readouterr().out
    rows = read_csv(out / "sweep.csv")
    base, trials = rows[0], rows[1:]
    assert base["trial"] == "base" and base["bind"] and base["sts"]
    assert [(r["trial"], r["alpha"]) for r in trials] == [
        ("0", "1.0"), ("0", "0.5"), ("1", "1.0"), ("1", "0.5"),
    ]  # fmt: skip
    assert sorted({r["lr"] for r in trials}) == ["0.01", "0.02"]  # the grid, in its own order
    assert all(r["state"] == "COMPLETE" for r in trials)
    # the front is that of the scored points
    points = [(float(r["binding"]), float(r["general"])) for r in trials]
    assert [r["front"] == "yes" for r in trials] == pareto_front(points)
    # the objectives are the panel scores; a LiNeS point is the alpha-scaled adapter's score
    for row in trials:
        assert float(row["binding"]) == pytest.approx(float(row["bind"]))
        assert row["dir"].startswith("trials/p-")
    lines = out / trials[1]["dir"] / "adapter-lines-0.5" / "lines.json"
    assert json.loads(lines.read_text())["alpha"] == 0.5
    assert (out / "sweep.png").read_bytes()[:4] == b"\x89PNG"
    report = (out / "sweep.md").read_text()
    assert "## Pareto front" in report and "| base |" in report
    # each front point against the base: its change on every panel entry, with a paired
    # interval around it (the same items resampled for both models)
    changes = report.split("## The front against the base model", 1)[1]
    for row in (r for r in trials if r["front"] == "yes"):
        line = next(x for x in changes.splitlines() if x.startswith(f"| T{row['trial']} α "))
        cells = line.strip("|").split("|")[1:]
        for name, cell in zip(("bind", "sts"), cells, strict=True):
            delta, low, high = (float(x) for x in re.findall(r"[-+]\d+\.\d+", cell))
            assert delta == pytest.approx(100 * (float(row[name]) - float(base[name])), abs=0.01)
            assert low <= delta <= high
    # the Optuna study holds both trials, their values are the raw adapters' objectives
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{out / 'study.db'}")
    assert [t.state.name for t in study.trials] == ["COMPLETE", "COMPLETE"]
    raw = [r for r in trials if r["alpha"] == "1.0"]
    for trial, row in zip(study.trials, raw, strict=True):
        assert trial.values == pytest.approx([float(row["binding"]), float(row["general"])])
    # rerunning a finished grid adds nothing and keeps the trials
    before = (out / "sweep.csv").read_text()
    assert main(["sweep", str(config), "--out", str(out), "-q", "--n-trials", "0"]) == 0
    assert (out / "sweep.csv").read_text() == before


def test_a_diverging_trial_is_failed_and_the_study_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.errors import TrainingDivergedError
    from bindkit.sweep.study import run_sweep
    from bindkit.train import trainer

    real = trainer.train_triplets

    def diverging(config: Any, **options: Any) -> Any:  # the trainer's stop on a NaN loss
        if config.lr == 0.5:
            raise TrainingDivergedError(f"{config.out}: the loss became nan at step 1")
        return real(config, **options)

    monkeypatch.setattr(trainer, "train_triplets", diverging)
    search = '[search.lr]\ntype = "categorical"\nchoices = [0.5, 0.01]\n'
    summary = run_sweep(write_sweep(tmp_path, search=search), tmp_path / "s", progress=False)
    assert summary["states"] == {"FAIL": 1, "COMPLETE": 1}
    rows = read_csv(tmp_path / "s" / "sweep.csv")
    failed = [r for r in rows if r["state"] == "FAIL"]
    assert len(failed) == 1 and failed[0]["lr"] == "0.5" and failed[0]["alpha"] == ""
    assert "non-finite" in failed[0]["note"]
    assert [r["lr"] for r in rows if r["state"] == "COMPLETE"] == ["0.01", "0.01"]


def test_the_tpe_sampler_runs_a_multi_objective_study(tmp_path: Path) -> None:
    from bindkit.sweep.study import run_sweep

    search = '[search.margin]\ntype = "float"\nlow = 0.0\nhigh = 0.2\n'
    config = write_sweep(tmp_path, search=search)
    config.write_text(config.read_text().replace('sampler = "grid"', 'sampler = "tpe"'))
    summary = run_sweep(config, tmp_path / "s", n_trials=2, progress=False)
    assert summary["states"] == {"COMPLETE": 2}
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{tmp_path / 's' / 'study.db'}")
    assert len(study.directions) == 2 and study.best_trials


@pytest.mark.slow
def test_kill_9_and_rerun_resumes_the_interrupted_trial(tmp_path: Path) -> None:
    config = write_sweep(tmp_path, max_steps=40, save_every=2, batch_size=1, epochs=10)
    config.write_text(config.read_text().replace("choices = [0.01, 0.02]", "choices = [0.01]"))
    out = tmp_path / "sweep"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    command = [sys.executable, "-m", "bindkit", "sweep", str(config), "--out", str(out), "-q"]
    worker = subprocess.Popen(command, env=env, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while not list(out.glob("trials/*/checkpoint/state.pt")):
        assert worker.poll() is None, worker.stderr.read() if worker.stderr else ""
        assert time.monotonic() < deadline
        time.sleep(0.1)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{out / 'study.db'}")
    assert [t.state.name for t in study.trials] == ["RUNNING"]

    rerun = subprocess.run(
        [*command[:-1]], env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "re-enqueued killed trial(s) [0]" in rerun.stderr
    assert "resuming from" in rerun.stderr  # the trainer continued from the trial's checkpoint
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{out / 'study.db'}")
    assert [t.state.name for t in study.trials] == ["FAIL", "COMPLETE"]
    assert study.trials[1].params == study.trials[0].params
    assert study.trials[1].user_attrs["retry_of"] == 0
    record = json.loads((out / study.trials[1].user_attrs["dir"] / "train.json").read_text())
    assert record["optimizer_steps"] == 40
    rows = read_csv(out / "sweep.csv")
    assert [(r["trial"], r["state"]) for r in rows[1:]] == [
        ("0", "FAIL"), ("1", "COMPLETE"), ("1", "COMPLETE"),
    ]  # fmt: skip
    assert "worker killed" in rows[1]["note"] and "retry of trial 0" in rows[2]["note"]


# -- reuse and concurrency -------------------------------------------------------------------


def _records(out: Path) -> dict[str, dict[str, Any]]:
    """Each trial folder's train.json, by folder name."""
    return {
        p.parent.name: json.loads(p.read_text()) for p in sorted(out.glob("trials/*/train.json"))
    }


def test_a_study_with_other_fixed_values_in_the_same_out_retrains(tmp_path: Path) -> None:
    """Issue 33: the trial folder was a digest of the searched values alone, so study t4
    (max_steps 1) in t's folder reported t's 2-step run as its own."""
    from bindkit.sweep.study import run_sweep

    one_lr = '[search.lr]\ntype = "categorical"\nchoices = [0.01]\n'
    config = write_sweep(tmp_path, search=one_lr)
    out = tmp_path / "s"
    assert run_sweep(config, out, progress=False)["states"] == {"COMPLETE": 1}
    first = _records(out)
    assert [r["optimizer_steps"] for r in first.values()] == [2]
    config.write_text(
        config.read_text()
        .replace('name = "t"', 'name = "t4"')
        .replace("max_steps = 2", "max_steps = 1")
    )
    assert run_sweep(config, out, progress=False)["states"] == {"COMPLETE": 1}
    second = _records(out)
    assert len(second) == 2 and first.items() <= second.items()  # the first run untouched
    (new,) = set(second) - set(first)
    assert second[new]["optimizer_steps"] == 1
    study = optuna.load_study(study_name="t4", storage=f"sqlite:///{out / 'study.db'}")
    assert study.trials[0].user_attrs["dir"] == f"trials/{new}"


def test_a_study_rerun_with_another_definition_is_refused(tmp_path: Path) -> None:
    """The trials of one study are ranked together: another fixed value or objective under the
    same study name is refused with one line (before any trial)."""
    from bindkit.sweep.study import run_sweep

    config = write_sweep(tmp_path)
    out = tmp_path / "s"
    run_sweep(config, out, n_trials=0, progress=False)
    text = config.read_text()
    for old, new, what in [
        ("max_steps = 2", "max_steps = 3", r"another \[train\] max_steps"),
        ('general = "sts"', 'general = "bind"', r"another \[objectives\]"),
        ('score = "spearman"', 'score = "spearman"\nsubset = "default"', r"another \[\[panel\]\]"),
    ]:
        config.write_text(text.replace(old, new, 1))
        with pytest.raises(BindkitError, match=rf"study 't' in the storage was run with {what}"):
            run_sweep(config, out, n_trials=0, progress=False)
    (tmp_path / "train.jsonl").write_text((tmp_path / "train.jsonl").read_text() * 2)
    config.write_text(text)
    with pytest.raises(BindkitError, match=r"another \[train\] train"):
        run_sweep(config, out, n_trials=0, progress=False)


def _worker(config: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "BINDKIT_PROGRESS": "0"}
    command = [sys.executable, "-m", "bindkit", "sweep", str(config), "--out", str(out), "-q"]
    return subprocess.Popen(
        [*command, *extra], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _grid_points(out: Path, study: str = "t") -> list[tuple[str, float]]:
    trials = optuna.load_study(study_name=study, storage=f"sqlite:///{out / 'study.db'}").trials
    return sorted((t.state.name, t.params["lr"]) for t in trials)


def test_two_workers_started_together_share_one_study(tmp_path: Path) -> None:
    """Experiment 4 of the turn-4 review: of two workers started at the same moment on one new
    SQLite study, one failed at once (the schema-creation race, or the base panel's lock). Each
    asks for the whole grid: together they run each point exactly once."""
    config = write_sweep(tmp_path)
    out = tmp_path / "s"
    workers = [_worker(config, out), _worker(config, out)]
    results = [w.communicate(timeout=600) for w in workers]
    for worker, (_, err) in zip(workers, results, strict=True):
        assert worker.returncode == 0, err
        assert "Traceback" not in err
    assert _grid_points(out) == [("COMPLETE", 0.01), ("COMPLETE", 0.02)]
    assert len(_records(out)) == 2


@pytest.mark.slow
def test_staggered_grid_workers_run_each_point_once(tmp_path: Path) -> None:
    """The second worker starts once the first one's trial folder exists, and each asks for the
    whole grid. Optuna's grid sampler gave trial n point n of a grid each worker shuffled by its
    own --seed (now refused with grid), and once every point had started it handed a running
    one out again (a duplicate, failed as busy): now each point runs once, then both stop."""
    search = '[search.lr]\ntype = "categorical"\nchoices = [0.01, 0.02, 0.03, 0.04]\n'
    config = write_sweep(tmp_path, search=search)
    config.write_text(config.read_text().replace("trials = 2", "trials = 4"))
    out = tmp_path / "s"
    first = _worker(config, out)
    deadline = time.monotonic() + 300
    while not (out / "trials").is_dir():
        assert first.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    second = _worker(config, out)
    for worker in (first, second):
        _, err = worker.communicate(timeout=600)
        assert worker.returncode == 0, err
    assert _grid_points(out) == [("COMPLETE", lr) for lr in (0.01, 0.02, 0.03, 0.04)]


def _adapters_and_scores(out: Path) -> dict[float, Any]:
    """Per grid point: the raw adapter's sha256 and the scores of every α."""
    import hashlib

    points: dict[float, Any] = {}
    study = optuna.load_study(study_name="t", storage=f"sqlite:///{out / 'study.db'}")
    for trial in study.trials:
        if trial.state.name != "COMPLETE":
            continue
        weights = out / trial.user_attrs["dir"] / "adapter-raw" / "adapter_model.safetensors"
        sha = hashlib.sha256(weights.read_bytes()).hexdigest()
        assert trial.params["lr"] not in points  # each point once
        points[trial.params["lr"]] = (sha, trial.user_attrs["points"])
    return points


@pytest.mark.slow
def test_kill_9_in_a_grid_trial_then_rerun_equals_the_uninterrupted_run(tmp_path: Path) -> None:
    """Experiment 1 of the turn-4 review: killed while its second trial ran, a 3-point grid
    study's rerun failed in Optuna's grid sampler (``KeyError: 'grid_id'``: the retry was
    enqueued without its grid point). Now the rerun finishes the study, and every point's
    adapter and scores equal those of an uninterrupted run."""
    search = '[search.lr]\ntype = "categorical"\nchoices = [0.01, 0.02, 0.03]\n'
    config = write_sweep(tmp_path, search=search, max_steps=6, save_every=1, batch_size=1)
    config.write_text(config.read_text().replace("trials = 2", "trials = 3"))
    reference = tmp_path / "reference"
    done = _worker(config, reference)
    _, err = done.communicate(timeout=900)
    assert done.returncode == 0, err

    out = tmp_path / "killed"
    worker = _worker(config, out)
    deadline = time.monotonic() + 600
    while len(list(out.glob("trials/*/train.json"))) < 1 or not list(
        out.glob("trials/*/checkpoint/state.pt")
    ):
        assert worker.poll() is None, worker.communicate()[1]
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(worker.pid, signal.SIGKILL)
    worker.wait()
    states = [t[0] for t in _grid_points(out)]
    assert states.count("RUNNING") == 1 and states.count("COMPLETE") == 1

    rerun = _worker(config, out)
    _, err = rerun.communicate(timeout=900)
    assert rerun.returncode == 0, err
    assert "Traceback" not in err
    assert [s for s, _ in _grid_points(out)].count("COMPLETE") == 3
    assert _adapters_and_scores(out) == _adapters_and_scores(reference)
    rows = read_csv(out / "sweep.csv")
    assert sum("worker killed" in r["note"] for r in rows) == 1
