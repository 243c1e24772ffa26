"""A recipe is data: what ``bindkit finetune`` trains, averages, shrinks and scores.

A :class:`Recipe` names the base model; the data (``bindkit synth`` template examples, the
triplet mix of :mod:`bindkit.synth.mixes`, each run's preservation set of
:mod:`bindkit.synth.preservation`); the training (``TrainConfig`` overrides); the runs (one seed
and preservation set each) and the soup that averages them; LiNeS α or the rule that picks it;
the panel; and which adapter is shipped. It is checked on construction, every error one line
naming its TOML key, and round-trips through TOML::

    name = "binding-v1"
    model = "st:default"

    [data]                    # bindkit synth: examples, seed, NoOverlap vocabulary, mix
    examples = 24000
    mix = "fullpararelnegLEOR"

    [train]                   # TrainConfig overrides (no lr: the size rule, recipes.scale)
    batch_size = 32

    [[runs]]                  # one training run each
    name = "preserve"
    seed = 0
    preservation = "ctxgen"   # a synth.preservation set, or "none"

    [soup]                    # optional: runs averaged in weight space
    name = "preserve-soup"
    runs = ["preserve", "preserve-s1"]

    [lines]
    rule = "fixed"            # fixed (alpha) | val-tolerance (the trainer's rule)
    alpha = 1.0

    [select]
    ship = "preserve-soup"    # the run or soup whose adapter is shipped

    [[panel]]                 # bindkit.evaluate(task, data) → scores[score]
    name = "heldout_triplets"
    task = "triplets"
    data = "{test}"           # {val}, {test}: the recipe's files; {saber}: its SABER
    score = "triplet_accuracy"

Packaged recipes live in ``recipes/data/NAME.toml`` (:func:`packaged_recipe`).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError
from bindkit.recipes.panel import (
    PanelEntry,
    as_table,
    check_panel,
    known_keys,
    panel_table,
    read_panel,
)

LINES_RULES = ("fixed", "val-tolerance", "wang-tradeoff")
NO_PRESERVATION = "none"
# Panel data the recipe makes itself: its val and held-out test triplets, its SABER.
PLACEHOLDERS = ("{val}", "{test}", "{saber}")
# TrainConfig fields the recipe sets itself (from [data], [[runs]], [lines]), and the ones a
# run's caller sets (out, progress, overwrite): not [train] keys.
OWN_FIELDS = (
    "model",
    "train",
    "val",
    "preserve",
    "seed",
    "lines",
    "lines_alpha",
    "out",
    "progress",
    "overwrite",
)
_TOP = ("name", "description", "model", "data", "train", "runs", "soup", "lines", "select", "panel")
_DATA = (
    "examples",
    "seed",
    "exclude_vocab",
    "mix",
    "max_triplets",
    "val_triplets",
    "test_triplets",
    "saber_per_n",
)
_RUN = ("name", "seed", "preservation")
_SOUP = ("name", "runs", "weights")
_LINES = ("rule", "alpha")
_SELECT = ("ship", "score")
MAX_EXAMPLES = 1_000_000
MAX_RUNS = 16
MAX_SEED = 2**31 - 1  # TrainConfig's seed range


def _doc(text: str, toml: str | None = None) -> Any:
    """A field's metadata: its help (``bindkit finetune --show``, the docs' recipe-key page) and,
    where the TOML key is not the field's name, that key."""
    return {"help": text, "toml": toml} if toml else {"help": text}


def _count(key: str, value: Any, low: int, high: int) -> None:
    if type(value) is not int or not low <= value <= high:
        raise BindkitError(f"{key} {value!r}: give a whole number from {low:,} to {high:,}")


def _name(key: str, value: Any) -> None:
    if not isinstance(value, str) or not value or value != value.strip() or "/" in value:
        raise BindkitError(f"{key} {value!r}: give a non-empty name without '/'")


def _choice(key: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        close = difflib.get_close_matches(str(value), allowed, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BindkitError(f"{key} {value!r}: unknown{hint}; use one of {', '.join(allowed)}")


@dataclass(frozen=True)
class DataSpec:
    """``[data]``: ``bindkit synth`` template examples → NoOverlap train split → mix."""

    examples: int = field(
        default=24000, metadata=_doc("template examples bindkit synth generates (at least 100)")
    )
    seed: int = field(default=0, metadata=_doc("the data's random seed"))
    exclude_vocab: str = field(
        default="builtin",
        metadata=_doc("the SABER vocabulary NoOverlap excludes: builtin or a vocabulary folder"),
    )
    mix: str = field(
        default="fullpararelnegLEOR",
        metadata=_doc("the training triplet mix (bindkit synth mix --mix)"),
    )
    max_triplets: int | None = field(
        default=None, metadata=_doc("cap on the training triplets (unset: all)")
    )
    val_triplets: int = field(
        default=256, metadata=_doc("the first N of val.jsonl: the trainer's validation file")
    )
    test_triplets: int = field(
        default=1024, metadata=_doc("the first N of test.jsonl: the panel's {test}")
    )
    saber_per_n: int | None = field(
        default=None,
        metadata=_doc(
            "a generated SABER with N MCQs per N as the panel's {saber} (even; unset: "
            "the packaged 200 per N)"
        ),
    )

    def __post_init__(self) -> None:
        from bindkit.saber.build import MAX_PER_N
        from bindkit.synth.mixes import MIXES

        _count("data.examples", self.examples, 100, MAX_EXAMPLES)
        _count("data.seed", self.seed, 0, MAX_SEED)
        if not isinstance(self.exclude_vocab, str) or not self.exclude_vocab:
            raise BindkitError(
                f"data.exclude_vocab {self.exclude_vocab!r}: give 'builtin' or a path"
            )
        _choice("data.mix", self.mix, tuple(MIXES))
        if self.max_triplets is not None:
            _count("data.max_triplets", self.max_triplets, 1, 2 * MAX_EXAMPLES)
        _count("data.val_triplets", self.val_triplets, 1, MAX_EXAMPLES)
        _count("data.test_triplets", self.test_triplets, 1, MAX_EXAMPLES)
        if self.saber_per_n is not None:
            _count("data.saber_per_n", self.saber_per_n, 2, MAX_PER_N)
            if self.saber_per_n % 2:
                raise BindkitError(
                    f"data.saber_per_n {self.saber_per_n}: must be even (half independent MCQs, "
                    "half nested chains)"
                )


@dataclass(frozen=True)
class RunSpec:
    """One ``[[runs]]`` entry: a training run with its seed and preservation set."""

    name: str = field(metadata=_doc("the run's name (its folder under OUT/runs/)"))
    seed: int = field(default=0, metadata=_doc("the run's training seed"))
    preservation: str = field(
        default=NO_PRESERVATION,
        metadata=_doc('the preservation set (bindkit synth preserve --set), or "none"'),
    )

    def __post_init__(self) -> None:
        from bindkit.synth.preservation import PRESERVATION_SETS

        _name("runs.name", self.name)
        _count(f"runs.{self.name}.seed", self.seed, 0, MAX_SEED)
        _choice(
            f"runs.{self.name}.preservation",
            self.preservation,
            (*PRESERVATION_SETS, NO_PRESERVATION),
        )

    @property
    def preserved(self) -> bool:
        return self.preservation != NO_PRESERVATION


@dataclass(frozen=True)
class SoupSpec:
    """``[soup]``: runs averaged in weight space (``bindkit soup``) under ``name``."""

    name: str = field(metadata=_doc("the soup's name (a row of the table, a select.ship)"))
    runs: tuple[str, ...] = field(metadata=_doc("two or more run names to average"))
    weights: tuple[float, ...] | None = field(
        default=None, metadata=_doc("one positive weight per run (unset: the plain mean)")
    )

    def __post_init__(self) -> None:
        _name("soup.name", self.name)
        if len(self.runs) < 2 or len(set(self.runs)) != len(self.runs):
            raise BindkitError(
                f"soup.runs {list(self.runs)!r}: give two or more distinct run names"
            )
        weights = self.weights
        if weights is not None and (
            len(weights) != len(self.runs) or not all(_positive(w) for w in weights)
        ):
            raise BindkitError(
                f"soup.weights {list(weights)!r}: give one finite positive weight per run "
                f"({len(self.runs)})"
            )


def _positive(weight: Any) -> bool:
    return (
        isinstance(weight, int | float)
        and not isinstance(weight, bool)
        and math.isfinite(weight)
        and 0 < weight <= 1000
    )


@dataclass(frozen=True)
class Recipe:
    """A finetuning recipe, checked on construction (see the module docstring for its TOML)."""

    name: str = field(metadata=_doc("the recipe's name"))
    model: str = field(metadata=_doc("the base model spec (bindkit finetune --model overrides)"))
    runs: tuple[RunSpec, ...] = field(metadata=_doc("[[runs]]: one training run each"))
    panel: tuple[PanelEntry, ...] = field(metadata=_doc("[[panel]]: the scores of the table"))
    description: str = field(default="", metadata=_doc("one line on what the recipe is for"))
    data: DataSpec = field(default_factory=DataSpec, metadata=_doc("[data]"))
    train: dict[str, Any] = field(
        default_factory=dict, metadata=_doc("[train]: TrainConfig overrides")
    )
    soup: SoupSpec | None = field(default=None, metadata=_doc("[soup]: runs averaged"))
    lines_rule: str = field(
        default="fixed",
        metadata=_doc("fixed (lines.alpha) or val-tolerance (the trainer's rule)", "lines.rule"),
    )
    lines_alpha: float | None = field(
        default=1.0,
        metadata=_doc(
            'LiNeS alpha of rule "fixed", in [0, 1]; 1 keeps the whole update', "lines.alpha"
        ),
    )
    ship: str | None = field(
        default=None,
        metadata=_doc(
            "the run or soup whose adapter ships (unset: the soup, else the first run)",
            "select.ship",
        ),
    )
    scored: tuple[str, ...] | None = field(
        default=None,
        metadata=_doc(
            "the runs and soup scored on the panel besides base (unset: all)", "select.score"
        ),
    )

    def __post_init__(self) -> None:
        _name("name", self.name)
        if not isinstance(self.model, str) or not self.model:
            raise BindkitError(f"model {self.model!r}: give a model spec (st:default, mllm:…)")
        from bindkit.embed.registry import Spec

        try:
            spec = Spec.parse(self.model)
        except BindkitError as exc:
            raise BindkitError(f"model: {exc}") from None
        if "adapter" in spec.options:
            raise BindkitError(
                f"model {self.model}: already carries an adapter; give the base model spec"
            )
        if not isinstance(self.description, str):
            raise BindkitError("description: give a string")
        if not 1 <= len(self.runs) <= MAX_RUNS:
            raise BindkitError(f"[[runs]]: give 1 to {MAX_RUNS} runs")
        names = [r.name for r in self.runs]
        if len(set(names)) != len(names):
            raise BindkitError(f"runs.name: {names!r} repeats a name")
        if self.soup is not None:
            for run in self.soup.runs:
                if run not in names:
                    raise BindkitError(f"soup.runs: {run!r} is not a run ({', '.join(names)})")
            if self.soup.name in names:
                raise BindkitError(f"soup.name {self.soup.name!r}: also a run's name")
        self._check_train()
        _choice("lines.rule", self.lines_rule, LINES_RULES)
        if self.lines_rule == "fixed":
            from bindkit._checks import check_range

            if self.lines_alpha is None:
                raise BindkitError("lines.alpha: missing; rule fixed needs an alpha in [0, 1]")
            check_range("lines.alpha", self.lines_alpha, 0, 1)
        elif self.lines_alpha is not None:
            raise BindkitError(
                f'lines.alpha: only with rule = "fixed" ({self.lines_rule} picks it)'
            )
        if self.lines_rule == "wang-tradeoff" and self.soup is not None:
            raise BindkitError(
                "lines.rule wang-tradeoff: scores each run's own LiNeS sweep, and a soup has "
                'none; use rule = "fixed" or "val-tolerance" with a [soup]'
            )
        shipped = [*names, *([self.soup.name] if self.soup else [])]
        if self.ship is not None and self.ship not in shipped:
            raise BindkitError(
                f"select.ship {self.ship!r}: not a run or the soup ({', '.join(shipped)})"
            )
        for name in self.scored or ():
            if name not in shipped:
                raise BindkitError(f"select.score: {name!r} is not a run or the soup")
        check_panel("panel", self.panel)
        for index, entry in enumerate(self.panel):
            if entry.data and entry.data.startswith("{") and entry.data not in PLACEHOLDERS:
                raise BindkitError(
                    f"panel[{index}].data {entry.data!r}: use {', '.join(PLACEHOLDERS)} or a path"
                )

    def _check_train(self) -> None:
        from bindkit.train.config import TrainConfig

        if not isinstance(self.train, dict):
            raise BindkitError("[train] must be a table")
        for key, value in self.train.items():
            if key in OWN_FIELDS:
                raise BindkitError(f"train.{key}: the recipe sets {key} itself; remove it")
            problem = TrainConfig.field_error(key, value)
            if problem:
                raise BindkitError(f"train.{key} {value!r}: {problem}")
        # TrainConfig's own checks of these fields; the runs give the files later: a
        # preservation file if a run has one (preserve_relational needs it), none if a run has none
        for preserved in sorted({run.preserved for run in self.runs}):
            try:
                TrainConfig.check_values(self.train, given=("preserve",) if preserved else ())
            except BindkitError as exc:
                where = "" if preserved else " (a run without preservation)"
                raise BindkitError(f"[train]{where}: {exc}") from None

    @property
    def panel_rows(self) -> tuple[str, ...]:
        """The runs and soup scored on the panel, in order (the base model is scored first)."""
        made = (*(r.name for r in self.runs), *([self.soup.name] if self.soup else []))
        return self.scored if self.scored is not None else made

    @property
    def shipped(self) -> str:
        """The run or soup whose adapter ``run_recipe`` ships."""
        if self.ship is not None:
            return self.ship
        return self.soup.name if self.soup is not None else self.runs[0].name

    # -- TOML --------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The recipe as its TOML document (unset optional keys left out)."""
        data = {k: v for k, v in dataclasses.asdict(self.data).items() if v is not None}
        document: dict[str, Any] = {"name": self.name}
        if self.description:
            document["description"] = self.description
        document |= {"model": self.model, "data": data, "train": dict(self.train)}
        document["runs"] = [dataclasses.asdict(r) for r in self.runs]
        if self.soup is not None:
            soup: dict[str, Any] = {"name": self.soup.name, "runs": list(self.soup.runs)}
            if self.soup.weights is not None:
                soup["weights"] = list(self.soup.weights)
            document["soup"] = soup
        lines: dict[str, Any] = {"rule": self.lines_rule}
        if self.lines_alpha is not None:
            lines["alpha"] = self.lines_alpha
        document["lines"] = lines
        document["select"] = {"ship": self.shipped}
        if self.scored is not None:
            document["select"]["score"] = list(self.scored)
        document["panel"] = [panel_table(e) for e in self.panel]
        return document

    def to_toml(self) -> str:
        return dump_toml(self.to_dict())

    def replace(self, **changes: Any) -> Recipe:
        """A copy with ``changes`` by TOML key: ``model``, ``data.examples``, ``train.lr``,
        ``lines.alpha``, ``runs`` (a list of run tables) …; checked as a new recipe. None
        removes a key (``train.lr``: the override; ``soup``: the soup)."""
        document = self.to_dict()
        for key, value in changes.items():
            head, _, tail = key.partition(".")
            if head not in _TOP:
                known_keys("replace", "", {head: None}, _TOP)
            if not tail:
                if value is None:
                    document.pop(head, None)
                else:
                    document[head] = value
                continue
            table = document.setdefault(head, {})
            if not isinstance(table, dict) or "." in tail:
                raise BindkitError(f"{key}: not a key of a recipe table")
            if value is None:
                table.pop(tail, None)
            else:
                table[tail] = value
        return recipe_from_dict(document)

    @classmethod
    def from_toml(cls, path: str | Path) -> Recipe:
        """Read a recipe file; any problem is one line naming the file and the key."""
        path = Path(path)
        try:
            document = tomllib.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise BindkitError(
                f"{path}: file not found; give a recipe TOML file or --recipe NAME"
            ) from None
        except IsADirectoryError:
            raise BindkitError(f"{path}: a directory; give a recipe TOML file") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise BindkitError(f"{path}: not a readable TOML file ({exc})") from None
        try:
            return recipe_from_dict(document, base=path.parent)
        except BindkitError as exc:
            raise BindkitError(f"{path}: {exc}") from None


def recipe_from_dict(document: dict[str, Any], base: Path | None = None) -> Recipe:
    """A :class:`Recipe` from its TOML document (relative paths read from ``base``)."""
    known_keys("", "", document, _TOP)
    data = as_table("", "data", document.get("data", {}))
    known_keys("", "data.", data, _DATA)
    if base is not None and data.get("exclude_vocab", "builtin") != "builtin":
        vocab = Path(data["exclude_vocab"])
        data = {**data, "exclude_vocab": str(vocab if vocab.is_absolute() else base / vocab)}
    train = as_table("", "train", document.get("train", {}))
    runs = document.get("runs")
    if not isinstance(runs, list) or not runs:
        raise BindkitError("[[runs]]: give at least one run (name, seed, preservation)")
    specs = []
    for index, run in enumerate(runs):
        run = as_table("", f"runs[{index}]", run)
        known_keys("", f"runs[{index}].", run, _RUN)
        specs.append(RunSpec(**run))
    soup = None
    if "soup" in document:
        table = as_table("", "soup", document["soup"])
        known_keys("", "soup.", table, _SOUP)
        if not isinstance(table.get("runs"), list):
            raise BindkitError("soup.runs: give a list of run names")
        _names("soup.runs", table["runs"])
        weights = table.get("weights")
        if weights is not None and not isinstance(weights, list):
            raise BindkitError("soup.weights: give a list of numbers")
        soup = SoupSpec(
            name=table.get("name", "soup"),
            runs=tuple(table["runs"]),
            weights=None if weights is None else tuple(weights),
        )
    lines = as_table("", "lines", document.get("lines", {}))
    known_keys("", "lines.", lines, _LINES)
    rule = lines.get("rule", "fixed")
    select = as_table("", "select", document.get("select", {}))
    known_keys("", "select.", select, _SELECT)
    panel = read_panel("", base, document.get("panel"))
    for key in ("name", "model"):
        if key not in document:
            raise BindkitError(f"{key}: missing")
    return Recipe(
        name=document["name"],
        model=document["model"],
        description=document.get("description", ""),
        data=DataSpec(**data),
        train=dict(train),
        runs=tuple(specs),
        soup=soup,
        lines_rule=rule,
        lines_alpha=lines.get("alpha", 1.0 if rule == "fixed" else None),
        ship=select.get("ship"),
        scored=_names("select.score", select["score"]) if "score" in select else None,
        panel=panel,
    )


def _names(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BindkitError(f"{key}: give a list of run names")
    return tuple(value)


def packaged_names() -> list[str]:
    """The names of the recipes shipped with bindkit (``recipes/data/*.toml``)."""
    return sorted(p.stem for p in _packaged_dir().glob("*.toml"))


def _packaged_dir() -> Path:
    return Path(__file__).parent / "data"


def packaged_recipe(name: str) -> Recipe:
    """A packaged recipe by name (``binding-v1``), with a "did you mean" for a typo."""
    names = packaged_names()
    if name not in names:
        close = difflib.get_close_matches(name, names, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BindkitError(
            f"--recipe {name}: no such packaged recipe{hint}; have {', '.join(names)}"
        )
    return Recipe.from_toml(packaged_path(name))


def packaged_path(name: str) -> Path:
    """The TOML file of packaged recipe ``name`` (checked as :func:`packaged_recipe` does)."""
    if name not in packaged_names():
        packaged_recipe(name)  # the one-line error with its "did you mean"
    return _packaged_dir() / f"{name}.toml"


# -- a TOML writer for a recipe's document ----------------------------------------------------
def dump_toml(document: dict[str, Any]) -> str:
    """``document`` as TOML: scalars first, then tables, then arrays of tables (the only
    shapes a recipe has). ``tomllib.loads(dump_toml(d)) == d``."""
    lines: list[str] = []
    scalars = {k: v for k, v in document.items() if not _is_table(v) and not _is_tables(v)}
    lines += [f"{_key(k)} = {_value(v)}" for k, v in scalars.items()]
    for key, value in document.items():
        if _is_table(value):
            lines += ["", f"[{_key(key)}]"]
            lines += [f"{_key(k)} = {_value(v)}" for k, v in value.items()]
        elif _is_tables(value):
            for table in value:
                lines += ["", f"[[{_key(key)}]]"]
                lines += [f"{_key(k)} = {_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def _is_table(value: Any) -> bool:
    return isinstance(value, dict)


def _is_tables(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else _string(key)


def _string(text: str) -> str:
    import json

    return json.dumps(text, ensure_ascii=False)  # a JSON string is a TOML basic string


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise BindkitError(f"{value!r}: not a value a recipe's TOML can hold")
