"""``bindkit saber generate|validate|render|review``."""

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
        "--avoid-color-collisions",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="draw bindings and realisations so no colour attribute reappears inside another "
        "attribute's realisation, e.g. 'blue' next to 'dark-blue denim' (default: on)",
    )
    gen.add_argument(
        "--allow-color-collisions",
        dest="avoid_color_collisions",
        action="store_false",
        help="keep colour collisions: draw as bindkit did before it avoided them "
        "(same as --no-avoid-color-collisions)",
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
        help="vocabulary the data was built from (default: the packaged one the manifest names)",
    )
    val.add_argument(
        "--all", action="store_true", help=f"list every violation (default: first {_MAX_SHOWN})"
    )
    val.set_defaults(handler=_validate)
    _register_render(sub)


def _register_render(sub: Any) -> None:
    ren = sub.add_parser(
        "render",
        help="render every item's image (procedural, diffusers or an OpenAI-compatible API)",
        description="Render DIR/images/<item id>.png for every item, apply each item's flip, fill "
        "the 'image' fields and record the images in the manifest. Resumes: valid images are "
        "kept, corrupt ones redone.",
    )
    ren.add_argument("directory", type=Path, help="SABER directory (from `saber generate`)")
    ren.add_argument(
        "--backend",
        choices=("procedural", "diffusers", "openai"),
        default="procedural",
        help="procedural: shapes scenes, no model (--vocab shapes sets); diffusers: a local "
        "text-to-image pipeline; openai: an OpenAI-compatible images endpoint",
    )
    ren.add_argument(
        "--size", type=int, default=None, help="image size (default: 256 procedural, 1024 models)"
    )
    ren.add_argument("--seed", type=int, default=0, help="layout / generator seed (default: 0)")
    ren.add_argument(
        "--workers",
        type=int,
        default=1,
        help="parallel renders: processes (procedural) or concurrent requests (openai)",
    )
    ren.add_argument(
        "--redo", type=Path, default=None, help="rejects file (from `saber review`): render again"
    )
    ren.add_argument("--model", default=None, help="diffusers path/id, or the API's model name")
    ren.add_argument("--base-url", default="https://api.openai.com/v1", help="openai: API root")
    ren.add_argument("--api-key", default=None, help="openai: key (default: $OPENAI_API_KEY)")
    ren.add_argument("--quality", default=None, help="openai: quality field, e.g. medium")
    ren.add_argument("--retries", type=int, default=5, help="openai: retries (default: 5)")
    ren.add_argument("--backoff", type=float, default=2.0, help="openai: first wait, seconds")
    ren.add_argument("--timeout", type=float, default=300.0, help="openai: seconds per request")
    ren.add_argument(
        "--deadline",
        type=float,
        default=900.0,
        help="openai: stop when no image arrived for this many seconds, e.g. a server that "
        "accepts connections and never answers (default: 900)",
    )
    ren.add_argument("--steps", type=int, default=None, help="diffusers: num_inference_steps")
    ren.add_argument("--guidance", type=float, default=None, help="diffusers: guidance_scale")
    ren.add_argument("--dtype", default="auto", help="diffusers: auto|float16|bfloat16|float32")
    ren.add_argument("--device", default=None, help="diffusers: torch device")
    ren.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra pipeline argument (diffusers) or request field (openai); repeatable",
    )
    ren.add_argument("-q", "--quiet", action="store_true", help="no progress bar or summary")
    ren.set_defaults(handler=_render)

    rev = sub.add_parser(
        "review",
        help="write a static HTML contact sheet to accept/reject rendered images",
        description="Write DIR/review.html: one row per MCQ (query and four candidates with "
        "captions and roles). Mark images with the keyboard or mouse and export rejects.json, "
        "then run `bindkit saber render DIR --redo rejects.json`.",
    )
    rev.add_argument("directory", type=Path, help="a rendered SABER directory")
    rev.add_argument("--out", type=Path, default=None, help="HTML file (default: DIR/review.html)")
    rev.set_defaults(handler=_review)


def _options(pairs: list[str]) -> tuple[tuple[str, Any], ...]:
    """``KEY=VALUE`` pairs; a VALUE that parses as JSON (7, 2.5, true, null) is taken as such."""
    import json

    from bindkit.errors import BindkitError

    out: list[tuple[str, Any]] = []
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key:
            raise BindkitError(f"--option {pair!r}: must look like KEY=VALUE")
        try:
            out.append((key, json.loads(value)))
        except ValueError:
            out.append((key, value))
    return tuple(out)


def _render(args: argparse.Namespace) -> int:
    from bindkit.errors import BindkitError
    from bindkit.saber.render import make_backend
    from bindkit.saber.render.renderer import read_rejects, render_saber

    _check_render_numbers(args)
    size = args.size if args.size is not None else (256 if args.backend == "procedural" else 1024)
    options: dict[str, Any] = {"size": size}
    if args.backend == "procedural":
        ignored = [
            name for name, value in (("--model", args.model), ("--option", args.option)) if value
        ]
        if ignored:
            raise BindkitError(
                f"{ignored[0]}: the procedural renderer takes no model or request options; use "
                "it with --backend diffusers or openai"
            )
        options["seed"] = args.seed
    elif args.backend == "diffusers":
        options.update(
            model=args.model,
            steps=args.steps,
            guidance=args.guidance,
            seed=args.seed,
            device=args.device,
            dtype=args.dtype,
            extra=_options(args.option),
        )
    else:
        options.update(
            model=args.model,
            base_url=args.base_url,
            api_key=args.api_key,
            quality=args.quality,
            retries=args.retries,
            backoff=args.backoff,
            timeout=args.timeout,
            deadline=args.deadline,
            extra=_options(args.option),
        )
    backend = make_backend(args.backend, **options)
    redo = read_rejects(args.redo) if args.redo else set()
    summary = render_saber(
        args.directory, backend, redo=redo, workers=args.workers, progress=not args.quiet
    )
    if not args.quiet:
        print(f"{args.directory}: images by {args.backend}")
        print(summary.table())
        for item_id, error in summary.failed[:_MAX_SHOWN]:
            print(f"  failed {item_id}: {error}", file=sys.stderr)
    if summary.failed:
        print(
            f"{len(summary.failed)} image(s) failed; run the same command again to retry them",
            file=sys.stderr,
        )
        return 1
    return 0


def _check_render_numbers(args: argparse.Namespace) -> None:
    """Every number of `saber render`, before the data or a model is touched."""
    from bindkit._checks import check_range

    check_range("--size", args.size, 16, 4096)  # the procedural renderer needs 64 or more
    check_range("--workers", args.workers, 1, 256)
    check_range("--retries", args.retries, 0, 100)
    check_range("--backoff", args.backoff, 0, 600)
    check_range("--timeout", args.timeout, 0, 3600, low_open=True)
    check_range("--deadline", args.deadline, 0, 86400, low_open=True)
    check_range("--steps", args.steps, 1, 1000)
    check_range("--guidance", args.guidance, 0, 100)


def _review(args: argparse.Namespace) -> int:
    from bindkit.saber.render.review import write_review

    path = write_review(args.directory, args.out)
    print(
        f"wrote {path}: open it in a browser; export rejects, then `bindkit saber render "
        f"{args.directory} --redo rejects.json`"
    )
    return 0


def _generate(args: argparse.Namespace) -> int:
    from bindkit._io import check_not_input
    from bindkit.saber.build import generate_saber

    if args.vocab is not None and args.vocab.is_dir():  # a named packaged one is no directory
        check_not_input(args.out, [args.vocab])
    manifest = generate_saber(
        args.out,
        seed=args.seed,
        per_n=args.per_n,
        n_min=args.n_min,
        n_max=args.n_max,
        vocab=args.vocab,
        overwrite=args.overwrite,
        avoid_color_collisions=args.avoid_color_collisions,
    )
    if not args.quiet:
        c = manifest["counts"]
        print(
            f"wrote {args.out}/saber.jsonl: {c['mcqs']} MCQs ({c['independent']} independent, "
            f"{c['nested']} nested in {c['chains']} chains), {c['candidates']} candidates"
        )
        print("  N     " + " ".join(f"{n:>4}" for n in c["by_n"]))
        print("  MCQs  " + " ".join(f"{v:>4}" for v in c["by_n"].values()))
        print(f"  colour collisions: {manifest['color_collisions']} MCQs")
    return 0


def _validate(args: argparse.Namespace) -> int:
    from bindkit.hfdata.read import local_path
    from bindkit.saber.validate import RULES, validate_saber

    # a `bindkit export saber` folder (or hf:ID) is validated as the files it rebuilds
    report = validate_saber(local_path(args.directory, option="saber validate"), vocab=args.vocab)
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
