"""``bindkit demo finetune --model builtin:tiny-clip``: text-only LoRA on tiny-clip's text tower,
SABER-shapes tt / ti / it / ii before and after.

Steps: (1) the evaluation set, SABER-shapes seed 0, rendered by the procedural renderer into
``OUT/saber`` once (a rerun reuses the images); (2) training texts: a SABER-shapes draw with
another seed, every MCQ dropped any of whose items has the binding set of an evaluation item
(and the run refuses if one is left, :func:`check_disjoint`), three triplets per MCQ (query →
binding-preserving candidate vs each swap) in SABER's text form; (3) the teacher: for each
training text, the frozen base text tower's embeddings of :data:`ORDERINGS` orderings of its
pairs, averaged (a prompt ensemble over word order, :class:`~bindkit.train.auxiliary.
EnsembleDistillationTerm`); (4) LoRA on the text tower (the image tower is frozen and no image
enters training) with the triplet hinge plus distillation to that ensemble; (5) the four
pairings through ``bindkit.evaluate``, ``OUT/demo.md`` and ``OUT/demo.json``. Torch threads
and deterministic algorithms are pinned, so a rerun gives the same table.
"""

from __future__ import annotations

import dataclasses
import json
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text
from bindkit._lock import directory_lock
from bindkit.errors import BindkitError

MODEL = "builtin:tiny-clip"
VOCAB = "shapes"
EVAL_SEED = 0  # the default SABER-shapes draw (the model card's evaluation set)
TRAIN_SEED = 2  # seed 1 trained tiny-clip itself; seed 0 is the evaluation set
TRAIN_PER_N = 100
ORDERINGS = 8  # wordings per training text in the teacher's ensemble
LR = 2e-3
LORA_R = 8
BATCH = 32
MARGIN = 0.05
ENSEMBLE_BATCH = 128  # ensemble-distilled sentences per micro-batch
ENSEMBLE_WEIGHT = 1.0
PAIRINGS = ("tt", "ti", "it", "ii")
TRAIN = "train.jsonl"
ENSEMBLE = "ensemble.jsonl"
# What the demo writes into OUT: a rerun reuses and replaces these, so OUT may hold nothing else.
DEMO_ENTRIES = frozenset(
    {"saber", "data", "run", "results", "demo.md", "demo.json", ".bindkit.lock"}
)


@dataclass
class TinyClipDemoOptions:
    """Options of ``bindkit demo finetune --model builtin:tiny-clip``."""

    out: str
    saber_per_n: int = 40  # evaluation MCQs per N (N = 2..10); 200 is the default shapes set
    steps: int = 200  # optimizer steps
    train_per_n: int = TRAIN_PER_N  # training MCQs per N (of the seed-2 draw)
    seed: int = 0  # LoRA init and batch order
    threads: int = 2
    progress: bool = True

    def __post_init__(self) -> None:
        check_shapes_demo(self, train_per_n_min=2)


def check_shapes_demo(options: Any, *, train_per_n_min: int) -> None:
    """The options the shapes demos share (tiny-clip's and tiny-vlm's): evaluation and training
    MCQs per N (even: half independent, half nested), steps, seed and threads."""
    from bindkit._checks import check_range

    check_range("--saber-per-n", options.saber_per_n, 2, 1000)
    if options.saber_per_n % 2:
        raise BindkitError(
            f"--saber-per-n {options.saber_per_n}: must be even (half independent MCQs, half "
            "nested chains)"
        )
    check_range("--steps", options.steps, 1, 100_000)
    check_range("train_per_n", options.train_per_n, train_per_n_min, 10_000)
    if options.train_per_n % 2:
        raise BindkitError(f"train_per_n {options.train_per_n}: must be even")
    check_range("--seed", options.seed, 0, 2**31 - 1)
    check_range("--threads", options.threads, 1, 1024)


def _say(options: TinyClipDemoOptions, text: str) -> None:
    if options.progress:
        print(text, file=sys.stderr, flush=True)


def binding_sets(mcqs: Sequence[Any]) -> set[frozenset[tuple[str, str]]]:
    """The order-free binding set of every item (query and candidates) of the MCQs."""
    return {frozenset(item.bindings) for mcq in mcqs for item in mcq.items}


def disjoint_mcqs(train: Sequence[Any], held_out: Sequence[Any]) -> list[Any]:
    """The training MCQs none of whose items has the binding set of a held-out item."""
    seen = binding_sets(held_out)
    return [m for m in train if not any(frozenset(i.bindings) in seen for i in m.items)]


def check_disjoint(rows: Sequence[dict[str, Any]], held_out: Sequence[Any]) -> None:
    """Refuse training rows that hold an evaluation binding set (in any text of any row).

    Raises:
        BindkitError: naming the first such text.
    """
    seen = binding_sets(held_out)
    for row in rows:
        for key in ("query", "positive", "negative"):
            if frozenset(map(tuple, row["bindings"][key])) in seen:
                raise BindkitError(
                    f"training text {row[key]!r} has the bindings of an evaluation item; the "
                    "training draw must not contain the evaluation set's binding sets"
                )


def triplet_rows(mcqs: Sequence[Any]) -> list[dict[str, Any]]:
    """Three triplets per MCQ in the triplet-file format: the query's text → the
    binding-preserving candidate's vs each swapped candidate's (SABER's text form)."""
    rows = []
    for mcq in mcqs:
        positive = mcq.candidate("binding_preserving")
        for role in ("attribute_swap", "object_swap", "joint_swap"):
            negative = mcq.candidate(role)
            rows.append(
                {
                    "query": mcq.query.text,
                    "positive": positive.text,
                    "negative": negative.text,
                    "negative_kind": role,
                    "bindings": {
                        "query": [list(b) for b in mcq.query.bindings],
                        "positive": [list(b) for b in positive.bindings],
                        "negative": [list(b) for b in negative.bindings],
                    },
                }
            )
    return rows


def orderings(bindings: Sequence[tuple[str, str]], count: int, rng: random.Random) -> list[str]:
    """``count`` captions of the same pairs in random orders, in SABER's text form.

    Example:
        >>> orderings([("red", "cube")], 2, random.Random(0))
        ['A red cube.', 'A red cube.']
    """
    from bindkit.saber import language

    texts = []
    for _ in range(count):
        pairs = list(bindings)
        rng.shuffle(pairs)
        texts.append(language.render(pairs))
    return texts


def ensemble_rows(mcqs: Sequence[Any], count: int, seed: int) -> list[dict[str, Any]]:
    """Each distinct training text with ``count`` orderings of its pairs (the teacher's
    ensemble)."""
    rng = random.Random(f"{seed}/tiny-clip-ensemble")
    rows: dict[str, list[str]] = {}
    for mcq in mcqs:
        for item in mcq.items:
            if item.text not in rows:
                rows[item.text] = orderings(item.bindings, count, rng)
    return [{"text": text, "members": members} for text, members in rows.items()]


def _saber(options: TinyClipDemoOptions, out: Path) -> tuple[Path, list[Any]]:
    """Generate and render the evaluation set into OUT/saber (reused when it matches)."""
    from bindkit.saber.build import generate_saber
    from bindkit.saber.io import read_manifest, read_saber
    from bindkit.saber.render import make_backend
    from bindkit.saber.render.renderer import render_saber

    saber = out / "saber"
    manifest = read_manifest(saber) if (saber / "manifest.json").is_file() else None
    found = (manifest or {}).get("seed"), ((manifest or {}).get("options") or {}).get("per_n")
    if found != (EVAL_SEED, options.saber_per_n):
        per_n = options.saber_per_n
        generate_saber(saber, seed=EVAL_SEED, per_n=per_n, vocab=VOCAB, overwrite=True)
    started = time.perf_counter()
    render_saber(saber, make_backend("procedural", seed=EVAL_SEED), progress=options.progress)
    _say(options, f"evaluation images ready ({time.perf_counter() - started:.0f} s)")
    return saber, list(read_saber(saber).mcqs)


def _train(
    options: TinyClipDemoOptions, out: Path, rows: list[dict[str, Any]], ensemble: list[Any]
) -> dict[str, Any]:
    from bindkit._io import atomic_write_bytes, jsonl_bytes, sha256_file
    from bindkit.embed.registry import load_embedder
    from bindkit.train.auxiliary import EnsembleDistillationTerm
    from bindkit.train.config import TrainConfig
    from bindkit.train.reuse import reusable_run
    from bindkit.train.trainer import train_triplets

    data = out / "data"
    atomic_write_bytes(data / TRAIN, jsonl_bytes(rows))
    atomic_write_bytes(data / ENSEMBLE, jsonl_bytes(ensemble))
    config = TrainConfig(
        model=MODEL,
        train=str(data / TRAIN),
        out=str(out / "run"),
        lr=LR,
        lora_r=LORA_R,
        lora_alpha=float(LORA_R),
        batch_size=BATCH,
        margin=MARGIN,
        max_steps=options.steps,
        lines=False,
        model_dropout=False,
        save_every=50,
        seed=options.seed,
        progress=options.progress,
    )
    # the one reuse rule: the trainer's run identity (every option and input file), with the
    # ensemble term's data and weights, which the config does not name
    extra = {
        "ensemble_sha256": sha256_file(data / ENSEMBLE),
        "ensemble": {"batch": ENSEMBLE_BATCH, "weight": ENSEMBLE_WEIGHT},
    }
    record = reusable_run(config, extra_identity=extra)
    if record is not None:
        _say(options, f"training finished earlier, reusing {config.out}")
        return record
    teacher = load_embedder(MODEL, batch_size=512, cache=False, progress=False)
    term = EnsembleDistillationTerm(
        teacher,
        [r["text"] for r in ensemble],
        [r["members"] for r in ensemble],
        ENSEMBLE_BATCH,
        ENSEMBLE_WEIGHT,
    )
    return train_triplets(
        dataclasses.replace(config, overwrite=True),
        auxiliary_losses=[term],
        reuse=True,
        extra_identity=extra,
    )


def evaluate_pairings(
    out: Path, saber: Path, models: dict[str, str]
) -> tuple[dict[str, Any], list[Any]]:
    """The four SABER pairings of each ``label → spec`` in ``models`` on the rendered set
    ``saber``, results under ``out``: the demo table (label → pairing → MCQ accuracy) and each
    model's provenance. Used by both demos and ``benchmarks/vlm_analyses.py``."""
    from bindkit.evaluation import evaluate

    table: dict[str, dict[str, float]] = {}
    provenance = []
    for label, spec in models.items():
        records = evaluate(
            [spec],
            task="saber",
            data=saber,
            pairings=list(PAIRINGS),
            out=out / "results",
            cache=False,
            report=False,
            verbose=False,
        )
        table[label] = {r["pairing"]: r["scores"]["mcq_accuracy"] for r in records}
        provenance += [
            {"model": label, "pairing": r["pairing"], **r["provenance"]} for r in records
        ]
    return table, provenance


def check_demo_out(out: Path) -> None:
    """Refuse an ``--out`` that is neither new, empty, nor an earlier run of this demo.

    A rerun reuses the demo's own files and replaces them where they differ (``saber/``,
    ``data/``, ``run/`` …), so a folder of the user's would lose files of the same names. An
    earlier run is recognised by holding only :data:`DEMO_ENTRIES` and its evaluation set's
    ``saber/manifest.json`` (the first file the demo writes).

    Raises:
        BindkitError: naming the first entry that is not the demo's.
    """
    from bindkit._io import check_can_create

    check_can_create(out)
    if not out.is_dir() or not any(out.iterdir()):
        return
    foreign = sorted(p.name for p in out.iterdir() if p.name not in DEMO_ENTRIES)
    if not foreign and not (out / "saber" / "manifest.json").is_file():
        foreign = ["no saber/manifest.json"]
    if foreign:
        raise BindkitError(
            f"--out {out}: not an earlier run of this demo (holds {foreign[0]}); give a new or "
            "empty folder"
        )


def run_tiny_clip_demo(options: TinyClipDemoOptions) -> dict[str, Any]:
    """Run the demo; returns the summary also written to ``OUT/demo.json``."""
    from bindkit.demo.finetune import pinned

    out = Path(options.out)
    check_demo_out(out)
    with directory_lock(out, "bindkit demo finetune"), pinned(options.threads):
        return _run(options, out)


def _run(options: TinyClipDemoOptions, out: Path) -> dict[str, Any]:
    from bindkit import __version__
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.vocab import load_vocabulary

    started = time.perf_counter()
    saber, held_out = _saber(options, out)
    drawn = build_saber(
        SaberOptions(seed=TRAIN_SEED, per_n=options.train_per_n), load_vocabulary(VOCAB)
    )
    train = disjoint_mcqs(drawn, held_out)
    rows = triplet_rows(train)
    check_disjoint(rows, held_out)
    ensemble = ensemble_rows(train, ORDERINGS, options.seed)
    _say(options, f"training: {len(rows)} triplets from {len(train)} of {len(drawn)} MCQs")
    run = _train(options, out, rows, ensemble)
    adapter = out / "run" / "adapter-raw"
    models = {"base": MODEL, "text-only LoRA": f"{MODEL}+adapter={adapter}"}
    table, provenance = evaluate_pairings(out, saber, models)
    seconds = time.perf_counter() - started
    counts = {
        "eval_mcqs": len(held_out),
        "train_mcqs": len(train),
        "dropped_mcqs": len(drawn) - len(train),
        "triplets": len(rows),
        "ensemble_texts": len(ensemble),
    }
    summary = {
        "table": table,
        "counts": counts,
        "options": dataclasses.asdict(options),
        "recipe": {
            "lr": LR,
            "lora_r": LORA_R,
            "batch": BATCH,
            "margin": MARGIN,
            "orderings": ORDERINGS,
            "ensemble_batch": ENSEMBLE_BATCH,
            "ensemble_weight": ENSEMBLE_WEIGHT,
            "train_seed": TRAIN_SEED,
            "train_per_n": options.train_per_n,
        },
        "optimizer_steps": run["optimizer_steps"],
        "seconds": round(seconds, 1),
        "bindkit": __version__,
        "provenance": provenance,
    }
    atomic_write_text(
        out / "demo.md", render_table(options, counts, table, seconds, run["optimizer_steps"])
    )
    atomic_write_text(out / "demo.json", json.dumps(summary, indent=2) + "\n")
    return summary


def render_table(
    options: TinyClipDemoOptions,
    counts: dict[str, int],
    table: dict[str, dict[str, float]],
    seconds: float,
    steps: int,
) -> str:
    """``demo.md``; ``steps`` is what ran (one epoch may end before ``--steps``)."""
    lines = [
        "# bindkit demo finetune: builtin:tiny-clip, text-only LoRA (CPU)",
        "",
        "| model | " + " | ".join(PAIRINGS) + " |",
        "|---" * (len(PAIRINGS) + 1) + "|",
    ]
    for label, row in table.items():
        lines.append(f"| {label} | " + " | ".join(f"{100 * row[p]:.1f}" for p in PAIRINGS) + " |")
    lines += [
        "",
        f"- evaluation: SABER-shapes seed {EVAL_SEED}, {counts['eval_mcqs']} MCQs "
        f"({options.saber_per_n} per N, N = 2..10), rendered procedurally into `saber/`; MCQ "
        "accuracy in % (chance 25).",
        f"- training texts only: SABER-shapes seed {TRAIN_SEED}, {options.train_per_n} per N, "
        f"{counts['dropped_mcqs']} MCQs dropped for holding an evaluation binding set, "
        f"{counts['triplets']} triplets (query → binding-preserving vs each swap).",
        f"- loss: hinge {MARGIN} + {ENSEMBLE_WEIGHT} · distillation of {ENSEMBLE_BATCH} training "
        f"texts per batch to the frozen text tower's mean over {ORDERINGS} orderings of their "
        "pairs; no image and no image-tower output enters training.",
        f"- LoRA r {LORA_R} on the text tower's attention, lr {LR}, batch {BATCH}, "
        f"{steps} steps, {options.threads} torch threads, deterministic algorithms; "
        f"wall time {seconds / 60:.1f} min.",
    ]
    return "\n".join(lines) + "\n"
