"""``bindkit synth generate|validate|split|mix|preserve``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

# the openai backend's options and their defaults: another backend refuses any of them set
OPENAI_ONLY: dict[str, object] = {
    "concurrency": 8,
    "base_url": None,
    "llm_model": None,
    "api_key": None,
    "timeout": 120.0,
    "max_retries": 5,
    "deadline": 600.0,
    "prompts": None,
}


def register(commands: Any) -> None:
    group = commands.add_parser("synth", help="synthetic text-only binding training data")
    sub = group.add_subparsers(title="synth commands", metavar="COMMAND")
    group.set_defaults(handler=lambda _args: group.print_help() or 2)

    gen = sub.add_parser(
        "generate",
        help="generate validated examples (resumable), then splits and triplets",
        description="Generate until OUT/examples.jsonl holds --n accepted examples; re-running "
        "continues where a run stopped (with the options OUT/manifest.json records). Then write "
        "train/val/test/held-out triplet files.",
    )
    from bindkit.synth.backends import BACKENDS

    gen.add_argument(
        "--backend",
        choices=list(BACKENDS),
        default="template",
        help="; ".join(f"{e.name}: {e.help}" for e in BACKENDS.values()),
    )
    gen.add_argument("--n", type=int, required=True, help="target number of accepted examples")
    gen.add_argument("--out", type=Path, required=True, help="output directory")
    gen.add_argument("--seed", type=int, default=0, help="seed of plans and splits")
    gen.add_argument(
        "--concurrency",
        type=int,
        default=OPENAI_ONLY["concurrency"],
        help="openai: requests in flight",
    )
    gen.add_argument(
        "--base-url",
        default=OPENAI_ONLY["base_url"],
        help="openai: e.g. http://localhost:8000/v1 (env OPENAI_BASE_URL)",
    )
    gen.add_argument(
        "--llm-model",
        default=OPENAI_ONLY["llm_model"],
        help="openai: model name (env BINDKIT_LLM_MODEL)",
    )
    gen.add_argument(
        "--api-key", default=OPENAI_ONLY["api_key"], help="openai: key (env OPENAI_API_KEY)"
    )
    gen.add_argument(
        "--timeout",
        type=float,
        default=OPENAI_ONLY["timeout"],
        help="openai: seconds per request",
    )
    gen.add_argument(
        "--max-retries",
        type=int,
        default=OPENAI_ONLY["max_retries"],
        help="openai: retries on 408/429/5xx/network errors",
    )
    gen.add_argument(
        "--deadline",
        type=float,
        default=OPENAI_ONLY["deadline"],
        help="openai: stop when the server gave no answer for this many seconds, however many "
        "requests wait or retry (a server that accepts connections and never answers); "
        "default: 600",
    )
    gen.add_argument(
        "--max-failures",
        type=int,
        default=20,
        help="stop after this many failed requests in a row (server down or unreachable)",
    )
    gen.add_argument(
        "--max-attempts",
        type=int,
        default=None,
        help="give up after this many attempts (default: max(1000, 50 x --n))",
    )
    gen.add_argument(
        "--prompts",
        type=Path,
        default=OPENAI_ONLY["prompts"],
        help="openai: directory of prompt templates (default: packaged)",
    )
    _split_options(gen)
    gen.add_argument("--no-splits", action="store_true", help="only generate examples")
    gen.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    gen.set_defaults(handler=_generate)

    val = sub.add_parser(
        "validate",
        help="check a JSONL file of examples (or triplets) against every rule",
        description="Check every example against the seed's rules; duplicate ids and "
        "attribute-object sets are always checked over the whole file. Triplet files "
        "(train.jsonl, train-<mix>.jsonl, ...) are detected from their rows; each triplet row "
        "is checked by the rule of its row_kind (none: a swap row; `bindkit synth mix --help` "
        "lists the kinds).",
    )
    val.add_argument("file", type=Path, nargs="?", help="a JSONL file (or use --split-set)")
    val.add_argument(
        "--split-set",
        type=Path,
        default=None,
        metavar="DIR",
        help="check a run's split files instead: every triplet row, and that no text or id "
        "crosses its train/val/test/held-out files (each variant folder too)",
    )
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
    spl.add_argument("--seed", type=int, default=None, help="default: the run's seed")
    _split_options(spl)
    spl.add_argument(
        "--verify",
        action="store_true",
        help="write nothing: check that the split files are one complete set made from "
        "DIR/examples.jsonl (exit 2 naming the first file that is not)",
    )
    spl.set_defaults(handler=_split)

    from bindkit.synth.mixes import MIXES
    from bindkit.synth.rowkinds import ROW_KINDS

    mixes = "\n".join(f"  {name:<22} {' + '.join(kinds)}" for name, kinds in MIXES.items())
    kinds = "\n".join(f"  {kind:<22} {rule.split(': ')[0]}" for kind, rule in ROW_KINDS.items())
    mix = sub.add_parser(
        "mix",
        help="write a training mix (DIR/train-<mix>.jsonl) from a run's NoOverlap train pool",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Write DIR/train-<mix>.jsonl: the named mix's triplets (full-caption swaps, "
        "paraphrases, relation and negation rows, everyday scenes, ...) made from the run's "
        "NoOverlap train pool, as `bindkit demo finetune` makes its training set. Every row is "
        "checked by its kind's rule and against the run's val/test/held-out files before the "
        "file is written; DIR/train-<mix>.json records what produced it. `bindkit synth "
        f"validate` checks the file again.\n\nmixes:\n{mixes}\n\nrow kinds (each checked by its "
        f"own rule; a rejected row names it):\n{kinds}",
    )
    mix.add_argument("--mix", required=True, metavar="NAME", help="a mix (listed below)")
    mix.add_argument(
        "--exclude-data",
        action="append",
        default=[],
        metavar="PATH",
        help="a file or folder of a set you will report on (repeatable): a mix with role scenes "
        "is refused if it holds a role word",
    )
    _pool_options(mix)
    mix.set_defaults(handler=_mix)

    from bindkit.synth.preservation import PRESERVATION_SETS, PRESERVATION_TEXT

    sets = "\n".join(f"  {name:<10} {PRESERVATION_TEXT[name]}" for name in PRESERVATION_SETS)
    pre = sub.add_parser(
        "preserve",
        help="write a preservation set (DIR/preserve-<set>.jsonl) from a run's NoOverlap "
        "train pool",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description='Write DIR/preserve-<set>.jsonl ({"text": ...} rows, for `bindkit train '
        "triplets --preserve`): the named preservation set of the run's NoOverlap train pool, "
        "as `bindkit demo finetune` makes it (the demo keeps steps x 32 sentences: "
        f"--max-rows); DIR/preserve-<set>.json records what produced it.\n\nsets:\n{sets}",
    )
    pre.add_argument("--set", required=True, metavar="NAME", help="a set (listed below)")
    _pool_options(pre)
    pre.set_defaults(handler=_preserve)


def _pool_options(parser: argparse.ArgumentParser) -> None:
    """What ``synth mix`` and ``synth preserve`` share: the run, its NoOverlap pool, the file."""
    parser.add_argument("directory", type=Path, help="a synth run with a split set")
    parser.add_argument("--seed", type=int, default=None, help="default: the split set's seed")
    parser.add_argument(
        "--exclude-vocab",
        default="builtin",
        metavar="SABER_VOCAB",
        help="the vocabulary the NoOverlap pool avoids: a SABER vocabulary directory or "
        "'builtin' (the packaged one, the default)",
    )
    parser.add_argument(
        "--max-rows", type=int, default=None, metavar="N", help="keep the first N rows"
    )
    parser.add_argument("--overwrite", action="store_true", help="replace the file")


def _split_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--exclude-vocab",
        default=None,
        metavar="SABER_VOCAB",
        help="also write the NoOverlap, Random and OverlapOnly training subsets (size-matched, "
        "from the train split) against a SABER vocabulary directory ('builtin' for the "
        "packaged one); val/test/held-out stay the full run's",
    )
    parser.add_argument(
        "--mixed-lengths",
        action="store_true",
        help="also write mixed_lengths/train.jsonl: each train example as short query / long "
        "caption, short / short and long / short",
    )
    parser.add_argument(
        "--drop-variants",
        action="store_true",
        help="delete an earlier split's no_overlap/, random/, overlap_only/ or mixed_lengths/ "
        "folders that these options do not rewrite (without it, that is an error)",
    )


def check_generate_options(args: argparse.Namespace) -> None:
    """Refuse options this run would ignore: the openai backend's under another backend, and a
    split variant (--mixed-lengths, --exclude-vocab, --drop-variants) under --no-splits.

    Raises:
        BindkitError: the first such option, named with what to do.
    """
    from bindkit.errors import BindkitError
    from bindkit.synth.command import check_options

    check_options(  # an out-of-range value is named as such first
        args.n,
        max_attempts=args.max_attempts,
        concurrency=args.concurrency,
        timeout=args.timeout,
        max_retries=args.max_retries,
        max_failures=args.max_failures,
        deadline=args.deadline,
    )
    if args.backend != "openai":
        for dest, default in OPENAI_ONLY.items():
            value = getattr(args, dest)
            if value != default:
                option = "--" + dest.replace("_", "-")
                raise BindkitError(
                    f"{option} {value}: only the openai backend reads it (this run: --backend "
                    f"{args.backend}); drop {option}, or pass --backend openai"
                )
    if args.no_splits:
        for dest in ("mixed_lengths", "exclude_vocab", "drop_variants"):
            if getattr(args, dest) not in (None, False):
                option = "--" + dest.replace("_", "-")
                raise BindkitError(
                    f"{option}: writes (or drops) a split variant, and --no-splits writes no "
                    f"splits; drop {option} or --no-splits"
                )


def _generate(args: argparse.Namespace) -> int:
    from bindkit.synth.command import run

    check_generate_options(args)

    result = run(
        args.out,
        args.n,
        backend=args.backend,
        seed=args.seed,
        concurrency=args.concurrency,
        base_url=args.base_url,
        llm_model=args.llm_model,
        api_key=args.api_key,
        timeout=args.timeout,
        max_retries=args.max_retries,
        max_failures=args.max_failures,
        max_attempts=args.max_attempts,
        deadline=args.deadline,
        prompts=args.prompts,
        splits=not args.no_splits,
        exclude_vocab=args.exclude_vocab,
        mixed_lengths=args.mixed_lengths,
        drop_variants=args.drop_variants,
        progress=False if args.quiet else None,
    )
    print(result.stats.table(result.controller))
    print(
        f"{result.controller.accepted} examples in {args.out / 'examples.jsonl'} "
        f"({result.controller.accepted - result.stats.resumed} new in {result.seconds:.1f}s)"
    )
    if result.stats.resumed > args.n:
        print(
            f"note: {args.out} already held {result.stats.resumed} examples, more than --n "
            f"{args.n}; nothing was generated and the splits use all of them",
            file=sys.stderr,
        )
    if result.splits is not None:
        _print_counts(result.splits)
    return 0


def _print_counts(counts: dict[str, int]) -> None:
    print("triplets: " + ", ".join(f"{name} {n}" for name, n in counts.items()))


def _split(args: argparse.Namespace) -> int:
    from bindkit.synth.splits import stale_variants, verify_splits, write_splits

    if args.verify:
        summary = verify_splits(args.directory)
        print(f"{args.directory}: {len(summary['files'])} split files, one complete set")
        return 0

    dropped = stale_variants(args.directory, args.exclude_vocab, args.mixed_lengths)
    counts = write_splits(
        args.directory,
        seed=args.seed,
        exclude_vocab=args.exclude_vocab,
        mixed_lengths=args.mixed_lengths,
        drop_variants=args.drop_variants,
    )
    _print_counts(counts)
    _print_dropped(args.directory, dropped)
    return 0


def _mix(args: argparse.Namespace) -> int:
    from bindkit.synth.mixes import write_mix

    out = write_mix(
        args.directory,
        args.mix,
        seed=args.seed,
        exclude_vocab=args.exclude_vocab,
        max_rows=args.max_rows,
        overwrite=args.overwrite,
        exclude_data=args.exclude_data,
    )
    rows = sum(1 for _ in out.open(encoding="utf-8"))
    print(f"{rows} rows of mix {args.mix} in {out}")
    return 0


def _preserve(args: argparse.Namespace) -> int:
    from bindkit.synth.mixes import write_preservation

    out = write_preservation(
        args.directory,
        args.set,
        seed=args.seed,
        exclude_vocab=args.exclude_vocab,
        max_rows=args.max_rows,
        overwrite=args.overwrite,
    )
    rows = sum(1 for _ in out.open(encoding="utf-8"))
    print(f"{rows} sentences of preservation set {args.set} in {out}")
    return 0


def _print_dropped(directory: Path, dropped: list[str]) -> None:
    if dropped:
        print(f"removed {', '.join(f'{directory / v}/' for v in dropped)} (--drop-variants)")


def _leaks_of(path: Path) -> list[Any]:
    """For a split file of a synth run: its rows that the split-set check says cross splits."""
    from bindkit.synth.splitset import check_split_set, split_set_root
    from bindkit.synth.validate import split_name

    root = split_set_root(path)
    if root is None or split_name(path) is None or not path.is_file():
        return []
    mine = path.resolve().relative_to(root.resolve()).as_posix() + ":"
    _, failures = check_split_set(root)
    return [f for f in failures if f[2].rule == "split_leak" and f[0].startswith(mine)]


def _validate(args: argparse.Namespace) -> int:
    from collections import Counter

    from bindkit.errors import BindkitError
    from bindkit.synth.example_rules import RULES
    from bindkit.synth.rejection import count_rules
    from bindkit.synth.rowkinds import ROW_KINDS, TRIPLET_RULES
    from bindkit.synth.splitset import SPLIT_SET_RULES, check_split_set
    from bindkit.synth.validate import DATASET_RULES, validate_file

    if (args.file is None) == (args.split_set is None):
        raise BindkitError("synth validate: give a FILE or --split-set DIR (one of them)")
    notes: Counter[str] = Counter()
    if args.split_set is not None:
        if not args.split_set.is_dir():
            raise BindkitError(f"--split-set {args.split_set}: not a directory; give a synth run")
        checked, failures = check_split_set(args.split_set)
        name = args.split_set.name
    else:
        checked, failures = validate_file(
            args.file, dataset=args.dataset, kind=args.kind, split=args.split, notes=notes
        )
        name = args.file.name
        failures += _leaks_of(args.file)
    shown = failures if args.all else failures[:50]
    for where, example_id, rejection in shown:
        print(f"{where} {example_id}: [{rejection.rule}] {rejection.message}")
    if len(shown) < len(failures):
        print(f"... {len(failures) - len(shown)} more (pass --all)")
    rejected_lines = len({w for w, _, _ in failures if w != name})
    print(
        f"{checked} rows, {checked - rejected_lines} valid, {rejected_lines} rejected",
        file=sys.stderr,
    )
    if notes["unverifiable_slots"]:
        print(
            f"  {notes['unverifiable_slots']} attr_bundle attribute(s) outside the attribute "
            "lexicon: their slot is unverifiable",
            file=sys.stderr,
        )
    described = {**ROW_KINDS, **TRIPLET_RULES, **RULES, **DATASET_RULES, **SPLIT_SET_RULES}
    for rule, n in count_rules(r for _, _, r in failures).most_common():
        print(f"  {rule:<18} {n:>7}  {described.get(rule, '')}", file=sys.stderr)
    return 1 if failures else 0
