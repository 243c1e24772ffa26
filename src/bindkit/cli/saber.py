"""``bindkit saber generate|validate``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

_MAX_SHOWN = 50


def register(commands: Any) -> None:
    group = commands.add_parser("saber", help="build and check SABER benchmark directories")
    sub = group.add_subparsers(title="saber commands", metavar="COMMAND")
    group.set_defaults(handler=lambda _args: group.print_help() or 2)

    gen = sub.add_parser(
        "generate",
        help="generate a SABER directory (saber.jsonl + manifest.json)",
        description="Generate the SABER multiple-choice benchmark deterministically.",
    )
    gen.add_argument("--out", required=True, type=Path, help="output directory")
    gen.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    gen.add_argument(
        "--per-n",
        type=int,
        default=200,
        help="MCQs per object count N, half independent and half nested; even (default: 200)",
    )
    gen.add_argument("--n-min", type=int, default=2, help="smallest N, >= 2 (default: 2)")
    gen.add_argument("--n-max", type=int, default=10, help="largest N (default: 10)")
    gen.add_argument(
        "--vocab",
        type=Path,
        default=None,
        help="vocabulary directory (objects.txt, colors.txt, attributes.toml); default: built-in",
    )
    gen.add_argument(
        "--overwrite",
        action="store_true",
        help="replace saber.jsonl and manifest.json in a non-empty --out",
    )
    gen.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    gen.set_defaults(handler=_generate)

    val = sub.add_parser(
        "validate",
        help="re-check every SABER rule on a directory",
        description="Re-check every SABER rule; exit status 1 when any rule is violated.",
    )
    val.add_argument("directory", type=Path, help="directory holding saber.jsonl")
    val.add_argument(
        "--vocab",
        type=Path,
        default=None,
        help="vocabulary the data was built from (default: built-in)",
    )
    val.add_argument(
        "--all", action="store_true", help=f"list every violation (default: first {_MAX_SHOWN})"
    )
    val.set_defaults(handler=_validate)


def _generate(args: argparse.Namespace) -> int:
    from bindkit.saber.build import generate_saber

    manifest = generate_saber(
        args.out,
        seed=args.seed,
        per_n=args.per_n,
        n_min=args.n_min,
        n_max=args.n_max,
        vocab=args.vocab,
        overwrite=args.overwrite,
    )
    if not args.quiet:
        c = manifest["counts"]
        print(
            f"wrote {args.out}/saber.jsonl: {c['mcqs']} MCQs ({c['independent']} independent, "
            f"{c['nested']} nested in {c['chains']} chains), {c['candidates']} candidates"
        )
        print("  N     " + " ".join(f"{n:>4}" for n in c["by_n"]))
        print("  MCQs  " + " ".join(f"{v:>4}" for v in c["by_n"].values()))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from bindkit.saber.validate import RULES, validate_saber

    report = validate_saber(args.directory, vocab=args.vocab)
    if report.ok:
        print(f"{args.directory}: {report.mcqs} MCQs, every rule holds")
        return 0
    shown = report.violations if args.all else report.violations[:_MAX_SHOWN]
    for violation in shown:
        print(violation)
    if len(shown) < len(report.violations):
        print(f"... {len(report.violations) - len(shown)} more (pass --all to list them)")
    print(f"\n{len(report.violations)} violation(s) in {report.mcqs} MCQs:", file=sys.stderr)
    for rule, count in report.by_rule().most_common():
        print(f"  {rule:<20} {count:>6}  {RULES[rule]}", file=sys.stderr)
    return 1
