"""``bindkit eval`` as a library call: models x task x pairings → result files (+ a report)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit.embed.protocol import Embedder
from bindkit.errors import BindkitError
from bindkit.results.store import Policy, result_path, reusable, write_result
from bindkit.tasks.base import METRICS_VERSION, get_task, parse_pairings


def evaluate(
    models: Sequence[str | Embedder],
    *,
    task: str = "saber",
    data: str | Path | None = None,
    pairings: str | Sequence[str] | None = None,
    out: str | Path = "results",
    overwrite: Policy = "only-missing",
    query_instruction: str | None = None,
    batch_size: int | None = None,
    cache: bool | str | Path = True,
    report: bool = True,
    verbose: bool = True,
) -> list[dict[str, Any]]:
    """Evaluate each model on a task and write one result file per pairing.

    Args:
        models: Spec strings (``"st:default"``) or embedder objects.
        task: ``saber``, ``triplets`` or ``sts``.
        data: The task's data (a SABER directory, a triplet JSONL, an STS file); SABER without
            data evaluates the default set generated in memory.
        pairings: Subset of ``tt,ti,it,ii`` (query→candidate modality); default: every pairing the
            data and the model support.
        out: Results directory; files go to ``OUT/<model>/<task>/<data>/<pairing>.json``.
        overwrite: ``only-missing`` (default), ``never`` or ``always``; see
            :mod:`bindkit.results.store`.
        query_instruction: Task instruction given to queries (default: the model's own default).
        batch_size, cache: Passed to :func:`bindkit.load_embedder` for spec strings.
        report: Write ``OUT/report.md`` (and the accuracy-vs-N plot) over everything in ``out``.

    Returns:
        The result records, computed or reused, in order.
    """
    if not models:
        raise BindkitError("--model: give at least one model spec, e.g. --model st:default")
    task_impl = get_task(task)
    wanted = parse_pairings(
        pairings if pairings is None or isinstance(pairings, str) else list(pairings)
    )
    dataset = task_impl.load(None if data is None else str(data))
    out = Path(out)
    records: list[dict[str, Any]] = []
    for model in models:
        embedder = _load(model, batch_size, cache)
        spec = model if isinstance(model, str) else getattr(model, "spec", type(model).__name__)
        available = task_impl.pairings(dataset, embedder)
        chosen = available if wanted is None else wanted
        missing = [p for p in chosen if p not in available]
        if missing:
            raise BindkitError(
                f"--pairings {','.join(missing)}: not available for {spec} on {dataset.name} "
                f"(available: {','.join(available) or 'none'}); image pairings need images in the "
                "data and a model that embeds images"
            )
        model_record = {
            "spec": spec,
            "fingerprint": embedder.fingerprint,
            "description": embedder.describe(),  # once per model: it may digest weight files
        }
        for pairing in chosen:
            options = {"query_instruction": query_instruction}
            provenance = {
                "model_fingerprint": embedder.fingerprint,
                "task": task_impl.name,
                "data_sha256": dataset.sha256,
                "pairing": pairing,
                "options": options,
                "metrics_version": METRICS_VERSION,
            }
            path = result_path(out, spec, task_impl.name, dataset.name, pairing)
            existing = reusable(path, provenance, overwrite)
            if existing is not None:
                records.append(existing)
                _say(verbose, f"{spec} {task_impl.name} {pairing}: up to date ({path})")
                continue
            start = time.perf_counter()
            result = task_impl.evaluate(
                embedder, dataset, pairing, query_instruction=query_instruction
            )
            record = write_result(
                path,
                provenance=provenance,
                model=model_record,
                data={"name": dataset.name, "source": dataset.source, "sha256": dataset.sha256},
                result=result,
                seconds=time.perf_counter() - start,
            )
            records.append(record)
            _say(verbose, f"{spec} {task_impl.name} {pairing}: {_headline(record)} → {path}")
    if report:
        from bindkit.results.report import write_report

        target, plots = write_report(out)
        _say(verbose, f"report: {target}" + "".join(f", {p}" for p in plots))
    return records


def _load(model: str | Embedder, batch_size: int | None, cache: bool | str | Path) -> Embedder:
    if not isinstance(model, str):
        return model
    from bindkit.embed.registry import load_embedder

    return load_embedder(model, batch_size=batch_size, cache=cache)


def _headline(record: dict[str, Any]) -> str:
    scores = record["scores"]
    shown = [
        (k, scores[k])
        for k in ("mcq_accuracy", "map_independent", "map_nested", "triplet_accuracy", "spearman")
        if scores.get(k) is not None
    ]
    return ", ".join(f"{k} {100 * v:.1f}%" for k, v in shown)


def _say(verbose: bool, message: str) -> None:
    if verbose:
        print(message, file=sys.stderr)
