"""``bindkit demo finetune --model builtin:tiny-vlm``: text-only LoRA on the language layers of a
tiny Qwen3-VL embedder, SABER-shapes tt / ti / it / ii before and after.

The seed's cross-modal claim on a model bindkit ships: one language model reads both modalities,
so finetuning it on text alone can move how it embeds images. Steps, as the tiny-clip demo
(:mod:`bindkit.demo.tiny_clip`, whose helpers this reuses): (1) the evaluation set, SABER-shapes
seed 0, rendered into ``OUT/saber`` once; (2) training texts: a SABER-shapes draw with seed 2,
every MCQ dropped any of whose items has the binding set of an evaluation item (checked again on
the rows, :func:`~bindkit.demo.tiny_clip.check_disjoint`), three triplets per MCQ (query →
binding-preserving candidate vs each swap), the last :data:`VAL_TRIPLETS` held out for the
LiNeS sweep; (3) LoRA on the language model's attention (never on ``visual``: the vision tower
and merger stay bit-identical) with the triplet hinge, plus distillation of single-pair captions
("A red cube.") to the frozen base model, which anchors the text side to the images it was
aligned with; (4) LiNeS on the final adapter (α chosen on the held-out triplets); (5) the four
pairings of base, raw LoRA and LiNeS through ``bindkit.evaluate``, ``OUT/demo.md`` and
``OUT/demo.json``. Torch threads and deterministic algorithms are pinned: a rerun gives the same
table.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text
from bindkit._lock import directory_lock
from bindkit.errors import BindkitError

MODEL = "builtin:tiny-vlm"
TRAIN_SEED = 2  # seed 1 trained tiny-vlm itself; seed 0 is the evaluation set
TRAIN_PER_N = 100
VAL_TRIPLETS = 120  # the last training triplets, held out for the LiNeS sweep (10 passes)
LR = 1e-3
LORA_R = 8
BATCH = 32
MARGIN = 0.1
PRESERVE_WEIGHT = 1.0
PRESERVE_BATCH = 64
TRAIN, VAL, PRESERVE = "train.jsonl", "val.jsonl", "preserve.txt"


@dataclass
class TinyVlmDemoOptions:
    """Options of ``bindkit demo finetune --model builtin:tiny-vlm``."""

    out: str
    saber_per_n: int = 20  # evaluation MCQs per N (N = 2..10); 200 is the default shapes set
    steps: int = 300  # optimizer steps
    train_per_n: int = TRAIN_PER_N  # training MCQs per N (of the seed-2 draw)
    seed: int = 0  # LoRA init and batch order
    threads: int = 2
    progress: bool = True
    # the same recipe on another Qwen-VL embedder (benchmarks/gpu_vlm_recipe.py: a local
    # Qwen3-VL-Embedding-2B on a GPU); the CLI runs builtin:tiny-vlm
    model: str = MODEL
    lr: float = LR

    def __post_init__(self) -> None:
        from bindkit.demo.tiny_clip import check_shapes_demo

        check_shapes_demo(self, train_per_n_min=4)
        if not 0 < self.lr < 1:
            raise BindkitError(f"lr {self.lr}: must be in (0, 1)")


def _say(options: TinyVlmDemoOptions, text: str) -> None:
    if options.progress:
        print(text, file=sys.stderr, flush=True)


def single_pair_captions() -> list[str]:
    """ "A red cube." for every attribute and object of the shapes vocabulary: captions with
    nothing to bind, whose base-model embeddings the preservation term keeps."""
    from bindkit.saber import language
    from bindkit.saber.vocab import load_vocabulary

    vocab = load_vocabulary("shapes")
    return [language.render([(a.name, o)]) for a in vocab.attributes for o in vocab.objects]


def run_tiny_vlm_demo(options: TinyVlmDemoOptions) -> dict[str, Any]:
    """Run the demo; returns the summary also written to ``OUT/demo.json``."""
    from bindkit.demo.finetune import pinned
    from bindkit.demo.tiny_clip import check_demo_out

    out = Path(options.out)
    check_demo_out(out)
    with directory_lock(out, "bindkit demo finetune"), pinned(options.threads):
        return _run(options, out)


def train_lora(
    options: TinyVlmDemoOptions, out: Path, rows: list[dict[str, Any]]
) -> dict[str, Any]:
    """The demo's text-only LoRA run on triplet ``rows``: writes them (the last ones held out)
    and the single-pair preservation captions under ``out/data`` and trains with
    :func:`~bindkit.train.trainer.train_triplets` into ``out/run`` (reused when finished);
    returns its summary. Used by the demo and by ``benchmarks/vlm_analyses.py overlap``."""
    from bindkit._io import atomic_write_bytes, jsonl_bytes
    from bindkit.train.config import TrainConfig
    from bindkit.train.trainer import train_triplets

    data = out / "data"
    held = min(VAL_TRIPLETS, len(rows) // 4)
    atomic_write_bytes(data / TRAIN, jsonl_bytes(rows[:-held]))
    atomic_write_bytes(data / VAL, jsonl_bytes(rows[-held:]))
    atomic_write_text(data / PRESERVE, "\n".join(single_pair_captions()) + "\n")
    config = TrainConfig(
        model=options.model,
        train=str(data / TRAIN),
        val=str(data / VAL),
        preserve=str(data / PRESERVE),
        preserve_weight=PRESERVE_WEIGHT,
        preserve_batch=PRESERVE_BATCH,
        out=str(out / "run"),
        lr=options.lr,
        lora_r=LORA_R,
        lora_alpha=float(LORA_R),
        batch_size=BATCH,
        margin=MARGIN,
        max_steps=options.steps,
        epochs=1000,
        model_dropout=False,
        save_every=100,
        eval_every=100_000,
        seed=options.seed,
        progress=options.progress,
    )
    return train_triplets(dataclasses.replace(config, overwrite=True), reuse=True)


def _run(options: TinyVlmDemoOptions, out: Path) -> dict[str, Any]:
    from bindkit import __version__
    from bindkit.demo.tiny_clip import (
        _saber,
        check_disjoint,
        disjoint_mcqs,
        evaluate_pairings,
        triplet_rows,
    )
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.vocab import load_vocabulary

    started = time.perf_counter()
    saber, held_out = _saber(options, out)  # type: ignore[arg-type]
    drawn = build_saber(
        SaberOptions(seed=TRAIN_SEED, per_n=options.train_per_n), load_vocabulary("shapes")
    )
    train = disjoint_mcqs(drawn, held_out)
    rows = triplet_rows(train)
    check_disjoint(rows, held_out)
    _say(options, f"training: {len(rows)} triplets from {len(train)} of {len(drawn)} MCQs")
    run = train_lora(options, out, rows)
    model = options.model
    models = {
        "base": model,
        "text-only LoRA": f"{model}+adapter={out / 'run' / 'adapter-raw'}",
        "text-only LoRA + LiNeS": f"{model}+adapter={out / 'run' / 'adapter-lines'}",
    }
    table, provenance = evaluate_pairings(out, saber, models)
    seconds = time.perf_counter() - started
    counts = {
        "eval_mcqs": len(held_out),
        "train_mcqs": len(train),
        "dropped_mcqs": len(drawn) - len(train),
        "triplets": len(rows),
        "preserved_captions": len(single_pair_captions()),
    }
    summary = {
        "table": table,
        "counts": counts,
        "options": dataclasses.asdict(options),
        "recipe": {
            "lr": options.lr,
            "lora_r": LORA_R,
            "batch": BATCH,
            "margin": MARGIN,
            "preserve_weight": PRESERVE_WEIGHT,
            "preserve_batch": PRESERVE_BATCH,
            "val_triplets": VAL_TRIPLETS,
            "train_seed": TRAIN_SEED,
            "train_per_n": options.train_per_n,
            "lines_alpha": run.get("lines", {}).get("alpha") if run.get("lines") else None,
        },
        "optimizer_steps": run["optimizer_steps"],
        "seconds": round(seconds, 1),
        "bindkit": __version__,
        "provenance": provenance,
    }
    atomic_write_text(out / "demo.md", render_table(options, counts, table, summary, seconds))
    atomic_write_text(out / "demo.json", json.dumps(summary, indent=2) + "\n")
    return summary


def render_table(
    options: TinyVlmDemoOptions,
    counts: dict[str, int],
    table: dict[str, dict[str, float]],
    summary: dict[str, Any],
    seconds: float,
) -> str:
    from bindkit.demo.tiny_clip import EVAL_SEED, PAIRINGS

    lines = [
        f"# bindkit demo finetune: {options.model}, text-only LoRA on the language layers",
        "",
        "| model | " + " | ".join(PAIRINGS) + " |",
        "|---" * (len(PAIRINGS) + 1) + "|",
    ]
    for label, row in table.items():
        lines.append(f"| {label} | " + " | ".join(f"{100 * row[p]:.1f}" for p in PAIRINGS) + " |")
    alpha = summary["recipe"]["lines_alpha"]
    lines += [
        "",
        f"- evaluation: SABER-shapes seed {EVAL_SEED}, {counts['eval_mcqs']} MCQs "
        f"({options.saber_per_n} per N, N = 2..10), rendered procedurally into `saber/`; MCQ "
        "accuracy in % (chance 25).",
        f"- training texts only: SABER-shapes seed {TRAIN_SEED}, {options.train_per_n} per N, "
        f"{counts['dropped_mcqs']} MCQs dropped for holding an evaluation binding set, "
        f"{counts['triplets']} triplets (query → binding-preserving vs each swap), "
        f"the last {VAL_TRIPLETS} held out for the LiNeS sweep.",
        f"- loss: hinge {MARGIN} + {PRESERVE_WEIGHT} · distillation of "
        f'{counts["preserved_captions"]} single-pair captions ("A red cube.") to the frozen '
        "base model; no image enters training.",
        f"- LoRA r {LORA_R} on the language model's attention (the vision tower and merger are "
        f"untouched), lr {options.lr}, batch {BATCH}, {summary['optimizer_steps']} steps, LiNeS α "
        f"{'–' if alpha is None else f'{alpha:g}'}, {options.threads} torch threads, "
        f"deterministic algorithms; wall time {seconds / 60:.1f} min.",
    ]
    return "\n".join(lines) + "\n"
