"""``bindkit finetune``: a thin wrapper over :func:`bindkit.recipes.runner.run_recipe`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "finetune",
        help="run a finetuning recipe end to end: data, runs, soup, LiNeS, panel, adapter",
        description="Runs RECIPE.toml (or a packaged recipe, --recipe binding-v1): template "
        "data → one LoRA run per [[runs]] entry → soup → LiNeS → panel scores → "
        "OUT/recipe.json, OUT/report.md, OUT/adapter/ (shipped, with the recipe's LiNeS α) and "
        "OUT/adapter-raw/. Rerun to resume; a changed recipe or input is refused (one line "
        "naming it) unless --overwrite.",
    )
    parser.add_argument("recipe_file", nargs="?", metavar="RECIPE.toml", help="the recipe file")
    parser.add_argument(
        "--recipe", default=None, metavar="NAME", help="a packaged recipe instead (binding-v1)"
    )
    parser.add_argument(
        "--model", default=None, help="train this model spec instead of the recipe's model"
    )
    parser.add_argument("--out", default=None, help="output folder (required unless --show)")
    parser.add_argument(
        "--show",
        action="store_true",
        help="print the resolved recipe (every key: value, source, help) and exit; trains nothing",
    )
    parser.add_argument(
        "--set",
        dest="changes",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a recipe key (TOML value): --set data.examples=2000 --set train.lr=1e-3",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="pin torch to N CPU threads with deterministic kernels (a CPU rerun gives the "
        "same bytes); default: torch's own",
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="go ahead when OUT holds a run made otherwise (changed runs retrain)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=_finetune)


def parse_change(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` → (key, TOML value); a bare word is a string."""
    import tomllib

    key, eq, value = text.partition("=")
    if not eq or not key.strip():
        raise BindkitError(f"--set {text}: give KEY=VALUE, e.g. --set data.examples=2000")
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        parsed = value
    return key.strip(), parsed


def _finetune(args: argparse.Namespace) -> int:
    from bindkit._io import check_not_input
    from bindkit._outputs import check_own_output
    from bindkit.recipes.recipe import Recipe, packaged_path, packaged_recipe
    from bindkit.recipes.runner import run_recipe

    if (args.recipe_file is None) == (args.recipe is None):
        raise BindkitError("give a RECIPE.toml file or --recipe NAME (one of them)")
    if args.out is None and not args.show:
        raise BindkitError("--out: required (the output folder); or --show to print the recipe")
    changes = dict(parse_change(c) for c in args.changes)
    if args.model is not None:
        changes["model"] = args.model
    if args.recipe_file is not None:
        if args.out is not None:
            check_not_input(Path(args.out), [Path(args.recipe_file)])
        path = Path(args.recipe_file)
        recipe = Recipe.from_toml(path)
    else:
        recipe = packaged_recipe(args.recipe)
        path = packaged_path(args.recipe)
    if changes:
        recipe = recipe.replace(**changes)
    if args.show:
        return _show(recipe, path, changes)
    check_own_output(Path(args.out), "finetune")  # not into a synth run, a SABER set, ...
    run_recipe(
        recipe, args.out, overwrite=args.overwrite, progress=not args.quiet, threads=args.threads
    )
    print((Path(args.out) / "report.md").read_text(encoding="utf-8"), end="")
    return 0


def _show(recipe: Any, path: Path, changes: dict[str, Any]) -> int:
    """``--show``: the resolved recipe, one line per key with its value, source and help."""
    import tomllib

    from bindkit.recipes.keys import format_resolved, resolve

    written = tomllib.loads(path.read_text(encoding="utf-8"))
    print(f"# {recipe.name} ({path}): every key, its value, where it came from, what it does")
    print(format_resolved(resolve(recipe, written, changes)))
    return 0
