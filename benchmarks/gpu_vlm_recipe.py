"""The tiny-vlm demo's recipe on real weights: text-only LoRA on the language layers of a local
Qwen3-VL-Embedding checkpoint, SABER-shapes tt/ti/it/ii before and after (base, raw LoRA, LiNeS),
SugarCrepe++ text-only TOT (with ``--scpp``), and throughput.

One GPU, no download: the checkpoint is a local folder, SABER-shapes is generated and rendered
procedurally, SugarCrepe++ is a local ``data/`` folder (``bindkit fetch sugarcrepe_pp``)::

    python benchmarks/gpu_vlm_recipe.py --model-dir /models/Qwen3-VL-Embedding-2B \\
        --out runs/vlm-2b --saber-per-n 200 --steps 300 --lr 5e-5 --scpp data/sugarcrepe_pp

The recipe is :mod:`bindkit.demo.tiny_vlm`'s (the same triplets, disjointness check,
preservation, LiNeS and evaluation); only the model, the learning rate and the sizes change.
Writes ``OUT/demo.md``/``demo.json`` (the recipe's table) and ``OUT/gpu_recipe.json``/``.md``
(SugarCrepe++ and throughput). Tested on the CPU with ``--spec builtin:tiny-vlm``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError


def throughput(spec: str, saber: Path, count: int) -> dict[str, float]:
    """Texts and images per second embedding the first ``count`` SABER items (one warm-up
    batch first, uncached)."""
    from PIL import Image

    from bindkit.embed.registry import load_embedder
    from bindkit.saber.io import read_saber

    data = read_saber(saber)
    items = [(item.text, item.image) for mcq in data.mcqs for item in mcq.items][:count]
    texts = [t for t, _ in items]
    images = [Image.open(saber / path).convert("RGB") for _, path in items if path]
    embedder = load_embedder(spec, cache=False, progress=False)
    embedder.embed_texts(texts[:8])
    embedder.embed_images(images[:8])
    started = time.perf_counter()
    embedder.embed_texts(texts)
    text_seconds = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed_images(images)
    image_seconds = time.perf_counter() - started
    return {
        "texts": len(texts),
        "texts_per_second": round(len(texts) / text_seconds, 1),
        "images": len(images),
        "images_per_second": round(len(images) / image_seconds, 1),
    }


def sugarcrepe(specs: dict[str, str], data: Path, out: Path) -> dict[str, dict[str, float]]:
    """SugarCrepe++ text-only TOT accuracy per subset for each model."""
    from bindkit.demo.finetune import SCPP_SUBSETS
    from bindkit.evaluation import evaluate

    table: dict[str, dict[str, float]] = {}
    for label, spec in specs.items():
        records = evaluate(
            [spec],
            task="sugarcrepe_pp",
            data=data,
            subsets=list(SCPP_SUBSETS),
            out=out,
            cache=False,
            report=False,
            verbose=False,
        )
        table[label] = {r["subset"]: r["scores"]["tot_accuracy"] for r in records}
    return table


def run(args: argparse.Namespace) -> dict[str, Any]:
    from bindkit.demo.tiny_vlm import TinyVlmDemoOptions, run_tiny_vlm_demo
    from bindkit.support import atomic_write_text

    if args.model_dir is not None:
        if not (Path(args.model_dir) / "config.json").is_file():
            raise BindkitError(
                f"--model-dir {args.model_dir}: no config.json; give a local "
                "Qwen3-VL-Embedding checkpoint folder"
            )
        spec = f"qwen3-vl-embedding:{args.model_dir}"
    else:
        spec = args.spec
    out = Path(args.out)
    options = TinyVlmDemoOptions(
        out=str(out),
        saber_per_n=args.saber_per_n,
        steps=args.steps,
        train_per_n=args.train_per_n,
        threads=args.threads,
        model=spec,
        lr=args.lr,
        progress=not args.quiet,
    )
    started = time.perf_counter()
    demo = run_tiny_vlm_demo(options)
    seconds = time.perf_counter() - started
    record = json.loads((out / "run" / "train.json").read_text(encoding="utf-8"))
    triplets = record["optimizer_steps"] * record["config"]["batch_size"]
    result: dict[str, Any] = {
        "model": spec,
        "saber": demo["table"],
        "train": {
            "triplets": triplets,
            "seconds": record["train_seconds"],
            "triplets_per_second": round(triplets / max(record["train_seconds"], 1e-9), 1),
        },
        "embed": throughput(spec, out / "saber", args.throughput_items),
        "demo_seconds": round(seconds, 1),
    }
    if args.scpp is not None:
        specs = {
            "base": spec,
            "text-only LoRA + LiNeS": f"{spec}+adapter={out / 'run' / 'adapter-lines'}",
        }
        result["sugarcrepe_pp"] = sugarcrepe(specs, Path(args.scpp), out / "results-scpp")
    atomic_write_text(out / "gpu_recipe.json", json.dumps(result, indent=2) + "\n")
    atomic_write_text(out / "gpu_recipe.md", report(result))
    return result


def report(result: dict[str, Any]) -> str:
    lines = [
        f"# Text-only LoRA recipe on `{result['model']}`",
        "",
        "SABER-shapes MCQ accuracy (%):",
    ]
    lines += ["", "| model | tt | ti | it | ii |", "|---|---:|---:|---:|---:|"]
    for label, row in result["saber"].items():
        cells = " | ".join(f"{100 * row[p]:.1f}" for p in ("tt", "ti", "it", "ii"))
        lines.append(f"| {label} | {cells} |")
    scpp = result.get("sugarcrepe_pp")
    if scpp:
        subsets = sorted({s for row in scpp.values() for s in row})
        lines += ["", "SugarCrepe++ text-only TOT accuracy (%):", ""]
        lines += ["| model | " + " | ".join(subsets) + " |", "|---" + "|---:" * len(subsets) + "|"]
        for label, row in scpp.items():
            lines.append(
                f"| {label} | " + " | ".join(f"{100 * row[s]:.1f}" for s in subsets) + " |"
            )
    train, embed = result["train"], result["embed"]
    lines += [
        "",
        f"Throughput: training {train['triplets_per_second']} triplets/s "
        f"({train['triplets']} triplets in {train['seconds']} s); embedding "
        f"{embed['texts_per_second']} texts/s and {embed['images_per_second']} images/s "
        f"(base model, {embed['images']} SABER scenes); whole recipe {result['demo_seconds']} s.",
    ]
    return "\n".join(lines) + "\n"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    model = parser.add_mutually_exclusive_group(required=True)
    model.add_argument("--model-dir", help="local Qwen3-VL-Embedding checkpoint folder")
    model.add_argument("--spec", help="any model spec instead (the CPU test: builtin:tiny-vlm)")
    parser.add_argument("--out", required=True, help="output folder (new, or an earlier run)")
    parser.add_argument("--saber-per-n", type=int, default=200, help="evaluation MCQs per N")
    parser.add_argument("--train-per-n", type=int, default=100, help="training MCQs per N")
    parser.add_argument("--steps", type=int, default=300, help="optimizer steps")
    parser.add_argument("--lr", type=float, default=5e-5, help="5e-5 for 2B; 1e-3 for tiny-vlm")
    parser.add_argument("--scpp", help="SugarCrepe++ data folder (optional)")
    parser.add_argument("--throughput-items", type=int, default=256, help="scenes to time")
    parser.add_argument("--threads", type=int, default=8, help="torch CPU threads")
    parser.add_argument("-q", "--quiet", action="store_true")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        result = run(args)
    except BindkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(report(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
