"""``bindkit export saber|synth|clusters``: bindkit data as a Hugging Face dataset folder."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import Any

_SOURCES = {
    "saber": "SABER directory (from `bindkit saber generate`, rendered or not)",
    "synth": "synth run directory with its split set (from `bindkit synth split`)",
    "clusters": "clusters JSONL (from `bindkit mine`)",
}


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "export",
        help="write SABER, synth splits or mined clusters as a Hugging Face dataset",
        description="Parquet shards with typed features (images embedded), one config per "
        "subset or variant, and a dataset card; `datasets.load_dataset(HFDIR)` reads it, and "
        "bindkit reads it back wherever it reads its own files (--data HFDIR, --train "
        "HFDIR:train, hf:OWNER/NAME from the local Hugging Face cache). Needs "
        "pip install 'bindkit[hf]'.",
    )
    kinds = parser.add_subparsers(title="what to export", metavar="KIND")
    for kind, source in _SOURCES.items():
        sub = kinds.add_parser(kind, help=f"export a {source}", description=f"Export a {source}.")
        sub.add_argument("source", type=Path, help=source)
        sub.add_argument("--out", required=True, type=Path, help="the dataset folder to write")
        sub.add_argument(
            "--license",
            default=None,
            help="licence id for the card (default: "
            + ("other, as the mined input's)" if kind == "clusters" else "mit)"),
        )
        sub.add_argument(
            "--overwrite", action="store_true", help="replace an earlier export in --out"
        )
        sub.add_argument("--push", metavar="REPO_ID", default=None, help="then upload to the Hub")
        sub.add_argument(
            "--private", action="store_true", help="with --push: create the repository private"
        )
        sub.set_defaults(handler=_export, kind=kind)
    parser.set_defaults(handler=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _export(args: argparse.Namespace) -> int:
    from bindkit.errors import BindkitError
    from bindkit.export.write import export, push

    if args.private and args.push is None:
        raise BindkitError("--private: only with --push REPO_ID")
    command = ["bindkit", "export", args.kind, str(args.source), "--out", str(args.out)]
    if args.license:
        command += ["--license", args.license]
    record = export(
        args.kind,
        args.source,
        args.out,
        license=args.license,
        command=shlex.join(command),
        overwrite=args.overwrite,
    )
    default = {path for paths in record["configs"]["default"].values() for path in paths}
    rows = sum(n for path, n in record["rows"].items() if path in default)  # each row once
    configs = ", ".join(record["configs"])
    shards = len(record["rows"])
    print(f"wrote {args.out}: {rows} rows (default config) in {shards} shards; configs: {configs}")
    if args.push is not None:
        url = push(args.out, args.push, private=args.private)
        print(f"pushed to {args.push}: {url}")
    return 0
