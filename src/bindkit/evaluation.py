"""``bindkit eval`` as a library call: models x task x subsets x pairings → result files."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from bindkit.embed.protocol import Embedder
from bindkit.errors import BindkitError
from bindkit.records.fields import data_key
from bindkit.records.instructions import Instruction
from bindkit.results.store import (
    POLICIES,
    Policy,
    is_partial,
    result_path,
    reusable,
    write_result,
)
from bindkit.tasks.base import (
    Dataset,
    EvalContext,
    Task,
    get_task,
    parse_pairings,
    resolve_data,
)


def evaluate(
    models: Sequence[str | Embedder],
    *,
    task: str | Task = "saber",
    data: str | Path | None = None,
    pairings: str | Sequence[str] | None = None,
    subsets: str | Sequence[str] | None = None,
    out: str | Path = "results",
    overwrite: Policy = "only-missing",
    query_instruction: str | None = None,
    image_root: str | Path | None = None,
    batch_size: int | None = None,
    cache: bool | str | Path = True,
    report: bool = True,
    verbose: bool = True,
    allow_missing_images: bool = False,
    instructions: Sequence[Instruction] | None = None,
    fetch: bool = False,
    half: str | None = None,
) -> list[dict[str, Any]]:
    """Evaluate each model on a task and write one result file per (subset, pairing).

    Each result is written as soon as it is computed, so an interrupted run keeps what it
    finished, and a rerun computes only what is missing (see :mod:`bindkit.results.store`).

    Args:
        models: Spec strings (``"st:default"``) or embedder objects.
        task: A task name (``bindkit eval --help`` lists them) or a :class:`Task` object.
        data: The task's files; without it, ``$BINDKIT_DATA/<task folder>`` or the task's
            built-in set (SABER's default set, generated in memory).
        pairings: Subset of ``tt,ti,it,ii`` (query→candidate modality); default: every pairing
            the task, the data and the model support.
        subsets: Comma list or sequence of subset names; default: all of the data's subsets.
        out: Results directory.
        overwrite: ``only-missing`` (default), ``never`` or ``always``.
        query_instruction: Instruction for queries (default: the task's, else the model's).
        image_root: Folder the data's image file names are relative to (image-side tasks).
        batch_size: Passed to :func:`bindkit.load_embedder` for spec strings.
        cache: Passed to :func:`bindkit.load_embedder` for spec strings.
        report: Write ``OUT/report.md`` over everything in ``out``.
        allow_missing_images: Score an image task without its missing images (the result is
            marked ``partial`` with the counts) instead of stopping with the first paths.
        instructions: An instruction sweep (:func:`bindkit.records.instructions.read_instructions`):
            every (model, subset, pairing) runs once per instruction, written to
            ``<pairing>@<name>.json`` with the instruction in its provenance; replaces
            ``query_instruction``.
        fetch: Download the task's files first when they are missing (``bindkit fetch``'s plan,
            into ``data`` or ``$BINDKIT_DATA/<task folder>``; the licence is printed to stderr,
            also when ``verbose`` is False).
        half: ``"dev"`` or ``"test"``: score only that fixed, hashed half of the data
            (:mod:`bindkit.tasks._halves`; select on dev, report test), with its own data name
            (``<name>.dev``) and digest; a task without halves refuses it in one line.

    Returns:
        The result records, computed or reused, in order.

    Raises:
        BindkitError: images are missing (without ``allow_missing_images``), or some (subset,
            pairing) had nothing to score; the results computed before are kept.
    """
    if not models:
        raise BindkitError("--model: give at least one model spec, e.g. --model st:default")
    if instructions is not None and not instructions:
        raise BindkitError("--instructions: the file holds no instruction; add one per line")
    if instructions is not None and query_instruction is not None:
        raise BindkitError(
            "--query-instruction: not with --instructions; put it in the instructions file"
        )
    if overwrite not in POLICIES:
        raise BindkitError(f"--overwrite {overwrite!r}: use one of {', '.join(POLICIES)}")
    task_impl = get_task(task) if isinstance(task, str) else task
    meta = task_impl.metadata
    wanted = parse_pairings(
        pairings if pairings is None or isinstance(pairings, str) else list(pairings)
    )
    if fetch:  # download on demand (bindkit fetch's plan), as mteb's and CLIP_benchmark's
        from functools import partial

        from bindkit.fetch.fetcher import fetch_if_missing

        say = partial(_say, True)  # a download's licence is printed even with -q (to stderr)
        data = fetch_if_missing(meta.name, data, log=say, progress=verbose) or data
    path = resolve_data(meta, data)
    root = None if image_root is None else Path(image_root)
    if root is not None and not root.is_dir():
        raise BindkitError(f"--image-root {root}: not a directory; pass the folder of the images")
    dataset = task_impl.load(path, image_root=root)
    if data is not None and path is not None and path.resolve() != Path(data).resolve():
        # an export (HFDIR, hf:ID) read through its rebuilt files: record it as the user named it
        dataset = replace(dataset, source=str(data))
    if half is not None:  # the hashed dev or test half (bindkit.tasks._halves)
        dataset = task_impl.halve(dataset, half)
    chosen_subsets = _subsets(subsets, task_impl, dataset)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BindkitError(f"--out {out}: is a file; pass a directory for the results")
    ctx = EvalContext(
        query_instruction, root, lambda m: _say(True, m), allow_missing_images=allow_missing_images
    )
    key = data_key(dataset.name, dataset.source)
    records: list[dict[str, Any]] = []
    empty: list[str] = []  # (model subset pairing) with nothing to score
    from bindkit._lock import directory_lock

    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise BindkitError(f"--out {out}: cannot create it ({exc.strerror})") from exc
    with directory_lock(out, "bindkit eval"):
        for model in models:
            records += _one_model(
                model, task_impl, dataset, key, chosen_subsets, wanted, ctx, out, overwrite,
                batch_size, cache, verbose, empty, instructions,
            )  # fmt: skip
    if report and not records and not any(out.rglob("*.json")):
        _say(verbose, f"report: nothing to report in {out}")
    elif report:
        from bindkit.results.report import write_report

        target, plots = write_report(out, warn=lambda m: _say(True, m))
        _say(verbose, f"report: {target}" + "".join(f", {p}" for p in plots))
    if empty:
        raise BindkitError(
            f"{empty[0]}: nothing to score (every image missing?); {len(empty)} run(s) wrote no "
            "result; pass --image-root with the benchmark's images"
        )
    return records


def _one_model(
    model: str | Embedder,
    task_impl: Any,
    dataset: Any,
    key: str,
    subsets: list[str],
    wanted: list[str] | None,
    ctx: EvalContext,
    out: Path,
    overwrite: Policy,
    batch_size: int | None,
    cache: bool | str | Path,
    verbose: bool,
    empty: list[str],
    instructions: Sequence[Instruction] | None = None,
) -> list[dict[str, Any]]:
    meta = task_impl.metadata
    embedder = _load(model, batch_size, cache)
    spec = model if isinstance(model, str) else getattr(model, "spec", type(model).__name__)
    spec = getattr(embedder, "result_name", None) or spec  # mteb: leaves out its cache_folder
    available = task_impl.pairings(dataset, embedder)
    chosen = task_impl.default_pairings(available) if wanted is None else wanted
    missing = [p for p in chosen if p not in available]
    if missing or not chosen:
        raise BindkitError(
            f"--pairings {','.join(missing or chosen) or '(none)'}: not available for {spec} on "
            f"{meta.name} {dataset.name} (available: {','.join(available) or 'none'}); image "
            "pairings need images in the data and a model that embeds images"
        )
    model_record: dict[str, Any] | None = None
    records: list[dict[str, Any]] = []
    runs: list[Instruction | None] = list(instructions) if instructions is not None else [None]
    for subset in subsets:
        for pairing in chosen:
            for instruction in runs:
                record, model_record = _one_run(
                    embedder, spec, task_impl, dataset, key, subset, pairing, ctx, out,
                    overwrite, verbose, empty, instruction, model_record,
                )  # fmt: skip
                if record is not None:
                    records.append(record)
    return records


def _one_run(
    embedder: Embedder,
    spec: str,
    task_impl: Any,
    dataset: Any,
    key: str,
    subset: str,
    pairing: str,
    ctx: EvalContext,
    out: Path,
    overwrite: Policy,
    verbose: bool,
    empty: list[str],
    instruction: Instruction | None,
    model_record: dict[str, Any] | None,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """One (subset, pairing[, instruction]): the reused or newly written record (None if
    nothing could be scored), and the model's record once a result was written."""
    meta = task_impl.metadata
    if instruction is not None:
        ctx = replace(
            ctx, query_instruction=instruction.query, document_instruction=instruction.document
        )
    options = {
        "query_instruction": task_impl.query_instruction(subset, ctx),
        "image_root": None if ctx.image_root is None else str(ctx.image_root),
        **task_impl.options(subset),
    }
    if instruction is not None:  # only then: results of plain runs keep their provenance
        options |= {
            "instruction": instruction.name,
            "document_instruction": task_impl.document_instruction(subset, ctx),
        }
    provenance = {
        "model_fingerprint": embedder.fingerprint,
        "task": meta.name,
        "data_sha256": task_impl.data_identity(dataset, subset, pairing),
        "subset": subset,
        "pairing": pairing,
        "options": options,
        "metrics_version": meta.version,
    }
    name = None if instruction is None else instruction.name
    path = result_path(out, spec, meta.name, key, subset, pairing, name)
    where = f"{spec} {meta.name} {subset} {pairing}" + ("" if name is None else f" @{name}")
    existing = reusable(path, provenance, overwrite)
    if existing is not None and is_partial(existing):
        existing = None  # scored without some images: they may be there now
    if existing is not None:
        _say(verbose, f"{where}: up to date ({path})")
        return existing, model_record
    start = time.perf_counter()
    result = task_impl.evaluate(embedder, dataset, subset, pairing, ctx)
    if result is None:
        _say(True, f"warning: {where}: nothing to score; no result written")
        empty.append(where)
        return None, model_record
    if is_partial(result):
        result = {**result, "partial": True}
    if model_record is None:  # once per model: describe() may digest weight files
        model_record = {
            "spec": spec,
            "fingerprint": embedder.fingerprint,
            "description": embedder.describe(),
        }
    record = write_result(
        path,
        provenance=provenance,
        model=model_record,
        data={"name": dataset.name, "source": dataset.source, "sha256": dataset.sha256, "key": key},
        result=result,
        seconds=time.perf_counter() - start,
        warn=lambda m: _say(True, m),
    )
    _say(verbose, f"{where}: {headline(record, meta)} → {path}")
    return record, model_record


def _subsets(value: str | Sequence[str] | None, task: Task, dataset: Dataset) -> list[str]:
    available = dataset.subsets
    if value is None:
        return list(task.default_subsets(dataset))
    items = value.split(",") if isinstance(value, str) else list(value)
    items = [s.strip() for s in items if s.strip()]
    if not items:
        raise BindkitError("--subsets: empty; give a comma list or leave it out for all")
    items = _expand_families(items, task, dataset)
    unknown = [s for s in items if s not in available]
    for subset in unknown:
        hint = task.missing_subset(subset, dataset) if subset in task.metadata.subsets else None
        if hint:
            raise BindkitError(f"--subsets {subset}: {hint}")
    if unknown:
        raise BindkitError(
            f"--subsets {','.join(unknown)}: not in {task.metadata.name}'s data; use "
            f"{', '.join(available)}"
        )
    return items


def _expand_families(items: list[str], task: Task, dataset: Dataset) -> list[str]:
    """Each family name (``Task.families``) replaced by its subsets the data has; a family none
    of whose subsets are in the data is one line naming them."""
    families = task.families()
    out: list[str] = []
    for item in items:
        if item not in families or item in dataset.subsets:
            out.append(item)
            continue
        members = [s for s in families[item] if s in dataset.subsets]
        if not members:
            raise BindkitError(
                f"--subsets {item}: none of its subsets ({', '.join(families[item])}) are in "
                f"{task.metadata.name}'s data; use {', '.join(dataset.subsets)}"
            )
        out += [s for s in members if s not in out]
    return list(dict.fromkeys(out))


def _load(model: str | Embedder, batch_size: int | None, cache: bool | str | Path) -> Embedder:
    if not isinstance(model, str):
        return model
    from bindkit.embed.registry import load_embedder

    return load_embedder(model, batch_size=batch_size, cache=cache)


def headline(record: dict[str, Any], meta: Any) -> str:
    """The task's main score (and its declared extra scores) as percentages."""
    scores = record["scores"]
    names = (meta.main_score, *meta.scores)
    shown = [(k, scores[k]) for k in names if isinstance(scores.get(k), int | float)]
    return ", ".join(f"{k} {100 * v:.1f}%" for k, v in shown)


def _say(verbose: bool, message: str) -> None:
    if verbose:
        print(message, file=sys.stderr)
