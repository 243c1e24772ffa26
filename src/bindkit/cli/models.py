"""``bindkit models`` and ``bindkit cache list|clear``."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    models = commands.add_parser(
        "models",
        help="list the embedding backends and what each needs installed",
        description="List every embedding backend (spec prefix), the modalities it embeds, "
        "whether its extra is installed, an example spec and the pip extra it needs.",
    )
    models.set_defaults(handler=_models)

    cache = commands.add_parser("cache", help="inspect or clear the on-disk embedding cache")
    cache.add_argument("--path", default=None, help="cache file (default: $BINDKIT_CACHE_DIR)")
    sub = cache.add_subparsers(title="cache commands", metavar="COMMAND")
    cache.set_defaults(handler=_list)
    listing = sub.add_parser(
        "list",
        help="models in the cache and their vector counts",
        description="List the models in the embedding cache (fingerprint, spec, vectors); "
        "opens the cache read-only and never creates one.",
    )
    listing.set_defaults(handler=_list)
    clear = sub.add_parser(
        "clear",
        help="delete cached vectors of one model or of all",
        description="Delete the cached vectors of one model (a spec as used, or a fingerprint "
        "prefix from `cache list`) or, with --all, of every model.",
    )
    for parser in (listing, clear):  # `cache list --path X` works as well as `cache --path X list`
        parser.add_argument(
            "--path", default=argparse.SUPPRESS, help="cache file (default: $BINDKIT_CACHE_DIR)"
        )
    group = clear.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--model", help="a model spec as it was used, or a fingerprint (prefix) from `cache list`"
    )
    group.add_argument("--all", action="store_true", help="delete every cached vector")
    clear.set_defaults(handler=_clear)


def _models(_args: argparse.Namespace) -> int:
    from bindkit.embed.registry import list_backends

    rows = list_backends()
    print(f"{'backend':<20} {'modalities':<12} {'installed':<10} {'example':<48} needs")
    for row in rows:
        print(
            f"{row['name']:<20} {row['modalities']:<12} {'yes' if row['installed'] else 'no':<10} "
            f"{row['example']:<48} {row['needs']}"
        )
        print(f"{'':<20} {row['description']}")
    return 0


def _cache(args: argparse.Namespace) -> Any:
    from bindkit.embed.cache import EmbeddingCache

    # listing or clearing never creates a cache, nor writes into a file it did not make
    return EmbeddingCache(args.path, create=False)


def _list(args: argparse.Namespace) -> int:
    cache = _cache(args)
    rows = cache.models()
    print(f"{cache.path}: {len(rows)} model(s)")
    for fingerprint, spec, count in rows:
        print(f"  {fingerprint}  {count:>9} vectors  {spec}")
    return 0


def _clear(args: argparse.Namespace) -> int:
    from bindkit.errors import BindkitError

    if args.model is not None and not args.model.strip():
        raise BindkitError(
            "--model '': empty; give a spec or fingerprint from `bindkit cache list`, "
            "or --all to delete everything"
        )
    cache = _cache_for_writing(args)
    if args.all:
        gone = cache.clear()
    else:
        rows = cache.models()
        targets = [f for f, spec, _ in rows if spec == args.model]
        if not targets:
            targets = [f for f, _, _ in rows if f.startswith(args.model)]
            if len(targets) > 1:
                raise BindkitError(
                    f"--model {args.model}: the prefix matches {len(targets)} cached models; "
                    "give more characters of the fingerprint (see `bindkit cache list`)"
                )
        if not targets:
            raise BindkitError(
                f"--model {args.model}: no cached model has that spec or fingerprint; "
                "see `bindkit cache list`"
            )
        gone = cache.clear(targets)
    print(f"deleted {gone} vectors")
    return 0


def _cache_for_writing(args: argparse.Namespace) -> Any:
    from bindkit.embed.cache import EmbeddingCache

    _cache(args).close()  # refuses a missing, empty or foreign file before opening for writing
    return EmbeddingCache(args.path, create=True)
