"""``bindkit mteb ...``: mteb's own command line with bindkit's tasks and models registered.

mteb 2.x offers no hook for outside tasks: no entry point group, and its CLI (``mteb run``,
``mteb available-tasks``) imports nothing of the user's, so ``mteb run -t SABERMCQ`` cannot
find a bindkit task. :func:`main` therefore runs mteb's own parser and commands
(``mteb.cli.build_cli``) in this process after registering (:func:`register`):

- the SABER tasks on the built-in set (``SABERMCQ``, ``SABERRetrievalIndependent``,
  ``SABERRetrievalNested``), always;
- per ``--saber DIR`` and pairing (``--pairings tt,ti``, default ``tt``) ``SABERMCQ-<name>``,
  ``SABERRetrievalIndependent-<name>``, ``SABERRetrievalNested-<name>`` (``SABERMCQT2I-<name>``
  ... for image pairings);
- per ``--triplets FILE`` ``BindkitTriplets-<name>``;
- ``BindkitColorSwap`` / ``BindkitBiVLC`` for ``--colorswap DIR`` / ``--bivlc DIR`` (the Hub's
  parquet files, the scored test split);
- ``BindkitCLEVRBinding`` / ``BindkitPUGSPAR-<subset>`` / ``BindkitPUGSPARE`` for
  ``--clevr-binding DIR`` / ``--pug-spar DIR`` / ``--pug-spare DIR`` (the subsets each
  benchmark reports);
- the model of ``-m bindkit/<spec>`` (any bindkit model spec, e.g. ``bindkit/st:default``):
  loaded by bindkit, served to mteb through :class:`~bindkit.mteb_bridge.mteb_tasks.
  MtebEncoder`, named ``bindkit/<spec>`` at its fingerprint, with the metadata of
  :mod:`bindkit.mteb_bridge.mteb_models`. It runs where its spec says (``+device=cuda``);
  mteb's ``--device`` does not move it. Any other ``-m`` is mteb's own model.

Every other argument is mteb's, unchanged (``-t``, ``--output-folder``, ``--overwrite-strategy``
...), and mteb writes its results (``OUTPUT/results/<model>/<revision>/<Task>.json``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bindkit.errors import BindkitError

PREFIX = "bindkit/"


@dataclass
class Extra:
    """bindkit's own options on an mteb command line."""

    saber: list[str] = field(default_factory=list)
    pairings: list[str] = field(default_factory=lambda: ["tt"])
    triplets: list[str] = field(default_factory=list)
    colorswap: list[str] = field(default_factory=list)
    bivlc: list[str] = field(default_factory=list)
    binding: dict[str, list[str]] = field(default_factory=dict)  # bindkit task → folders


BINDING = {"--clevr-binding": "clevr_binding", "--pug-spar": "pug_spar", "--pug-spare": "pug_spare"}
_OPTIONS = ("--saber", "--pairings", "--triplets", "--colorswap", "--bivlc", *BINDING)


def split_args(tokens: Sequence[str]) -> tuple[Extra, list[str]]:
    """bindkit's options (``--saber DIR``, ``--pairings a,b``, ``--triplets FILE``,
    ``--colorswap DIR``, ``--bivlc DIR``, ``--clevr-binding DIR``, ``--pug-spar DIR``,
    ``--pug-spare DIR``, each also as ``--opt=value``; all but ``--pairings`` repeatable) and
    mteb's arguments, in order."""
    extra, rest = Extra(), []
    values: dict[str, list[str]] = {name: [] for name in _OPTIONS}
    items = list(tokens)
    i = 0
    while i < len(items):
        token = items[i]
        name, eq, value = token.partition("=")
        if name in _OPTIONS:
            if not eq:
                if i + 1 >= len(items) or items[i + 1].startswith("-"):
                    raise BindkitError(f"bindkit mteb: {name} needs a value")
                value = items[i + 1]
                i += 1
            values[name].append(value)
        else:
            rest.append(token)
        i += 1
    extra.saber = values["--saber"]
    extra.triplets = values["--triplets"]
    extra.colorswap = values["--colorswap"]
    extra.bivlc = values["--bivlc"]
    extra.binding = {task: values[option] for option, task in BINDING.items() if values[option]}
    if values["--pairings"]:
        extra.pairings = [p.strip() for v in values["--pairings"] for p in v.split(",") if p]
    return extra, rest


def model_arguments(tokens: Sequence[str]) -> list[str]:
    """Every value of mteb's ``-m`` / ``--model`` in ``tokens``, in order."""
    found = []
    for i, token in enumerate(tokens):
        name, eq, value = token.partition("=")
        if name in ("-m", "--model"):
            if eq:
                found.append(value)
            elif i + 1 < len(tokens):
                found.append(tokens[i + 1])
        elif token.startswith("-m") and len(token) > 2 and not token.startswith("--"):
            found.append(token[2:])
    return found


def model_argument(tokens: Sequence[str]) -> str | None:
    """The value of mteb's ``-m`` / ``--model`` in ``tokens`` (the last one), or None."""
    found = model_arguments(tokens)
    return found[-1] if found else None


def register_tasks(extra: Extra) -> list[str]:
    """Register the tasks of ``extra`` (and the built-in SABER tasks) with mteb; their names."""
    from bindkit.mteb_bridge.mteb_pairs import binding_tasks, pair_task
    from bindkit.mteb_bridge.mteb_tasks import register, saber_tasks, triplet_task

    tasks: list[Any] = list(saber_tasks())
    for data in extra.saber:
        tasks += saber_tasks(data, pairings=extra.pairings)
    tasks += [triplet_task(data) for data in extra.triplets]
    tasks += [pair_task("colorswap", data) for data in extra.colorswap]
    tasks += [pair_task("bivlc", data) for data in extra.bivlc]
    for task, folders in extra.binding.items():
        tasks += [t for data in folders for t in binding_tasks(task, data)]
    register(tasks)
    return [t.metadata.name for t in tasks]


def register_model(name: str) -> Any:
    """For ``bindkit/<spec>``: load the model, register it in mteb's model registry under
    ``name`` (so ``mteb.get_model(name)`` returns it) and return its ``ModelMeta``."""
    import importlib

    from bindkit.embed.registry import load_embedder
    from bindkit.mteb_bridge.mteb_tasks import MtebEncoder

    if not name.startswith(PREFIX) or len(name) == len(PREFIX):
        raise BindkitError(f"bindkit mteb: {name!r} is not bindkit/<model spec>")
    embedder = load_embedder(name[len(PREFIX) :])
    encoder = MtebEncoder(embedder, name=name)

    def load(model_name: str, revision: str | None = None, **kwargs: Any) -> MtebEncoder:
        return encoder  # loaded above; mteb's device choice does not move a bindkit model

    meta = encoder.mteb_model_meta.model_copy(update={"loader": load})
    encoder.mteb_model_meta = meta
    registry = importlib.import_module("mteb.models.model_implementations").MODEL_REGISTRY
    registry[name] = meta
    # mteb.get_model_meta reads the registry name it imported: the same dict object
    return meta


def _missing_extra(exc: ImportError, model: str) -> BindkitError | None:
    """One line for mteb's "Model X is missing required dependencies: ... pip install
    mteb[image]" (a bindkit model that reads images makes mteb ask for its image extra)."""
    lines = str(exc).splitlines()
    if not lines or "missing required dependencies" not in lines[0]:
        return None
    install = next((x for x in lines if "pip install" in x), "")
    command = install[install.find("`") + 1 : install.rfind("`")] if "`" in install else install
    listed = lines[0].split("dependencies:", 1)[1].strip().rstrip(".")
    # "torchvision>0.2.1; extra == "image", ...": the names, without markers
    needs = ", ".join(dict.fromkeys(part.split(";")[0].strip() for part in listed.split(",")))
    return BindkitError(
        f"bindkit mteb: -m {model}: mteb needs {needs} for it; {command.strip()} "
        "(or set MTEB_AUTO_INSTALL_EXTRAS=1 to let mteb install it)"
    )


def main(argv: Sequence[str], *, quiet: bool = False) -> int:
    """Run mteb's CLI on ``argv`` (mteb's arguments plus bindkit's :class:`Extra` options) with
    bindkit's tasks and every ``bindkit/<spec>`` model registered; the exit status.

    ``mteb run`` takes one ``-m``; here each ``-m`` given is run in turn. ``quiet`` keeps
    mteb's log to warnings (as ``-v 1``); the bars follow bindkit's progress policy.
    """
    import logging

    from mteb.cli import build_cli as mteb_cli
    from rich.logging import RichHandler

    extra, rest = split_args(argv)
    parser = mteb_cli.build_cli()
    parser.prog = "bindkit mteb"
    args = parser.parse_args(rest)  # usage errors before any model loads
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    models = model_arguments(rest)
    if func is mteb_cli.run and not models:
        raise BindkitError(
            "bindkit mteb run: give -m MODEL (e.g. -m bindkit/st:default, or one of mteb's "
            "models); several -m run one after another"
        )
    if len(models) > 1 and func is not mteb_cli.run:
        raise BindkitError(f"bindkit mteb: several -m ({', '.join(models)}): give one")
    if quiet and hasattr(args, "verbosity"):
        args.verbosity = min(args.verbosity, 1)
    register_tasks(extra)
    for model in models:
        if model.startswith(PREFIX):
            register_model(model)
    logging.basicConfig(level=logging.WARNING, format="%(message)s", handlers=[RichHandler()])
    if not models:  # a command without a model (available-tasks, ...)
        _run(func, args, None)
    for model in models:
        args.model = model
        _run(func, args, model)
    return 0


def _run(func: Any, args: Any, model: str | None) -> None:
    """mteb's command ``func`` on ``args``, its known failures as one line."""
    try:
        func(args)
    except KeyError as exc:  # mteb's unknown task: "KeyError: 'X' not found. Did you mean ..."
        message = str(exc.args[0]) if exc.args else ""
        if "not found" not in message:
            raise
        raise BindkitError(
            f"mteb: {message.removeprefix('KeyError: ')} (bindkit's tasks: SABERMCQ, "
            "SABERRetrievalIndependent, SABERRetrievalNested; --saber DIR adds "
            "SABERMCQ-<name> ..., --triplets FILE "
            "BindkitTriplets-<name>; `bindkit mteb available-tasks` lists them)"
        ) from None
    except ImportError as exc:
        error = _missing_extra(exc, str(model))
        if error is None:
            raise
        raise error from None
