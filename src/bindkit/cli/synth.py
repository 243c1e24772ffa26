"""``bindkit synth generate|validate|split``."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any


def register(commands: Any) -> None:
    group = commands.add_parser("synth", help="synthetic text-only binding training data")
    sub = group.add_subparsers(title="synth commands", metavar="COMMAND")
    group.set_defaults(handler=lambda _args: group.print_help() or 2)

    gen = sub.add_parser(
        "generate",
        help="generate validated examples (resumable), then splits and triplets",
        description="Generate until OUT/examples.jsonl holds --n accepted examples; re-running "
        "continues where a run stopped. Then write train/val/test/held-out triplet files.",
    )
    gen.add_argument(
        "--backend",
        choices=["template", "openai"],
        default="template",
        help="template: offline grammar; openai: any OpenAI-compatible server",
    )
    gen.add_argument("--n", type=int, required=True, help="target number of accepted examples")
    gen.add_argument("--out", type=Path, required=True, help="output directory")
    gen.add_argument("--seed", type=int, default=0, help="seed of plans and splits")
    gen.add_argument("--concurrency", type=int, default=8, help="openai: requests in flight")
    gen.add_argument(
        "--base-url",
        default=None,
        help="openai: e.g. http://localhost:8000/v1 (env OPENAI_BASE_URL)",
    )
    gen.add_argument("--llm-model", default=None, help="openai: model name (env BINDKIT_LLM_MODEL)")
    gen.add_argument("--api-key", default=None, help="openai: key (env OPENAI_API_KEY)")
    gen.add_argument("--timeout", type=float, default=120.0, help="openai: seconds per request")
    gen.add_argument("--max-retries", type=int, default=5, help="openai: retries on 429/5xx")
    gen.add_argument(
        "--prompts",
        type=Path,
        default=None,
        help="openai: directory of prompt templates (default: packaged)",
    )
    gen.add_argument(
        "--exclude-vocab",
        default=None,
        metavar="SABER_VOCAB",
        help="NoOverlap: drop examples sharing a word with a SABER vocabulary "
        "directory ('builtin' for the packaged one) when writing splits",
    )
    gen.add_argument("--no-splits", action="store_true", help="only generate examples")
    gen.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    gen.set_defaults(handler=_generate)

    val = sub.add_parser(
        "validate",
        help="check a JSONL file of examples (or triplets) against every rule",
        description="Check every example against the seed's rules; duplicate ids and "
        "attribute-object sets are always checked over the whole file. Triplet files "
        "(train.jsonl, ...) are detected from their rows.",
    )
    val.add_argument("file", type=Path)
    val.add_argument("--all", action="store_true", help="list every rejection (default: 50)")
    val.add_argument(
        "--dataset",
        action="store_true",
        help="the file is a whole run: also check frequency caps, the construction mix and "
        "the anaphoric order balance",
    )
    val.add_argument(
        "--kind",
        choices=["examples", "triplets"],
        default=None,
        help="file kind (default: detected from the first row)",
    )
    val.add_argument(
        "--split",
        choices=["train", "val", "test", "heldout"],
        default=None,
        help="triplets: the split of the file (default: from its name)",
    )
    val.set_defaults(handler=_validate)

    spl = sub.add_parser("split", help="(re)write splits and triplets from DIR/examples.jsonl")
    spl.add_argument("directory", type=Path)
    spl.add_argument("--seed", type=int, default=0)
    spl.add_argument("--exclude-vocab", default=None, metavar="SABER_VOCAB")
    spl.set_defaults(handler=_split)


def _exclude(value: str | None) -> set[str] | None:
    if value is None:
        return None
    from bindkit.synth.splits import saber_words

    return saber_words(None if value == "builtin" else value)


def _generate(args: argparse.Namespace) -> int:
    from bindkit.synth.generate import generate

    backend: Any
    if args.backend == "template":
        from bindkit.synth.backends.template import TemplateBackend

        backend = TemplateBackend(seed=args.seed)
    else:
        from bindkit.synth.backends.openai import OpenAIBackend

        backend = OpenAIBackend(
            base_url=args.base_url,
            model=args.llm_model,
            api_key=args.api_key,
            timeout=args.timeout,
            max_retries=args.max_retries,
            prompts=args.prompts,
        )
    start = time.perf_counter()
    controller, stats = generate(
        args.out,
        args.n,
        backend,
        seed=args.seed,
        concurrency=args.concurrency,
        progress=not args.quiet,
    )
    seconds = time.perf_counter() - start
    print(stats.table(controller))
    print(
        f"{controller.accepted} examples in {args.out / 'examples.jsonl'} "
        f"({controller.accepted - stats.resumed} new in {seconds:.1f}s)"
    )
    if not args.no_splits:
        _write_splits(args.out, args.seed, _exclude(args.exclude_vocab))
    return 0


def _write_splits(directory: Path, seed: int, exclude: set[str] | None) -> None:
    from bindkit.synth.splits import write_splits

    counts = write_splits(directory, seed=seed, exclude_vocab=exclude)
    print("triplets: " + ", ".join(f"{name} {n}" for name, n in counts.items()))


def _split(args: argparse.Namespace) -> int:
    _write_splits(args.directory, args.seed, _exclude(args.exclude_vocab))
    return 0


def _validate(args: argparse.Namespace) -> int:
    from bindkit.synth.validate import (
        DATASET_RULES,
        RULES,
        TRIPLET_RULES,
        count_rules,
        validate_file,
    )

    checked, failures = validate_file(
        args.file, dataset=args.dataset, kind=args.kind, split=args.split
    )
    shown = failures if args.all else failures[:50]
    for where, example_id, rejection in shown:
        print(f"{where} {example_id}: [{rejection.rule}] {rejection.message}")
    if len(shown) < len(failures):
        print(f"... {len(failures) - len(shown)} more (pass --all)")
    rejected_lines = len({w for w, _, _ in failures if w != args.file.name})
    print(
        f"{checked} rows, {checked - rejected_lines} valid, {rejected_lines} rejected",
        file=sys.stderr,
    )
    described = {**TRIPLET_RULES, **RULES, **DATASET_RULES}
    for rule, n in count_rules(r for _, _, r in failures).most_common():
        print(f"  {rule:<18} {n:>7}  {described.get(rule, '')}", file=sys.stderr)
    return 1 if failures else 0
