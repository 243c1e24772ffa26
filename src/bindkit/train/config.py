"""Training configs: one dataclass per front end, the CLI flags, the validation and the record.

:class:`TrainConfig` (``bindkit train triplets``) and :class:`ClusterTrainConfig` (``bindkit train
clusters``) share every option of the loop (:class:`BaseTrainConfig`: LoRA, optimiser, schedule,
GradCache, LiNeS, preservation, checkpoints), so the two commands have the same flag names; each
adds its data file and its loss's options. Each field's ``metadata["help"]`` is its
documentation and ``metadata["range"]`` its allowed values: :func:`add_arguments` builds argparse
options from the fields (argparse adds each default once, ``%(default)s``) and ``__post_init__``
checks every number (finite, in range, the range in the message) before anything loads. Every
count has an upper bound (shown in ``--help``), so a typo like ``--epochs 1e12`` is refused at
once instead of running for ever; and an option that has no effect in the chosen mode
(``--margin`` with ``--loss infonce``, ``--preserve-relational`` without ``--preserve``, …) is
refused rather than recorded as if it had been used.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from bindkit.errors import BindkitError
from bindkit.train.seed_values import SEED002

PRECISIONS = ("auto", "fp32", "bf16")
SCHEDULES = ("constant", "linear")
TRIPLET_LOSSES = ("hinge", "infonce")


@dataclass(frozen=True)
class Range:
    """Allowed values of a number: ``low``/``high`` bounds (None: unbounded), open or closed."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False

    def __contains__(self, value: float) -> bool:
        if self.low is not None and (value <= self.low if self.low_open else value < self.low):
            return False
        return not (
            self.high is not None and (value >= self.high if self.high_open else value > self.high)
        )

    def __str__(self) -> str:
        if self.high is None:
            return f"{'>' if self.low_open else '>='} {_number(self.low)}"
        left, right = "(" if self.low_open else "[", ")" if self.high_open else "]"
        return f"in {left}{_number(self.low)}, {_number(self.high)}{right}"


def _number(value: float | None) -> str:
    if value is None:
        return "-inf"
    return f"{int(value)}" if float(value).is_integer() else f"{value:g}"


UNIT = Range(0, 1)
# Upper bounds: far beyond any real run, low enough that a typo fails at once.
STEPS = Range(0, 1_000_000)  # optimizer steps (warm-up, eval and checkpoint periods)
WEIGHT = Range(0, 1000)  # the weight of an auxiliary loss term
TEMPERATURE = Range(0.001, 10)  # below 1e-3 the logits (cosine/τ ≤ 2000) overflow the loss
SEEDS = Range(0, 2**31 - 1)
BATCH = Range(1, 65_536)


def _help(text: str, range: Range | None = None, **extra: Any) -> Any:
    return {"help": text, "range": range, **extra}


def _default(base: Any, name: str, value: Any) -> Any:
    """Field ``name`` of ``base`` with another default (same help and range)."""
    return field(default=value, metadata=base.__dataclass_fields__[name].metadata)


def _seed002(name: str, metadata: Any = None) -> Any:
    """Field ``name`` with seed 002's default (:data:`~bindkit.train.seed_values.SEED002`), its
    help ending with where the value comes from; ``metadata``: a new field's, else the loop's
    (docs/seed-choices.md#seed-002s-training-recipe-bindkit-train-clusters)."""
    source = SEED002[name]
    metadata = metadata or BaseTrainConfig.__dataclass_fields__[name].metadata
    keys = ("help", "negative") if isinstance(source.value, bool) else ("help",)
    marked = {k: f"{metadata[k]} [{source.label}]" for k in keys if k in metadata}
    return field(default=source.value, metadata={**metadata, **marked})


@dataclass(kw_only=True)
class BaseTrainConfig:
    """The options of the training loop, shared by every objective (``bindkit train KIND``)."""

    # which files the run reads (provenance, checks, resume identity), by field name
    DATA_FIELDS: ClassVar[tuple[str, ...]] = ("val", "sts", "preserve")
    OBJECTIVE: ClassVar[str] = ""

    model: str = field(metadata=_help("model spec to finetune, e.g. st:default or mllm:PATH"))
    out: str = field(metadata=_help("output directory: adapters, model card, checkpoints"))
    val: str | None = field(
        default=None, metadata=_help("validation triplet JSONL: accuracy every --eval-every steps")
    )
    sts: str | None = field(
        default=None,
        metadata=_help("STS file (tsv/csv/jsonl) that the LiNeS sweep trades against val accuracy"),
    )
    lr: float = field(
        default=5e-5,
        metadata=_help(
            "AdamW learning rate; 5e-5 suits 2B+ models, small ones need ~1e-3",
            Range(0, 1, low_open=True),
        ),
    )
    weight_decay: float = field(default=0.01, metadata=_help("AdamW weight decay", UNIT))
    schedule: str = field(
        default="constant",
        metadata=_help(
            "learning-rate schedule after the warm-up: constant, or linear decay to 0",
            choices=SCHEDULES,
        ),
    )
    warmup_steps: int = field(
        default=0, metadata=_help("optimizer steps of linear learning-rate warm-up", STEPS)
    )
    # at most 1000: the plan seeds epoch e of seed s with s·1000 + e, distinct for e < 1000
    epochs: float = field(
        default=1,
        metadata=_help(
            "passes over the training file; a fraction ends the last pass early (1.5: "
            "ceil(1.5 x an epoch's batches) batches)",
            Range(0, 1000, low_open=True),
            whole_or_fraction=True,
        ),
    )
    max_steps: int | None = field(
        default=None,
        metadata=_help("stop after this many optimizer steps (default: all)", Range(1, 1_000_000)),
    )
    grad_accum: int = field(
        default=1, metadata=_help("micro-batches per optimizer step", Range(1, 1024))
    )
    max_length: int | None = field(
        default=None,
        metadata=_help(
            "token limit of every input the run embeds (training batches, val and STS scores): "
            "longer texts are cut; the model's own limit when that is lower (unset: the "
            "model's own)",
            Range(1, 1 << 20),
        ),
    )
    chunk_size: int = field(
        default=0,
        metadata=_help(
            "GradCache: inputs per forward pass with gradients, so a large batch fits in memory "
            "with the same gradients (0: one forward per micro-batch)",
            Range(0, 65_536),
        ),
    )
    gradient_checkpointing: bool = field(
        default=False,
        metadata=_help(
            "recompute each layer's activations in the backward pass instead of keeping them: "
            "activation memory of one layer instead of all, the same loss and gradients, about "
            "a third more compute"
        ),
    )
    lora_r: int = field(default=4, metadata=_help("LoRA rank", Range(1, 1024)))
    lora_alpha: float = field(
        default=4.0,
        metadata=_help("LoRA alpha (scaling alpha/r)", Range(0, 4096, low_open=True)),
    )
    lora_dropout: float = field(
        default=0.0, metadata=_help("LoRA dropout", Range(0, 1, high_open=True))
    )
    model_dropout: bool = field(
        default=True,
        metadata=_help(
            "keep the frozen model's own dropout active while training, as peft and "
            "sentence-transformers do",
            negative="switch the frozen model's own dropout off while training: a deterministic "
            "forward, faster on CPU",
        ),
    )
    lines: bool = field(
        default=True,
        metadata=_help(
            "apply LiNeS to the final adapter",
            negative="write only the raw LoRA update (no LiNeS adapter, no alpha sweep)",
        ),
    )
    lines_alpha: float | None = field(
        default=None,
        metadata=_help("LiNeS alpha (beta = 1 - alpha); default: chosen by a sweep on --val", UNIT),
    )
    lines_tolerance: float = field(
        default=1.0,
        metadata=_help(
            "sweep: keep alphas whose val accuracy is within this many points of raw",
            Range(0, 100),
        ),
    )
    preserve: str | None = field(
        default=None,
        metadata=_help(
            "text/JSONL file of sentences whose base-model embeddings are preserved (distillation)"
        ),
    )
    preserve_weight: float = field(
        default=1.0, metadata=_help("weight of the preservation (distillation) term", WEIGHT)
    )
    preserve_relational: float = field(
        default=0.0,
        metadata=_help(
            "weight of relational preservation: the base model's cosine between every two "
            "preservation sentences of a micro-batch, kept (needs --preserve-batch 2 or more)",
            WEIGHT,
        ),
    )
    preserve_batch: int = field(
        default=32,
        metadata=_help("preservation sentences mixed into each micro-batch", Range(1, 4096)),
    )
    attn_loss: bool = field(
        default=False,
        metadata=_help(
            "add the attention binding loss on the queries (bindkit.train.attention_loss)"
        ),
    )
    attn_tau: float = field(
        default=0.1, metadata=_help("attention loss target margin tau", Range(0, 2))
    )
    attn_weight: float = field(default=0.1, metadata=_help("attention loss weight lambda", WEIGHT))
    eval_every: int = field(
        default=0,
        metadata=_help("validation accuracy every K optimizer steps (0: at the end)", STEPS),
    )
    save_every: int = field(
        default=100,
        metadata=_help(
            "checkpoint every K optimizer steps (0: never); a rerun resumes from it", STEPS
        ),
    )
    precision: str = field(
        default="auto",
        metadata=_help("auto (bf16 autocast on GPU), fp32 or bf16", choices=PRECISIONS),
    )
    seed: int = field(default=0, metadata=_help("seed of LoRA init and data order", SEEDS))
    overwrite: bool = field(
        default=False, metadata=_help("start over even if OUT holds a checkpoint or a finished run")
    )
    progress: bool = field(
        default=True,
        metadata=_help("show progress", negative="print no progress bar and no status lines"),
    )

    def __post_init__(self) -> None:
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        self._check_numbers(values)
        if float(self.epochs).is_integer():  # 1.0 and 1 are one run (one identity)
            self.epochs = int(self.epochs)
        self.check_modes()
        for name in self.DATA_FIELDS:
            if getattr(self, name) is not None:  # an exported split trains as its file
                setattr(self, name, self._data_file(name, getattr(self, name)))

    @classmethod
    def field_error(cls, name: str, value: Any) -> str | None:
        """Why ``value`` cannot be field ``name`` (an unknown name or a wrong type), else None."""
        import difflib

        fields = {f.name for f in dataclasses.fields(cls)}
        if name not in fields:
            close = difflib.get_close_matches(name, sorted(fields), n=1)
            return f"not a {cls.__name__} field" + (f" (did you mean {close[0]}?)" if close else "")
        kind = typing.get_type_hints(cls)[name]
        wanted = _base_type(kind)
        if value is None and type(None) in typing.get_args(kind):
            return None
        ok = (
            isinstance(value, bool)
            if wanted is bool
            else isinstance(value, int | float) and not isinstance(value, bool)
            if wanted is float
            else type(value) is int
            if wanted is int
            else isinstance(value, wanted)
        )
        return None if ok else f"{name} takes a {wanted.__name__}"

    @classmethod
    def check_values(cls, values: typing.Mapping[str, Any], *, given: tuple[str, ...] = ()) -> None:
        """The checks of ``__post_init__`` on some of the fields (a recipe's ``[train]`` table),
        the rest at their defaults: names and types (:meth:`field_error`), choices and ranges,
        the modes, and the data files ``values`` names; ``given``: the data fields the caller
        sets later (they count as set for the modes; their files are checked then).

        Raises:
            BindkitError: the first problem, in the message ``__post_init__`` gives for it.
        """
        for name, value in values.items():
            problem = cls.field_error(name, value)
            if problem:
                raise BindkitError(f"{name} {value!r}: {problem}")
        defaults = {
            f.name: f.default
            for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING
        }
        cls._check_numbers({**defaults, **values})
        cls._check_mode_values({**defaults, **dict.fromkeys(given, "given"), **values})
        for name in cls.DATA_FIELDS:
            if values.get(name) is not None:
                cls._data_file(name, values[name])

    @classmethod
    def _check_numbers(cls, values: typing.Mapping[str, Any]) -> None:
        """Each field's choices and range (finite, whole where an int), for ``values``' fields."""
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name not in values:
                continue
            value = values[f.name]
            flag = f"--{_flag(f.name)}"
            choices = f.metadata.get("choices")
            if choices is not None and value not in choices:
                raise BindkitError(f"{flag} {value}: use {', '.join(choices)}")
            allowed = f.metadata.get("range")
            if allowed is None or value is None:
                continue
            kind = _base_type(hints[f.name])
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise BindkitError(f"{flag} {value!r}: give a number {allowed}")
            if kind is int and not float(value).is_integer():
                raise BindkitError(f"{flag} {value}: give a whole number {allowed}")
            if not math.isfinite(value) or value not in allowed:
                raise BindkitError(f"{flag} {value}: give a finite number {allowed}")

    @classmethod
    def _data_file(cls, name: str, value: str) -> str:
        """Data field ``name``'s file (an exported split, HFDIR:train or hf:ID:val, as its
        file); refused in one line when it is not there."""
        from bindkit.hfdata.read import local_path

        local = local_path(value, option=f"--{_flag(name)}")
        path = str(local) if local != Path(value) else value
        if not Path(path).is_file():
            raise BindkitError(f"--{_flag(name)} {path}: file not found{_MAKES.get(name, '')}")
        return path

    def check_modes(self) -> None:
        """Refuse an option set away from its default in a mode where it has no effect.

        Raises:
            BindkitError: naming the option and the mode it needs.
        """
        self._check_mode_values({f.name: getattr(self, f.name) for f in dataclasses.fields(self)})

    @classmethod
    def _check_mode_values(cls, values: typing.Mapping[str, Any]) -> None:
        for name, needs, active in cls._modes(values):
            if not active and values[name] != _field_default(cls, name):
                raise BindkitError(
                    f"--{_flag(name)} {values[name]}: has no effect without {needs}; "
                    f"drop it or add {needs}"
                )
        if values["preserve_relational"] > 0 and values["preserve_batch"] == 1:
            raise BindkitError(
                f"--preserve-relational {values['preserve_relational']} with --preserve-batch 1: "
                "the relational term compares pairs of a micro-batch's preservation sentences, "
                "and one sentence makes no pair; give --preserve-batch 2 or more"
            )

    @classmethod
    def _modes(cls, v: typing.Mapping[str, Any]) -> list[tuple[str, str, bool]]:
        """(option, what it needs, whether that is given): the options that act only in a mode."""
        preserving = v["preserve"] is not None
        sweeping = v["lines"] and v["lines_alpha"] is None
        return [
            ("preserve_relational", "--preserve FILE", preserving),
            ("lines_alpha", f"LiNeS ({cls._lines_flag()})", v["lines"]),
            (
                "lines_tolerance",
                f"the LiNeS alpha sweep (no --lines-alpha; {cls._lines_flag()})",
                sweeping,
            ),
            ("attn_tau", "--attn-loss", v["attn_loss"]),
            ("attn_weight", "--attn-loss", v["attn_loss"]),
        ]

    @classmethod
    def _lines_flag(cls) -> str:
        return "drop --no-lines" if _field_default(cls, "lines") else "--lines"

    def record(self) -> dict[str, Any]:
        """The options as written into the model card and checkpoints."""
        return dataclasses.asdict(self)

    def inputs(self) -> dict[str, str]:
        """The files the run reads, by option name."""
        return {n: getattr(self, n) for n in self.DATA_FIELDS if getattr(self, n) is not None}


@dataclass(kw_only=True)
class TrainConfig(BaseTrainConfig):
    """Options of ``bindkit train triplets``; every field is a CLI flag (``--lora-r`` …)."""

    DATA_FIELDS: ClassVar[tuple[str, ...]] = ("train", "val", "sts", "preserve")
    OBJECTIVE: ClassVar[str] = "triplets"

    train: str = field(
        metadata=_help("triplet JSONL file (query/positive/negative rows, as bindkit synth writes)")
    )
    batch_size: int = field(
        default=32, metadata=_help("triplets per device per micro-batch", BATCH)
    )
    loss: str = field(
        default="hinge",
        metadata=_help(
            "hinge: the seed's triplet hinge over cosine; infonce: each query against every "
            "positive and negative of the batch (multiple-negatives ranking with hard negatives)",
            choices=TRIPLET_LOSSES,
        ),
    )
    margin: float = field(
        default=0.05, metadata=_help("hinge margin over cosine (--loss hinge)", Range(0, 2))
    )
    temperature: float = field(
        default=0.05,
        metadata=_help(
            "InfoNCE temperature tau (--loss infonce; 0.05 is sentence-transformers' scale 20)",
            TEMPERATURE,
        ),
    )

    @classmethod
    def _modes(cls, v: typing.Mapping[str, Any]) -> list[tuple[str, str, bool]]:
        return [
            *super()._modes(v),
            ("margin", "--loss hinge", v["loss"] == "hinge"),
            ("temperature", "--loss infonce", v["loss"] == "infonce"),
        ]


@dataclass(kw_only=True)
class ClusterTrainConfig(BaseTrainConfig):
    """Options of ``bindkit train clusters``: seed 002's recipe as defaults. Each default that
    bindkit sets for it says in its help where it comes from: the paper's section (LoRA r 8, AdamW
    5e-5, linear schedule after 100 warm-up steps, τ 0.02, max length 1024, 1.5 epochs, 448 x 448
    training images, GradCache, B 256) or bindkit's reason (α 16, weight decay 0, chunk size,
    no LiNeS); :data:`bindkit.train.seed_values.SEED002` holds them, and
    docs/seed-choices.md#seed-002s-training-recipe-bindkit-train-clusters lists them."""

    DATA_FIELDS: ClassVar[tuple[str, ...]] = ("clusters", "val", "sts", "preserve")
    OBJECTIVE: ClassVar[str] = "clusters"

    clusters: str = field(metadata=_help("cluster JSONL file, as `bindkit mine` writes it"))
    clusters_per_step: int = _seed002(
        "clusters_per_step",
        _help("B, clusters per device per micro-batch (effective batch B·(k+1) pairs)", BATCH),
    )
    temperature: float = _seed002("temperature", _help("InfoNCE temperature tau", TEMPERATURE))
    in_batch: bool = _seed002(
        "in_batch",
        _help("the baseline: every positive of the global batch is a negative"),
    )
    image_size: int = _seed002(
        "image_size",
        _help(
            "training images squashed to SIZE x SIZE, then through the model family's resizes "
            "and image processor at that size (a multiple of its patch grid); val, STS and "
            "later evaluation keep the model's own resolution (0: no resize)",
            Range(0, 16384),
        ),
    )
    lr: float = _seed002("lr")
    weight_decay: float = _seed002("weight_decay")
    schedule: str = _seed002("schedule")
    warmup_steps: int = _seed002("warmup_steps")
    epochs: float = _seed002("epochs")
    max_length: int | None = _seed002("max_length")
    chunk_size: int = _seed002("chunk_size")
    lora_r: int = _seed002("lora_r")
    lora_alpha: float = _seed002("lora_alpha")
    lora_dropout: float = _seed002("lora_dropout")
    lines: bool = _seed002("lines")


# what writes each data file, for its "file not found"
_MAKES = {
    "train": "; `bindkit synth generate --n 1000 --out DIR` writes DIR/train.jsonl and val.jsonl "
    "(`bindkit demo finetune --out demo` writes demo/data/)",
    "val": "; `bindkit synth generate --n 1000 --out DIR` writes DIR/val.jsonl",
    "sts": "; `bindkit fetch sts` downloads SICK",
}


def _flag(name: str) -> str:
    return name.replace("_", "-")


def _field_default(config: type[BaseTrainConfig], name: str) -> Any:
    return next(f.default for f in dataclasses.fields(config) if f.name == name)


def _whole_or_fraction(text: str) -> int | float:
    """``--epochs 2`` as 2, ``--epochs 1.5`` as 1.5: a whole count keeps its integer form (in
    messages, and in the run identity of runs made before fractions were allowed)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number such as 1 or 1.5") from None
    return int(value) if value.is_integer() else value


def _base_type(kind: Any) -> Any:
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    return args[0] if args else kind


# The options that change nothing about the result, each with the reason (resuming and reusing
# may change them freely). Every other field is part of a run's identity
# (bindkit.train.reuse.run_identity); tests/test_identity.py fails on a field of neither kind.
OUTPUT_ONLY_FIELDS: dict[str, str] = {
    "out": "where the run is written, not what it computes",
    "progress": "what is printed while it runs",
    "overwrite": "what happens to an earlier run in --out",
    "save_every": "how often a checkpoint is written (a resume restores the exact state)",
    "eval_every": "how often validation is printed (scores only, no effect on the weights)",
    "gradient_checkpointing": "recomputes activations in the backward pass: the same loss and "
    "gradients, less memory (tests/test_train_memory.py); a run that ran out of memory resumes "
    "with it on",
}
NON_RESULT_FIELDS = frozenset(OUTPUT_ONLY_FIELDS)


def add_arguments(
    parser: argparse.ArgumentParser, config: type[BaseTrainConfig] = TrainConfig
) -> None:
    """Add one option per field of ``config`` (help and choices from the field's metadata).

    Required options come first, then the objective's own, then the loop's; defaults are shown
    once, by argparse's ``%(default)s``.
    """
    hints = typing.get_type_hints(config)
    shared = {f.name for f in dataclasses.fields(BaseTrainConfig)}
    fields = sorted(
        dataclasses.fields(config),
        key=lambda f: (f.default is not dataclasses.MISSING, f.name in shared),
    )
    for f in fields:
        kind = hints[f.name]
        flag = f"--{_flag(f.name)}"
        help_text = f.metadata["help"]
        if kind is bool:
            if f.default is True:
                negative = f.metadata.get("negative", f"do not {help_text}")
                # -q/--quiet: the one quiet flag of every other command, here too
                quiet = ("-q", "--quiet") if f.name == "progress" else ()
                parser.add_argument(
                    *quiet,
                    f"--no-{_flag(f.name)}",
                    dest=f.name,
                    action="store_false",
                    help=negative,
                )
            else:
                parser.add_argument(flag, dest=f.name, action="store_true", help=help_text)
            continue
        required = f.default is dataclasses.MISSING
        default = None if required else f.default
        shown = "" if required or default is None else " (default: %(default)s)"
        allowed = f.metadata.get("range")
        bounds = f"; {allowed}" if allowed is not None else ""
        parser.add_argument(
            flag,
            dest=f.name,
            type=_whole_or_fraction if f.metadata.get("whole_or_fraction") else _base_type(kind),
            required=required,
            default=default,
            choices=f.metadata.get("choices"),
            help=help_text + bounds + shown,
        )


def from_args(
    args: argparse.Namespace, config: type[BaseTrainConfig] = TrainConfig
) -> BaseTrainConfig:
    """Build a ``config`` from parsed arguments (validated).

    On the command line, --preserve-weight and --preserve-batch are refused without --preserve
    (they would change nothing). The library accepts them: the demo's comparison run without
    preservation keeps the recipe's values in its record.
    """
    built = config(**{f.name: getattr(args, f.name) for f in dataclasses.fields(config)})
    if built.preserve is None:  # after the range checks: a bad number is named as such first
        for name in ("preserve_weight", "preserve_batch"):
            if getattr(built, name) != _field_default(config, name):
                raise BindkitError(
                    f"--{_flag(name)} {getattr(built, name)}: has no effect without --preserve "
                    "FILE; drop it or add --preserve FILE"
                )
    return built
