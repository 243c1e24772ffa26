"""The sweep's TOML file: what is searched, what is fixed, the panel and the objectives.

Every key is checked when the file is read, so a typo fails before the first trial with one line
naming the key::

    [study]
    name = "lr-margin"        # the Optuna study (default: the file's stem)
    sampler = "tpe"           # tpe | nsga2 | grid | random
    trials = 8                # trials per worker (--n-trials overrides)
    seed = 0
    lines_alphas = [0.5, 0.8] # post-hoc LiNeS points of each trial (α = 1, the raw adapter, always)

    [train]                   # fixed TrainConfig fields (paths relative to this file)
    model = "builtin:tiny-clip"
    train = "train.jsonl"

    [search.lr]               # one table per searched TrainConfig field
    type = "log-float"        # float | log-float | int | categorical
    low = 1e-4
    high = 1e-2

    [[panel]]                 # one score: bindkit.evaluate(task, data) → scores[score]
    name = "saber_tt"
    task = "saber"
    data = "saber-shapes"
    score = "mcq_accuracy"
    pairing = "tt"            # optional; subset = "..." likewise

    [objectives]              # all maximised: a panel name, or a list (their mean)
    binding = ["saber_tt"]

Or the sweep searches recipes (:mod:`bindkit.recipes`): a ``[recipe]`` table instead of
``[train]`` names the recipe (``file``, relative to this file, or a packaged ``name``) and its
fixed changes (``[recipe.set]``, recipe keys), and each ``[search."KEY"]`` is a recipe key
(``"train.lr"``, ``"data.mix"``, ``"lines.alpha"``, …). A trial is
``recipe.replace(**set, **params)`` run by :func:`bindkit.recipes.runner.run_recipe`; its folder
is named by the digest of the whole trial recipe, fixed values included::

    [recipe]
    name = "binding-v1"
    [recipe.set]
    "data.examples" = 2000
    "train.max_steps" = 50

    [search."data.mix"]
    type = "categorical"
    choices = ["fullpara", "fullpararelnegLEOR"]
"""

from __future__ import annotations

import dataclasses
import math
import tomllib
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError
from bindkit.recipes.panel import PanelEntry, as_table, known_keys, read_panel
from bindkit.recipes.recipe import Recipe
from bindkit.train.config import TrainConfig

SAMPLERS = ("tpe", "nsga2", "grid", "random")
# Upper bounds: a count past these is a typo, not a plan (each trial trains a model).
MAX_TRIALS = 10_000
MAX_SEED = 2**32 - 1  # numpy's seed range, which every Optuna sampler uses
MAX_ALPHAS = 20
KINDS = ("float", "log-float", "int", "categorical")
# TrainConfig fields that are file paths: relative paths are read from the TOML file's folder.
PATH_FIELDS = ("train", "val", "sts", "preserve")
# Fields the sweep sets itself: each trial has its own output folder.
OWN_FIELDS = ("out", "overwrite")
_TOP = ("study", "train", "recipe", "search", "panel", "objectives")
_RECIPE = ("file", "name", "set")
_STUDY = ("name", "sampler", "trials", "seed", "lines_alphas")
_PARAM = {
    "float": ("type", "low", "high", "step"),
    "log-float": ("type", "low", "high"),
    "int": ("type", "low", "high", "step"),
    "categorical": ("type", "choices"),
}


@dataclass(frozen=True)
class Param:
    """One searched ``TrainConfig`` field and its distribution."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    step: float | None = None
    choices: tuple[Any, ...] = ()

    def grid(self) -> list[Any]:
        """The values a grid sampler walks (categorical parameters only)."""
        if self.kind != "categorical":
            raise BindkitError(
                f'search.{self.name}: the grid sampler needs type = "categorical" (the grid\'s '
                "values)"
            )
        return list(self.choices)


@dataclass(frozen=True)
class SweepConfig:
    """A parsed, validated sweep file."""

    path: Path
    name: str
    sampler: str
    trials: int
    seed: int
    lines_alphas: tuple[float, ...]
    fixed: dict[str, Any]
    search: tuple[Param, ...]
    panel: tuple[PanelEntry, ...]
    objectives: dict[str, tuple[str, ...]] = field(default_factory=dict)
    recipe: Recipe | None = None  # a recipe sweep: fixed holds its [recipe.set] changes

    def trial_recipe(self, params: dict[str, Any]) -> Recipe:
        """The trial's recipe: the recipe, its fixed changes, then the trial's parameters."""
        assert self.recipe is not None
        return self.recipe.replace(**{**self.fixed, **params})

    def train_config(self, params: dict[str, Any], out: Path, progress: bool) -> TrainConfig:
        """The trial's ``TrainConfig``: fixed values, then the trial's parameters."""
        values = {"lines": False, **self.fixed, **params}  # the sweep scores LiNeS itself
        return TrainConfig(**values, out=str(out), progress=progress)


def load_config(path: str | Path) -> SweepConfig:
    """Read and validate a sweep TOML file.

    Raises:
        BindkitError: unreadable TOML, an unknown key or TrainConfig field, a bad distribution,
            a panel or objective that does not fit (one line naming the key).
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BindkitError(f"{path}: file not found; give the sweep's TOML file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise BindkitError(f"{path}: not a readable TOML file ({exc})") from None
    _known(path, "", data, _TOP)
    base = path.parent
    study = _table(path, "study", data.get("study", {}))
    _known(path, "study.", study, _STUDY)
    sampler = study.get("sampler", "tpe")
    if sampler not in SAMPLERS:
        raise BindkitError(f"{path}: study.sampler {sampler!r}: use {', '.join(SAMPLERS)}")
    trials = study.get("trials", 10)
    seed = study.get("seed", 0)
    for key, value, high in (("trials", trials, MAX_TRIALS), ("seed", seed, MAX_SEED)):
        check_count(f"{path}: study.{key}", value, high)
    alphas = study.get("lines_alphas", [])
    if (
        not isinstance(alphas, list)
        or len(alphas) > MAX_ALPHAS
        or len(set(alphas)) != len(alphas)
        or not all(
            isinstance(a, int | float) and not isinstance(a, bool) and 0.0 <= a < 1.0
            for a in alphas
        )
    ):
        raise BindkitError(
            f"{path}: study.lines_alphas {alphas!r}: give a list of at most {MAX_ALPHAS} distinct "
            "LiNeS alphas in [0, 1) (alpha 1, the raw adapter, is always scored)"
        )
    recipe: Recipe | None = None
    fixed: dict[str, Any] = {}
    if "recipe" in data:
        if "train" in data:
            raise BindkitError(f"{path}: [recipe] and [train]: give one (a recipe sets training)")
        recipe, fixed = _recipe(path, base, _table(path, "recipe", data["recipe"]))
    else:
        fixed = _fixed(path, base, _table(path, "train", data.get("train", {})))
    search = _search(
        path, base, _table(path, "search", data.get("search", {})), fixed, recipe is not None
    )
    if sampler == "grid":
        for param in search:
            param.grid()
    panel = _panel(path, base, data.get("panel", []))
    from bindkit.tasks._halves import check_selection

    try:  # the sweep selects on its panel; a recipe sweep's trial recipes report theirs
        reported = () if recipe is None else recipe.panel
        check_selection(panel, "panel", reported=reported, reported_as="the recipe's panel")
    except BindkitError as exc:
        raise BindkitError(f"{path}: {exc}") from None
    objectives = _objectives(path, _table(path, "objectives", data.get("objectives", {})), panel)
    config = SweepConfig(
        path=path,
        name=str(study.get("name", path.stem)),
        sampler=sampler,
        trials=trials,
        seed=seed,
        lines_alphas=tuple(float(a) for a in alphas),
        fixed=fixed,
        search=search,
        panel=panel,
        objectives=objectives,
        recipe=recipe,
    )
    _check_first_point(config)
    return config


def check_count(name: str, value: Any, high: int) -> None:
    """Refuse anything but a whole number in ``[0, high]``, with one line naming it.

    Example:
        >>> check_count("--n-trials", 3, MAX_TRIALS)
    """
    if type(value) is not int or not 0 <= value <= high:
        raise BindkitError(f"{name} {value!r}: give a whole number from 0 to {high}")


def _table(path: Path, key: str, value: Any) -> dict[str, Any]:
    return as_table(str(path), key, value)


def _known(path: Path, prefix: str, table: dict[str, Any], allowed: tuple[str, ...]) -> None:
    known_keys(str(path), prefix, table, allowed)


_FIELDS = {f.name: f for f in dataclasses.fields(TrainConfig)}


def _field_type(name: str) -> type:
    kind = typing.get_type_hints(TrainConfig)[name]
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    return args[0] if args else kind  # type: ignore[no-any-return]


def _check_name(path: Path, key: str, name: str) -> None:
    import difflib

    if name not in _FIELDS:
        close = difflib.get_close_matches(name, list(_FIELDS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BindkitError(f"{path}: {key}: not a TrainConfig field{hint}")
    if name in OWN_FIELDS:
        raise BindkitError(f"{path}: {key}: the sweep sets {name} itself; remove it")


def _check_field(path: Path, key: str, name: str, value: Any) -> None:
    _check_name(path, key, name)
    problem = TrainConfig.field_error(name, value)
    if problem:
        raise BindkitError(f"{path}: {key} {value!r}: {problem}")


def _resolve(base: Path, name: str, value: Any) -> Any:
    if name in PATH_FIELDS and isinstance(value, str):
        return str(base / value) if not Path(value).is_absolute() else value
    return value


def _fixed(path: Path, base: Path, table: dict[str, Any]) -> dict[str, Any]:
    fixed = {}
    for name, value in table.items():
        _check_field(path, f"train.{name}", name, value)
        fixed[name] = _resolve(base, name, value)
    return fixed


def _number(path: Path, key: str, value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise BindkitError(f"{path}: {key} {value!r}: give a finite number")
    return float(value)


def _recipe(path: Path, base: Path, table: dict[str, Any]) -> tuple[Recipe, dict[str, Any]]:
    from bindkit.recipes.recipe import packaged_recipe

    _known(path, "recipe.", table, _RECIPE)
    if ("file" in table) == ("name" in table):
        raise BindkitError(f"{path}: [recipe]: give file (a recipe TOML) or name (a packaged one)")
    if "file" in table:
        file = Path(str(table["file"]))
        recipe = Recipe.from_toml(file if file.is_absolute() else base / file)
    else:
        recipe = packaged_recipe(str(table["name"]))
    fixed = dict(_table(path, "recipe.set", table.get("set", {})))
    try:
        recipe.replace(**fixed)
    except BindkitError as exc:
        raise BindkitError(f"{path}: [recipe.set]: {exc}") from None
    return recipe, fixed


def _search(
    path: Path, base: Path, table: dict[str, Any], fixed: dict[str, Any], recipe: bool = False
) -> tuple[Param, ...]:
    params = []
    for name, spec in table.items():
        key = f"search.{name}"
        if not recipe:  # a TrainConfig field (a recipe key is checked by the corners' recipes)
            _check_name(path, key, name)
        if name in fixed:
            where = "[recipe.set]" if recipe else "[train]"
            raise BindkitError(f"{path}: {key}: also fixed in {where}; keep one")
        spec = _table(path, key, spec)
        kind = spec.get("type")
        if kind not in KINDS:
            raise BindkitError(f"{path}: {key}.type {kind!r}: use {', '.join(KINDS)}")
        _known(path, f"{key}.", spec, _PARAM[kind])
        if not recipe and kind == "categorical" and isinstance(spec.get("choices"), list):
            for value in spec["choices"]:
                _check_field(path, f"{key}.choices", name, value)
            spec = {**spec, "choices": [_resolve(base, name, v) for v in spec["choices"]]}
        elif not recipe and (
            _field_type(name) not in (int, float) or (kind == "int") != (_field_type(name) is int)
        ):
            raise BindkitError(
                f"{path}: {key}.type {kind!r}: {name} takes a {_field_type(name).__name__}; use "
                + ("int" if _field_type(name) is int else "float, log-float or categorical")
            )
        params.append(_distribution(path, key, name, kind, spec))
    return tuple(params)


def _distribution(path: Path, key: str, name: str, kind: str, spec: dict[str, Any]) -> Param:
    """A searched key's distribution: its choices, or its checked bounds and step."""
    if kind == "categorical":
        choices = spec.get("choices")
        if not isinstance(choices, list) or not choices:
            raise BindkitError(f"{path}: {key}.choices: give a non-empty list of values")
        return Param(name, kind, choices=tuple(choices))
    for bound in ("low", "high"):
        if bound not in spec:
            raise BindkitError(f"{path}: {key}.{bound}: missing")
    low, high = (_number(path, f"{key}.{b}", spec[b]) for b in ("low", "high"))
    if not low < high:
        raise BindkitError(f"{path}: {key}: low {low} must be below high {high}")
    if kind == "log-float" and low <= 0:
        raise BindkitError(f"{path}: {key}.low {low}: a log-float needs low > 0")
    step = _number(path, f"{key}.step", spec["step"]) if "step" in spec else None
    if step is not None and step <= 0:
        raise BindkitError(f"{path}: {key}.step {step}: must be positive")
    if kind == "int" and any(v != int(v) for v in (low, high, step or 1)):
        raise BindkitError(f"{path}: {key}: an int distribution needs whole low/high/step")
    return Param(name, kind, low, high, step)


def _panel(path: Path, base: Path, entries: Any) -> tuple[PanelEntry, ...]:
    return read_panel(str(path), base, entries)


def _objectives(
    path: Path, table: dict[str, Any], panel: tuple[PanelEntry, ...]
) -> dict[str, tuple[str, ...]]:
    if not table:
        raise BindkitError(
            f'{path}: [objectives]: declare at least one, e.g. binding = ["saber_tt"]'
        )
    names = {p.name for p in panel}
    objectives = {}
    for name, value in table.items():
        members = [value] if isinstance(value, str) else value
        if (
            not isinstance(members, list)
            or not members
            or not all(isinstance(m, str) for m in members)
        ):
            raise BindkitError(
                f"{path}: objectives.{name}: give a panel name or a list of them (their mean)"
            )
        for member in members:
            if member not in names:
                raise BindkitError(
                    f"{path}: objectives.{name}: {member!r} is not a panel name "
                    f"({', '.join(sorted(names))})"
                )
        objectives[name] = tuple(members)
    return objectives


def _check_first_point(config: SweepConfig) -> None:
    """Build the TrainConfigs of the search space's corners (every low end, every high end,
    each categorical choice) so the trainer's own checks run on them before any trial: a range
    whose far end the trainer refuses fails now, not in the middle of the study."""
    params = {p.name: _end(p, 0) for p in config.search}
    if config.recipe is not None:
        _check_recipe_corners(config, params)
        return
    if "model" not in config.fixed and "model" not in params:
        raise BindkitError(f"{config.path}: [train] model: missing; give the model spec to train")
    if "train" not in config.fixed and "train" not in params:
        raise BindkitError(f"{config.path}: [train] train: missing; give the triplet JSONL file")
    corners = [params, {p.name: _end(p, -1) for p in config.search}]
    for param in config.search:
        corners += [{**params, param.name: choice} for choice in param.choices[1:-1]]
    for corner in corners:
        try:
            config.train_config(corner, config.path.parent / "unused", progress=False)
        except BindkitError as exc:
            raise BindkitError(f"{config.path}: [train]/[search]: {exc}") from None


def _check_recipe_corners(config: SweepConfig, low: dict[str, Any]) -> None:
    corners = [low, {p.name: _end(p, -1) for p in config.search}]
    for param in config.search:
        corners += [{**low, param.name: choice} for choice in param.choices[1:-1]]
    for corner in corners:
        try:
            config.trial_recipe(corner)
        except BindkitError as exc:
            raise BindkitError(f"{config.path}: [recipe]/[search]: {exc}") from None


def _end(param: Param, end: int) -> Any:
    """The low (``end`` 0) or high (-1) end of a distribution: its first or last choice."""
    if param.kind == "categorical":
        return param.choices[end]
    value = param.low if end == 0 else param.high
    assert value is not None
    return int(value) if param.kind == "int" else value


def spec_with_adapter(model: str, adapter: Path | None) -> str:
    return model if adapter is None else f"{model}+adapter={adapter}"


def base_model(config: SweepConfig) -> str:
    """The model every trial starts from ("" when the config names none)."""
    if config.recipe is not None:
        return str(config.recipe.replace(**config.fixed).model)
    return str(config.fixed.get("model", ""))


def point_adapter(folder: Path, alpha: float) -> Path:
    """A trial point's adapter: the raw one (``adapter-raw``, a recipe's and a training run's
    alike) at α 1, else its LiNeS copy ``adapter-lines-<α>``."""
    return folder / ("adapter-raw" if alpha == 1.0 else f"adapter-lines-{alpha:g}")
