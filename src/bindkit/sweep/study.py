"""``run_sweep``: one worker of an Optuna study over ``TrainConfig`` overrides.

A trial trains with :func:`bindkit.train.train_triplets` into ``DIR/trials/<key>``, where the key
is a digest of the trial's whole run identity (:func:`bindkit.train.reuse.run_identity`: the
searched and the fixed values, the input files by content), so a trial that is run again (a retry
after a kill, the same point drawn twice) finds its checkpoint or its finished run there, and a
study with other fixed values (another ``max_steps``) in the same folder never reuses it. Each
adapter — the raw one and one LiNeS copy per ``lines_alphas`` value
(:func:`bindkit.adapters.lines.apply_lines`, no retraining) — is scored on the panel through
:func:`bindkit.evaluate` (results under the trial's folder, the embedding cache shared). Optuna
sees the raw adapter's objectives; every point, LiNeS ones included, enters the front in
``sweep.csv`` / ``sweep.md`` / ``sweep.png``.

The study lives in an Optuna storage: ``sqlite:///DIR/study.db`` by default, or any URL Optuna's
RDB storage takes (``--storage postgresql://…``), so several ``bindkit sweep`` processes — on one
machine or many — are workers of one study. Workers sharing ``DIR`` take ``DIR/.sweep.lock`` (a
file lock they wait on) to open the storage, to score the base model once, and to draw each
trial, so workers started together do not race on the schema or the base panel, and a grid
point is drawn by one worker only. A killed worker's trial is failed and re-enqueued with the
same parameters (and, in a grid study, the same grid point): at once by the next worker on the
same host (its process is gone), else by any worker once its heartbeat is older than the grace
period.

A study keeps the definition it was started with (fixed ``[train]`` values, panel, objectives):
rerunning it with another one is refused, since its trials would be ranked against the old ones.
"""

from __future__ import annotations

import dataclasses
import math
import os
import socket
import sys
from pathlib import Path
from typing import Any

from bindkit._io import canonical_json, sha256_bytes, sha256_file
from bindkit._lock import process_alive
from bindkit.errors import BindkitError
from bindkit.recipes.panel import panel_changes, score_panel
from bindkit.recipes.recipe import Recipe
from bindkit.sweep.config import (
    MAX_SEED,
    MAX_TRIALS,
    PATH_FIELDS,
    Param,
    SweepConfig,
    base_model,
    check_count,
    load_config,
    point_adapter,
    spec_with_adapter,
)
from bindkit.train.config import TrainConfig

STUDY_DB = "study.db"
TRIALS = "trials"
LOCK = ".sweep.lock"
HEARTBEAT_S = 30
GRACE_S = 120


class DivergedError(Exception):
    """A trial whose loss or scores are not finite: recorded as failed, the study goes on."""


def trial_key(config: TrainConfig) -> str:
    """The trial's folder name: a digest of its run identity (every option but the output
    ones, the inputs by content), the same rule the trainer resumes and reuses by."""
    from bindkit.train.reuse import run_identity

    return "p-" + sha256_bytes(canonical_json(run_identity(config)).encode())[:12]


def recipe_trial_key(recipe: Recipe) -> str:
    """A recipe trial's folder name: a digest of the whole trial recipe (fixed values and
    parameters, input files by content); each of its runs is then reused or resumed by the
    trainer's run identity."""
    from bindkit.recipes.runner import recipe_identity

    return "r-" + sha256_bytes(canonical_json(recipe_identity(recipe, None)).encode())[:12]


def study_definition(config: SweepConfig) -> dict[str, Any]:
    """What every trial of a study shares, so that they can be ranked together: the fixed
    ``[train]`` values, the panel and the objectives; a data file by its content (a data folder
    by its name), so that workers on other machines, their files elsewhere, agree."""

    def data(value: str | None) -> Any:
        # by content, not path: workers on other machines hold the same files elsewhere
        if value is None:
            return None
        path = Path(value)
        if path.is_file():
            return {"sha256": sha256_file(path)}
        return {"folder": path.name} if path.is_dir() else value

    fixed = {
        k: (data(v) if k in PATH_FIELDS and isinstance(v, str) else v)
        for k, v in sorted(config.fixed.items())
    }
    panel = [{**dataclasses.asdict(p), "data": data(p.data)} for p in config.panel]
    objectives = {k: list(v) for k, v in config.objectives.items()}
    shared: dict[str, Any] = {"train": fixed, "panel": panel, "objectives": objectives}
    if config.recipe is not None:  # the recipe with its fixed changes, inputs by content
        from bindkit.recipes.runner import recipe_identity

        shared["recipe"] = recipe_identity(config.recipe.replace(**config.fixed), None)
    # as the storage gives it back (JSON), so that a stored definition compares equal
    definition: dict[str, Any] = json_round_trip(shared)
    return definition


def json_round_trip(value: Any) -> Any:
    """``value`` as JSON storage gives it back (lists for tuples), for comparing with it."""
    import json

    return json.loads(json.dumps(value))


def definition_change(old: dict[str, Any], new: dict[str, Any]) -> str | None:
    """The part of a study's definition that changed (``[train] max_steps``, ``[[panel]]``,
    ``[objectives]``), or None."""
    before, now = old.get("train") or {}, new["train"]
    for key in sorted({*before, *now}):
        if before.get(key) != now.get(key):
            return f"[train] {key}"
    if old.get("recipe") != new.get("recipe"):
        return "[recipe]"
    if old.get("panel") != new["panel"]:
        return "[[panel]]"
    if old.get("objectives") != new["objectives"]:
        return "[objectives]"
    return None


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
    """The study's sampler. A grid is walked in ``study.seed``'s order by every worker: Optuna's
    grid sampler gives trial ``n`` point ``n`` of its shuffled grid, so workers with other
    shuffles would run some points twice and skip others."""
    import optuna

    seed = config.seed if seed is None else seed
    if config.sampler == "grid":
        space = {p.name: p.grid() for p in config.search}
        return optuna.samplers.GridSampler(space, seed=config.seed)
    if config.sampler == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=seed)
    if config.sampler == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    return optuna.samplers.TPESampler(seed=seed)


def grid_points_left(study: Any, config: SweepConfig) -> bool:
    """Whether a grid study has a trial to run: a waiting one (a re-enqueued retry), or a grid
    point no trial has started. Asked under the draw lock, so two workers never take one point
    (Optuna's grid sampler would hand a started point out again once none is left)."""
    from optuna.trial import TrialState

    space = json_round_trip({p.name: list(p.grid()) for p in sorted(config.search, key=_name)})
    points = math.prod(len(v) for v in space.values())
    started = set()
    for trial in study.get_trials(deepcopy=False):
        if trial.state == TrialState.WAITING:
            return True
        attrs = trial.system_attrs
        if "grid_id" in attrs and attrs.get("search_space") == space:
            started.add(attrs["grid_id"])
    return len(started) < points


def _name(param: Param) -> str:
    return param.name


def open_storage(url: str) -> Any:
    """An Optuna RDB storage with heartbeats, whose stale trials are retried.

    Workers started together on one new database race to create its tables (workers sharing
    ``OUT`` open it under its lock; others may not): the loser's "already exists" or duplicate
    schema version is retried, once the winner's tables are there.
    """
    import time
    import warnings

    import optuna
    from optuna import storages

    retry: dict[str, Any]
    for attempt in range(5):
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
            racing = "already exists" in str(exc) or "alembic_version" in str(exc)
            if racing and attempt < 4:
                time.sleep(0.5)
                continue
            raise BindkitError(f"--storage: cannot open it ({type(exc).__name__}: {exc})") from None
    raise AssertionError("unreachable")


def reclaim_dead_trials(study: Any, storage: Any) -> list[int]:
    """Fail and re-enqueue the RUNNING trials of workers on this host whose process is gone.

    The retry is the killed trial's copy, as Optuna's own heartbeat retry makes it: the same
    parameters (``fixed_params``) and system attributes, so a grid study's retry keeps its grid
    point (without ``grid_id`` Optuna's grid sampler fails on it, and would run the point's
    neighbour instead). Returns the numbers of the trials reclaimed. Trials of other hosts are
    left to Optuna's heartbeat (they are failed and retried once stale).
    """
    import optuna
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
            retry = optuna.trial.create_trial(
                state=TrialState.WAITING,
                system_attrs={**trial.system_attrs, "fixed_params": dict(trial.params)},
                user_attrs={"retry_of": trial.number},
            )
            study.add_trial(retry)
            reclaimed.append(trial.number)
    return reclaimed


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
    """The function Optuna calls per trial.

    ``drawn`` is called once the trial's parameters are drawn: the worker releases its draw
    lock there (see :func:`run_sweep`), before the long part, training and scoring.
    """

    def __init__(
        self, config: SweepConfig, out: Path, progress: bool, threads: int | None = None
    ) -> None:
        self.config, self.out, self.progress = config, out, progress
        self.threads = threads  # a recipe trial's torch threads (run_recipe's pin)
        self.drawn: Any = lambda: None

    def __call__(self, trial: Any) -> tuple[float, ...]:
        from bindkit._lock import LockedError
        from bindkit.errors import TrainingDivergedError
        from bindkit.train.loop import RAW
        from bindkit.train.trainer import train_triplets

        config = self.config
        try:
            trial.set_user_attr("worker", {"host": socket.gethostname(), "pid": os.getpid()})
            params = {p.name: suggest(trial, p) for p in config.search}
        finally:
            self.drawn()
        if config.recipe is not None:
            return self.recipe_trial(trial, params)
        train_config = config.train_config(params, self.out / TRIALS, self.progress)
        key = trial_key(train_config)
        folder = self.out / TRIALS / key
        trial.set_user_attr("dir", f"{TRIALS}/{key}")
        train_config = dataclasses.replace(train_config, out=str(folder))
        try:
            # the trainer's reuse rule: a finished run of this identity is returned as it is
            record = train_triplets(train_config, reuse=True)
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
        return self.score(trial, train_config.model, folder, folder / RAW, _depth(record))

    def recipe_trial(self, trial: Any, params: dict[str, Any]) -> tuple[float, ...]:
        """A recipe trial: ``run_recipe`` into ``trials/<recipe digest>``, its shipped raw
        adapter (and LiNeS copies) scored on the sweep's panel."""
        from bindkit._lock import LockedError
        from bindkit.errors import TrainingDivergedError
        from bindkit.recipes.runner import run_recipe

        recipe = self.config.trial_recipe(params)
        key = recipe_trial_key(recipe)
        folder = self.out / TRIALS / key
        trial.set_user_attr("dir", f"{TRIALS}/{key}")
        try:
            run_recipe(recipe, folder, progress=self.progress, threads=self.threads)
        except LockedError as exc:
            trial.set_user_attr("failure", f"busy: {exc}")
            raise DivergedError(str(exc)) from None
        except TrainingDivergedError as exc:
            trial.set_user_attr("failure", f"non-finite training: {exc}")
            raise DivergedError(f"trial {trial.number}: {exc}") from None
        return self.score(trial, recipe.model, folder, folder / "adapter-raw", None)

    def score(
        self, trial: Any, model: str, folder: Path, raw: Path, depth: int | None
    ) -> tuple[float, ...]:
        """Score the raw adapter and its LiNeS copies on the panel; the raw point's objectives
        are Optuna's."""
        from bindkit.adapters.lines import apply_lines

        config = self.config
        points: list[dict[str, Any]] = []
        for alpha in (1.0, *config.lines_alphas):
            adapter = raw
            if alpha != 1.0:
                adapter = point_adapter(folder, alpha)
                if not (adapter / "lines.json").is_file():
                    apply_lines(  # no lines.json: what is there is unfinished, replace it
                        raw, adapter, alpha=alpha, num_layers=depth, overwrite=True
                    )
            spec = spec_with_adapter(model, adapter)
            scores = score_panel(spec, config.panel, folder / "results")
            values = objective_values(config, scores)
            if not _finite([*scores.values(), *values.values()]):
                trial.set_user_attr("failure", f"non-finite scores at alpha {alpha:g}")
                raise DivergedError(f"trial {trial.number}: scores are not finite")
            # the change vs base with its paired interval, made here by the trial's own worker
            # (another worker never writes this trial's results: the report only reads them)
            changes = {
                name: None if change is None else vars(change)
                for name, change in panel_changes(
                    model, spec, config.panel, folder / "results"
                ).items()
            }
            points.append(
                {"alpha": alpha, "scores": scores, "objectives": values, "changes": changes}
            )
        trial.set_user_attr("points", points)
        return tuple(points[0]["objectives"][name] for name in config.objectives)


def _depth(record: dict[str, Any]) -> int | None:
    lines = record.get("lines") or {}
    depth = lines.get("num_layers")
    return int(depth) if depth else None


def check_sweep_inputs(config: SweepConfig, out: Path) -> None:
    """The sweep's models (fixed, the recipe's, or every choice of a ``model`` parameter), its
    panel and the recipe's panel, and ``out``: one line each, before any trial
    (:func:`bindkit.recipes.preflight.check_before_work`)."""
    from bindkit.recipes.preflight import check_before_work

    recipe = config.recipe.replace(**config.fixed) if config.recipe is not None else None
    models = [str(recipe.model)] if recipe is not None else []
    if "model" in config.fixed:
        models.append(str(config.fixed["model"]))
    models += [str(c) for p in config.search if p.name == "model" for c in p.choices]
    panel = [*config.panel, *(recipe.panel if recipe is not None else ())]
    check_before_work(models, panel, out, where=str(config.path))


def run_sweep(
    config_path: str | Path,
    out: str | Path,
    *,
    storage: str | None = None,
    n_trials: int | None = None,
    seed: int | None = None,
    progress: bool = True,
    threads: int | None = None,
) -> dict[str, Any]:
    """Run one worker of the study: ``n_trials`` trials (default: the file's ``study.trials``),
    then write ``OUT/sweep.md``, ``sweep.csv`` and ``sweep.png`` over the whole study.

    Args:
        config_path: The sweep TOML (see :mod:`bindkit.sweep.config`).
        out: The sweep folder: trials, results, the default SQLite study.
        storage: An Optuna storage URL shared by the workers (default ``sqlite:///OUT/study.db``).
        n_trials: Trials this worker runs (0: only rewrite the outputs).
        seed: The sampler's seed (default: the file's); give each worker its own (not with
            the grid sampler, whose order is the file's in every worker).
        progress: Training progress bars and one line per trial.
        threads: A recipe trial's torch CPU threads, pinned with deterministic kernels as
            ``bindkit finetune --threads`` pins them (a CPU rerun gives the same bytes).

    Returns:
        A summary: the study name, trial counts by state, the output paths.
    """
    import warnings

    import optuna

    from bindkit._io import make_dirs
    from bindkit._lock import os_lock
    from bindkit.sweep.report import write_outputs

    config = load_config(config_path)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BindkitError(f"--out {out}: is a file; give a folder for the sweep")
    if n_trials is not None:
        check_count("--n-trials", n_trials, MAX_TRIALS)
    if seed is not None:
        check_count("--seed", seed, MAX_SEED)
        if config.sampler == "grid":
            raise BindkitError(
                f"--seed {seed}: the grid sampler walks the grid in study.seed's order in every "
                "worker (so that no point runs twice); leave --seed out"
            )
    check_sweep_inputs(config, out)
    make_dirs(out)
    url = storage or f"sqlite:///{(out / STUDY_DB).resolve()}"
    # one worker at a time opens the storage, scores the base model and draws a trial
    lock = os_lock(out / LOCK, blocking=True)
    with lock:
        study, rdb = _open_study(config, url, seed)
        reclaimed = reclaim_dead_trials(study, rdb)
        if reclaimed and progress:
            print(f"sweep: re-enqueued killed trial(s) {reclaimed}", file=sys.stderr)
        if "base" not in study.user_attrs:
            model = base_model(config)
            if model:
                base = score_panel(model, config.panel, out / "base-results")
                study.set_user_attr(
                    "base", {"scores": base, "objectives": objective_values(config, base)}
                )
    objective = Objective(config, out, progress, threads)
    count = config.trials if n_trials is None else n_trials

    def rewrite(study: Any, trial: Any) -> None:
        write_outputs(study, config, out)
        if progress:
            print(f"sweep: trial {trial.number} {trial.state.name}", file=sys.stderr)

    for _ in range(count):
        lock.acquire()
        try:
            if config.sampler == "grid":
                # a stale trial of a worker elsewhere is failed and re-enqueued first (Optuna
                # does that when a trial starts; this worker may start none)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    optuna.storages.fail_stale_trials(study)
                if not grid_points_left(study, config):
                    break
            objective.drawn = lock.release  # once the trial's point is drawn
            study.optimize(objective, n_trials=1, catch=(DivergedError,), callbacks=[rewrite])
        finally:
            objective.drawn = lambda: None
            if lock.is_locked:
                lock.release()
    paths = write_outputs(study, config, out)
    states: dict[str, int] = {}
    for trial in study.get_trials(deepcopy=False):
        states[trial.state.name] = states.get(trial.state.name, 0) + 1
    return {"study": config.name, "states": states, "outputs": [str(p) for p in paths]}


def _open_study(config: SweepConfig, url: str, seed: int | None) -> tuple[Any, Any]:
    """The study in the storage (created if new), checked to have this file's definition."""
    import optuna

    rdb = open_storage(url)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=config.name,
        storage=rdb,
        sampler=make_sampler(config, seed),
        directions=["maximize"] * len(config.objectives),
        load_if_exists=True,
    )
    attrs = study.user_attrs
    if attrs.get("objectives", list(config.objectives)) != list(config.objectives):
        raise BindkitError(
            f"{config.path}: study {config.name!r} in the storage has objectives "
            f"{attrs['objectives']}; use another study.name for these"
        )
    definition = study_definition(config)
    if "definition" in attrs:
        change = definition_change(attrs["definition"], definition)
        if change:
            raise BindkitError(
                f"{config.path}: study {config.name!r} in the storage was run with another "
                f"{change}; its trials would be ranked against these, so use another study.name"
            )
    else:
        study.set_user_attr("definition", definition)
    study.set_user_attr("objectives", list(config.objectives))
    from bindkit.sweep.report import name_metrics  # Optuna's tools name them, not "Objective 0"

    name_metrics(study, list(config.objectives))
    return study, rdb
