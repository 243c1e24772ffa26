"""``run_sweep``: one worker of an Optuna study over ``TrainConfig`` overrides.

A trial trains with :func:`bindkit.train.train_triplets` into ``DIR/trials/<key>``, where the key
is a digest of its parameters, so a trial that is run again (a retry after a kill, or the same
point drawn twice) finds its checkpoint or its finished run there. Each adapter — the raw one
and one LiNeS copy per ``lines_alphas`` value (:func:`bindkit.adapters.lines.apply_lines`, no
retraining) — is scored on the panel through :func:`bindkit.evaluate` (results under the
trial's folder, the embedding cache shared). Optuna sees the raw adapter's objectives; every
point, LiNeS ones included, enters the front in ``sweep.csv`` / ``sweep.md`` / ``sweep.png``.

The study lives in an Optuna storage: ``sqlite:///DIR/study.db`` by default, or any URL Optuna's
RDB storage takes (``--storage postgresql://…``), so several ``bindkit sweep`` processes — on one
machine or many — are workers of one study. A killed worker's trial is failed and re-enqueued
with the same parameters: at once by the next worker on the same host (its process is gone),
else by any worker once its heartbeat is older than the grace period.
"""

from __future__ import annotations

import json
import math
import os
import socket
import sys
from pathlib import Path
from typing import Any

from bindkit._io import canonical_json, sha256_bytes
from bindkit._lock import process_alive
from bindkit.errors import BindkitError
from bindkit.sweep.config import PanelEntry, Param, SweepConfig, load_config

STUDY_DB = "study.db"
TRIALS = "trials"
HEARTBEAT_S = 30
GRACE_S = 120


class DivergedError(Exception):
    """A trial whose loss or scores are not finite: recorded as failed, the study goes on."""


def trial_key(params: dict[str, Any]) -> str:
    """A stable folder name for a set of parameters.

    Example:
        >>> trial_key({"lr": 0.001}) == trial_key({"lr": 0.001})
        True
    """
    return "p-" + sha256_bytes(canonical_json(params).encode())[:12]


def suggest(trial: Any, param: Param) -> Any:
    """Draw one parameter from the trial (Optuna's suggest_* for the declared distribution)."""
    if param.kind == "categorical":
        return trial.suggest_categorical(param.name, list(param.choices))
    if param.kind == "int":
        return trial.suggest_int(
            param.name, int(param.low or 0), int(param.high or 0), step=int(param.step or 1)
        )
    return trial.suggest_float(
        param.name, param.low, param.high, step=param.step, log=param.kind == "log-float"
    )


def make_sampler(config: SweepConfig, seed: int | None) -> Any:
    import optuna

    seed = config.seed if seed is None else seed
    if config.sampler == "grid":
        return optuna.samplers.GridSampler({p.name: p.grid() for p in config.search}, seed=seed)
    if config.sampler == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if config.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def open_storage(url: str) -> Any:
    """An Optuna RDB storage with heartbeats, whose stale trials are retried."""
    import warnings

    import optuna
    from optuna import storages

    retry: dict[str, Any]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            if hasattr(storages, "RetryHeartbeatStaleTrialCallback"):  # optuna >= 4.9
                callback = storages.RetryHeartbeatStaleTrialCallback()
                retry = {"heartbeat_stale_trial_callback": callback}
            else:
                retry = {"failed_trial_callback": storages.RetryFailedTrialCallback()}
            return storages.RDBStorage(
                url, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S, **retry
            )
    except Exception as exc:  # sqlalchemy's and Optuna's errors: a bad URL, a server away
        raise BindkitError(f"--storage: cannot open it ({type(exc).__name__}: {exc})") from None


def reclaim_dead_trials(study: Any, storage: Any) -> list[int]:
    """Fail and re-enqueue the RUNNING trials of workers on this host whose process is gone.

    Returns the numbers of the trials reclaimed. Trials of other hosts are left to Optuna's
    heartbeat (they are failed and retried once stale).
    """
    from optuna.trial import TrialState

    host, reclaimed = socket.gethostname(), []
    for trial in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = trial.user_attrs.get("worker") or {}
        pid = worker.get("pid")
        if worker.get("host") != host or not isinstance(pid, int) or pid == os.getpid():
            continue
        if process_alive(pid):
            continue
        # FrozenTrial has no public id; the storage API is keyed by it
        storage.set_trial_user_attr(trial._trial_id, "failure", "worker killed")
        if storage.set_trial_state_values(trial._trial_id, TrialState.FAIL):
            study.enqueue_trial(trial.params, user_attrs={"retry_of": trial.number})
            reclaimed.append(trial.number)
    return reclaimed


def spec_with_adapter(model: str, adapter: Path | None) -> str:
    return model if adapter is None else f"{model}+adapter={adapter}"


def score_panel(model: str, panel: tuple[PanelEntry, ...], results: Path) -> dict[str, float]:
    """Each panel entry's score for ``model`` (through :func:`bindkit.evaluate`, resumable)."""
    from bindkit.evaluation import evaluate

    scores: dict[str, float] = {}
    for entry in panel:
        records = evaluate(
            [model],
            task=entry.task,
            data=entry.data,
            pairings=entry.pairing,
            subsets=entry.subset,
            out=results,
            report=False,
            verbose=False,
        )
        values = []
        for record in records:
            if entry.score not in record["scores"]:
                known = ", ".join(k for k, v in record["scores"].items() if not isinstance(v, dict))
                raise BindkitError(
                    f"panel {entry.name}: task {entry.task} has no score {entry.score!r} "
                    f"(it gives {known})"
                )
            values.append(float(record["scores"][entry.score]))
        if not values:
            raise BindkitError(f"panel {entry.name}: evaluated nothing; check its subset/pairing")
        scores[entry.name] = sum(values) / len(values)
    return scores


def objective_values(config: SweepConfig, scores: dict[str, float]) -> dict[str, float]:
    """Each objective: the mean of its panel scores.

    Example:
        >>> from types import SimpleNamespace
        >>> objective_values(SimpleNamespace(objectives={"b": ("x", "y")}), {"x": 1.0, "y": 0.5})
        {'b': 0.75}
    """
    return {
        name: sum(scores[m] for m in members) / len(members)
        for name, members in config.objectives.items()
    }


def _finite(values: Any) -> bool:
    return all(isinstance(v, int | float) and math.isfinite(v) for v in values)


class Objective:
    """The function Optuna calls per trial."""

    def __init__(self, config: SweepConfig, out: Path, progress: bool) -> None:
        self.config, self.out, self.progress = config, out, progress

    def __call__(self, trial: Any) -> tuple[float, ...]:
        from bindkit._lock import LockedError
        from bindkit.adapters.lines import apply_lines
        from bindkit.errors import TrainingDivergedError
        from bindkit.train.trainer import RAW, train_triplets

        config = self.config
        trial.set_user_attr("worker", {"host": socket.gethostname(), "pid": os.getpid()})
        params = {p.name: suggest(trial, p) for p in config.search}
        key = trial_key(params)
        folder = self.out / TRIALS / key
        trial.set_user_attr("dir", f"{TRIALS}/{key}")
        train_config = config.train_config(params, folder, self.progress)
        done = folder / "train.json"
        try:
            record = (
                json.loads(done.read_text(encoding="utf-8"))
                if done.is_file()
                else train_triplets(train_config)
            )
        except LockedError as exc:
            trial.set_user_attr("failure", f"busy: {exc}")
            raise DivergedError(str(exc)) from None
        except TrainingDivergedError as exc:  # the trainer stops on a non-finite loss or weight
            trial.set_user_attr("failure", f"non-finite training: {exc}")
            raise DivergedError(f"trial {trial.number}: {exc}") from None
        losses = [entry.get("loss") for entry in record.get("history", [])]
        if not _finite(losses):
            trial.set_user_attr("failure", "non-finite training loss")
            raise DivergedError(f"trial {trial.number}: the training loss is not finite")
        points: list[dict[str, Any]] = []
        for alpha in (1.0, *config.lines_alphas):
            adapter = folder / RAW
            if alpha != 1.0:
                adapter = folder / f"adapter-lines-{alpha:g}"
                if not (adapter / "lines.json").is_file():
                    apply_lines(  # no lines.json: what is there is unfinished, replace it
                        folder / RAW,
                        adapter,
                        alpha=alpha,
                        num_layers=_depth(record),
                        overwrite=True,
                    )
            spec = spec_with_adapter(train_config.model, adapter)
            scores = score_panel(spec, config.panel, folder / "results")
            values = objective_values(config, scores)
            if not _finite([*scores.values(), *values.values()]):
                trial.set_user_attr("failure", f"non-finite scores at alpha {alpha:g}")
                raise DivergedError(f"trial {trial.number}: scores are not finite")
            points.append({"alpha": alpha, "scores": scores, "objectives": values})
        trial.set_user_attr("points", points)
        return tuple(points[0]["objectives"][name] for name in config.objectives)


def _depth(record: dict[str, Any]) -> int | None:
    lines = record.get("lines") or {}
    depth = lines.get("num_layers")
    return int(depth) if depth else None


def run_sweep(
    config_path: str | Path,
    out: str | Path,
    *,
    storage: str | None = None,
    n_trials: int | None = None,
    seed: int | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run one worker of the study: ``n_trials`` trials (default: the file's ``study.trials``),
    then write ``OUT/sweep.md``, ``sweep.csv`` and ``sweep.png`` over the whole study.

    Args:
        config_path: The sweep TOML (see :mod:`bindkit.sweep.config`).
        out: The sweep folder: trials, results, the default SQLite study.
        storage: An Optuna storage URL shared by the workers (default ``sqlite:///OUT/study.db``).
        n_trials: Trials this worker runs (0: only rewrite the outputs).
        seed: The sampler's seed (default: the file's); give each worker its own.
        progress: Training progress bars and one line per trial.

    Returns:
        A summary: the study name, trial counts by state, the output paths.
    """
    import optuna

    from bindkit._io import make_dirs
    from bindkit.sweep.report import write_outputs

    config = load_config(config_path)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BindkitError(f"--out {out}: is a file; give a folder for the sweep")
    if n_trials is not None and n_trials < 0:
        raise BindkitError(f"--n-trials {n_trials}: give a whole number >= 0")
    make_dirs(out)
    url = storage or f"sqlite:///{(out / STUDY_DB).resolve()}"
    rdb = open_storage(url)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=config.name,
        storage=rdb,
        sampler=make_sampler(config, seed),
        directions=["maximize"] * len(config.objectives),
        load_if_exists=True,
    )
    if study.user_attrs.get("objectives", list(config.objectives)) != list(config.objectives):
        raise BindkitError(
            f"{config.path}: study {config.name!r} in the storage has objectives "
            f"{study.user_attrs['objectives']}; use another study.name for these"
        )
    study.set_user_attr("objectives", list(config.objectives))
    reclaimed = reclaim_dead_trials(study, rdb)
    if reclaimed and progress:
        print(f"sweep: re-enqueued killed trial(s) {reclaimed}", file=sys.stderr)
    if "base" not in study.user_attrs:
        model = str(config.fixed.get("model", ""))
        if model:
            base = score_panel(model, config.panel, out / "base-results")
            study.set_user_attr(
                "base", {"scores": base, "objectives": objective_values(config, base)}
            )
    objective = Objective(config, out, progress)
    count = config.trials if n_trials is None else n_trials

    def rewrite(study: Any, trial: Any) -> None:
        write_outputs(study, config, out)
        if progress:
            print(f"sweep: trial {trial.number} {trial.state.name}", file=sys.stderr)

    if count:
        study.optimize(objective, n_trials=count, catch=(DivergedError,), callbacks=[rewrite])
    paths = write_outputs(study, config, out)
    states: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        states[trial.state.name] = states.get(trial.state.name, 0) + 1
    return {"study": config.name, "states": states, "outputs": [str(p) for p in paths]}
