"""``vlm_analyses.py gap``: the modality gap of the base model and each adapter, once per prompt
layout, with SABER tt / ti / it / ii under each (see ``vlm_analyses.py``).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from _vlm_common import (
    EVAL_SEED,
    NATIVE,
    cached,
    checkpoint_folder,
    eval_set,
    model_identity,
    provenance,
    saber_scores,
    spread,
    table_md,
    write_outputs,
)

from bindkit.errors import BindkitError

# --- gap -------------------------------------------------------------------------------------


def gap_specs(model: str, adapter: Path | None) -> dict[str, str]:
    """``native``: the model's own spec (its family's prompt format); ``mllm``: the generic
    ``mllm`` family on the same folder and options, whose prompt layouts
    ``analyze_modality_gap`` compares."""
    folder, options, base_adapter = checkpoint_folder(model)
    if base_adapter:
        raise BindkitError(f"--model {model}: give the adapter with --adapter, not in the spec")
    extra = "".join(f"+{k}={v}" for k, v in options.items())
    tail = f"+adapter={adapter}" if adapter else ""
    return {"native": f"{model}{tail}", "mllm": f"mllm:{folder}{extra}{tail}"}


def run_gap(args: argparse.Namespace) -> dict[str, Any]:
    """Modality gap and alignment per prompt layout (seed 002, Table I in kind)."""
    from bindkit.analysis.modality_gap import analyze_modality_gap
    from bindkit.support import atomic_write_bytes, jsonl_bytes, sha256_file

    started = time.perf_counter()
    work = args.out / "gap"
    adapters: dict[str, Path | None] = {"base": None}
    for adapter in args.adapter:
        if not (adapter / "adapter_config.json").is_file():
            raise BindkitError(f"--adapter {adapter}: no adapter_config.json; give a LoRA folder")
        if adapter.name in adapters:
            raise BindkitError(
                f"--adapter {adapter}: a second adapter named {adapter.name!r} (rows are labelled "
                "by folder name); copy or link one under another name"
            )
        adapters[adapter.name] = adapter
    specs = {label: gap_specs(args.model, adapter) for label, adapter in adapters.items()}
    saber, mcqs = eval_set(args.out, args.eval_per_n, args.progress)
    pairs = work / "pairs.jsonl"
    queries = spread([m.query for m in mcqs], args.pairs)
    rows = [{"image": str((saber / q.image).resolve()), "caption": q.text} for q in queries]
    atomic_write_bytes(pairs, jsonl_bytes(rows))
    layouts: dict[str, dict[str, dict[str, Any]]] = {}
    scores: dict[str, dict[str, dict[str, Any]]] = {}
    for label, adapter in adapters.items():
        layouts[label], scores[label] = {}, {}
        files = args.model + (f"+adapter={adapter}" if adapter else "")
        for kind, spec in specs[label].items():
            identity = {**model_identity(files), "spec": spec}
            identity["pairs"] = sha256_file(pairs)

            def compute(spec: str = spec, folder: Path = work / label / kind) -> Any:
                return analyze_modality_gap(spec, pairs, folder, cache=False)["layouts"]

            found = cached(work / label / f"{kind}.json", identity, compute)
            for layout, result in found.items():
                name = NATIVE if kind == "native" else f"mllm {layout}"
                layouts[label][name] = result
                if args.scores:
                    row = f"{label} · {name}"
                    found_scores = saber_scores(work, saber, row, result["spec"], files)
                    scores[label][name] = found_scores
    record = {
        "layouts": layouts,
        "scores": scores,
        "pairs": {"file": str(pairs), "count": len(rows), "saber": str(saber)},
        "provenance": provenance(args, started),
    }
    names = list(next(iter(layouts.values())))
    markdown = [
        f"# Modality gap and alignment per prompt format: {args.model}",
        "",
        "| prompt | " + " | ".join(f"{m} gap | {m} align" for m in layouts) + " |",
        "|---" + "|---:|---:" * len(layouts) + "|",
    ]
    for name in names:
        cells = [
            f"{layouts[m][name]['modality_gap']:.3f} | {layouts[m][name]['alignment']:.3f}"
            for m in layouts
        ]
        markdown.append(f"| {name} | " + " | ".join(cells) + " |")
    markdown += [
        "",
        f"- pairs: the query scene and caption of {len(rows)} of the {len(mcqs)} MCQs of "
        f"SABER-shapes seed {EVAL_SEED} ({args.eval_per_n} per N, evenly spaced over N); "
        "images embedded as documents, captions "
        "as queries, no instruction.",
        "- gap: distance between the image and caption centroids; align: mean cosine of matched "
        "pairs (`bindkit analyze modality-gap`).",
    ]
    if args.scores:
        table = {
            f"{label} · {name}": found["scores"]
            for label, by_name in scores.items()
            for name, found in by_name.items()
        }
        markdown += [
            "",
            f"SABER MCQ accuracy per prompt format (the {len(mcqs)} MCQs of the same set, %):",
            "",
            *table_md(table),
        ]
    write_outputs(work, "gap", record, markdown)
    return record
