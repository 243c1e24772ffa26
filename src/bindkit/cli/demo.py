"""``bindkit demo finetune``: a thin wrapper over :mod:`bindkit.demo.finetune`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError


def register(commands: Any) -> None:
    demo = commands.add_parser("demo", help="one-command demonstrations")
    kinds = demo.add_subparsers(title="demos", metavar="DEMO")
    finetune = kinds.add_parser(
        "finetune",
        help="train all-MiniLM-L6-v2 for binding on the CPU and compare before/after",
        description="The packaged recipe binding-v1 (`bindkit finetune --recipe binding-v1`): "
        "template triplets (NoOverlap with SABER) → LoRA on all-MiniLM-L6-v2, two preserved "
        "seeds averaged → OUT/report.md, OUT/adapter (the recipe's LiNeS α; α 1: LiNeS off), "
        "OUT/adapter-raw.",
    )
    finetune.add_argument("--out", required=True, help="output directory")
    finetune.add_argument(
        "--model",
        default="st:default",
        choices=("st:default", "builtin:tiny-clip", "builtin:tiny-vlm"),
        help="st:default (binding triplets, the default), builtin:tiny-clip or builtin:tiny-vlm "
        "(text-only LoRA, "
        "SABER-shapes tt/ti/it/ii before and after)",
    )
    finetune.add_argument(
        "--steps", type=int, default=None, help="tiny-clip/tiny-vlm: optimizer steps (200/300)"
    )
    finetune.add_argument("--sts", default=None, help="STS file to report (e.g. SICK_trial.txt)")
    finetune.add_argument(
        "--scpp", default=None, help="SugarCrepe++ data folder: adds its text-only TOT columns"
    )
    finetune.add_argument(
        "--sugarcrepe",
        default=None,
        help="SugarCrepe data folder: adds its text-only columns (query: another caption of "
        "the image)",
    )
    finetune.add_argument(
        "--threads", type=int, default=2, help="torch CPU threads (pinned: the table reproduces)"
    )
    from bindkit.demo.finetune import DEMO_RECIPES, RECIPE

    finetune.add_argument(
        "--recipe",
        default=RECIPE,
        choices=DEMO_RECIPES,
        help="st:default: the packaged recipe to run",
    )
    finetune.add_argument(
        "--examples",
        type=int,
        default=None,
        help="st:default: template examples to generate (default: 24000)",
    )
    finetune.add_argument(
        "--max-triplets", type=int, default=None, help="st:default: cap the training triplets"
    )
    finetune.add_argument(
        "--saber-per-n", type=int, default=None, help="smaller SABER for quick runs"
    )
    finetune.add_argument(
        "--preserve-weight",
        type=float,
        default=None,
        help="st:default: distillation weight (default: the recipe's, binding-v1)",
    )
    finetune.add_argument(
        "--plain",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="also train without preservation, the comparison row (default: --no-plain)",
    )
    finetune.add_argument(
        "--soup",
        type=int,
        default=None,
        help="preserved runs (seeds SEED, SEED+1, ...) averaged into the adapter "
        "(default: binding-v1's runs, 2)",
    )
    finetune.add_argument("--seed", type=int, default=0, help="seed of data and training")
    finetune.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    finetune.set_defaults(handler=_finetune)
    demo.set_defaults(handler=lambda args: (demo.print_help(), 2)[1])


def _finetune(args: argparse.Namespace) -> int:
    if args.model in ("builtin:tiny-clip", "builtin:tiny-vlm"):
        from bindkit._environment import note_version_drift

        note_version_drift()  # (the st:default demo: run_recipe prints it)
        return _tiny_clip(args)
    if args.steps is not None:
        raise BindkitError("--steps: only with --model builtin:tiny-clip or builtin:tiny-vlm")
    from bindkit.demo.finetune import DemoOptions, run_demo

    options = DemoOptions(
        out=args.out,
        sts=args.sts,
        scpp=args.scpp,
        sugarcrepe=args.sugarcrepe,
        threads=args.threads,
        examples=args.examples,
        max_triplets=args.max_triplets,
        saber_per_n=args.saber_per_n,
        preserve_weight=args.preserve_weight,
        plain=bool(args.plain),
        soup=args.soup,
        seed=args.seed,
        progress=not args.quiet,
        recipe=args.recipe,
    )
    summary = run_demo(options)
    print((__import__("pathlib").Path(args.out) / "report.md").read_text())
    return 0 if summary["table"] else 1


def _tiny_clip(args: argparse.Namespace) -> int:
    from bindkit.demo.tiny_clip import TinyClipDemoOptions, run_tiny_clip_demo
    from bindkit.demo.tiny_vlm import TinyVlmDemoOptions, run_tiny_vlm_demo

    vlm = args.model == "builtin:tiny-vlm"

    for flag, value in (
        ("--sts", args.sts),
        ("--scpp", args.scpp),
        ("--sugarcrepe", args.sugarcrepe),
    ):
        if value is not None:
            raise BindkitError(f"{flag}: not with --model {args.model} (text-only captions)")
    st_only = (
        ("--soup", args.soup),
        ("--plain/--no-plain", args.plain),
        ("--examples", args.examples),
        ("--max-triplets", args.max_triplets),
        ("--preserve-weight", args.preserve_weight),
    )
    for flag, value in st_only:  # the tiny-clip recipe has no such knob: it would do nothing
        if value is not None:
            raise BindkitError(f"{flag}: only with --model st:default (the binding-triplet demo)")
    extra = {"saber_per_n": args.saber_per_n} if args.saber_per_n is not None else {}
    steps = {"steps": args.steps} if args.steps is not None else {}
    options = (TinyVlmDemoOptions if vlm else TinyClipDemoOptions)(
        out=args.out,
        threads=args.threads,
        seed=args.seed,
        progress=not args.quiet,
        **extra,
        **steps,
    )
    summary = (run_tiny_vlm_demo if vlm else run_tiny_clip_demo)(options)  # type: ignore[arg-type]
    print((Path(args.out) / "demo.md").read_text(encoding="utf-8"))
    return 0 if summary["table"] else 1
