"""The LiNeS trade-off of a text-only adapter on a multimodal-LLM embedder (seed 000, Table 12):
for each α, SABER tt/ti/it/ii (binding) against a general check, content retrieval.

The general check: every SABER query scene against every query caption of the set (and back),
recall@1 — which scene shows these objects and attributes at all. Binding is not needed for it
(the captions of different MCQs differ in content), so it measures what finetuning for binding
may cost: the plain image–caption alignment the model was trained for.

    python benchmarks/vlm_lines_sweep.py --model builtin:tiny-vlm \\
        --adapter OUT/run/adapter-raw --saber OUT/saber --out sweep --alphas 0 0.25 0.5 0.75 1

α = 1 is the raw adapter (LiNeS with β = 0); the base model is the first row. Writes
``OUT/sweep.json`` and ``OUT/sweep.md``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.errors import BindkitError

PAIRINGS = ("tt", "ti", "it", "ii")


def content_recall(spec: str, saber: Path) -> dict[str, float]:
    """Recall@1 of query scene → query caption and back over the whole set (pure ranking of the
    model's cosine similarities)."""
    from PIL import Image

    from bindkit.embed.registry import load_embedder
    from bindkit.saber.io import read_saber

    queries = [mcq.query for mcq in read_saber(saber).mcqs]
    embedder = load_embedder(spec, cache=False, progress=False)
    texts = embedder.embed_texts([q.text for q in queries])
    images = embedder.embed_images(
        [Image.open(saber / q.image).convert("RGB") for q in queries if q.image]
    )
    return recall_at_1(images, texts)


def recall_at_1(images: np.ndarray, texts: np.ndarray) -> dict[str, float]:
    """Row i of each matrix belongs with row i of the other.

    Example:
        >>> recall_at_1(np.eye(2), np.array([[1.0, 0.0], [1.0, 0.1]]))
        {'image_to_text': 1.0, 'text_to_image': 0.5}
    """
    similarity = images @ texts.T
    truth = np.arange(len(images))
    return {
        "image_to_text": float(np.mean(similarity.argmax(axis=1) == truth)),
        "text_to_image": float(np.mean(similarity.argmax(axis=0) == truth)),
    }


def saber_scores(spec: str, saber: Path, out: Path) -> dict[str, float]:
    from bindkit.evaluation import evaluate

    records = evaluate(
        [spec],
        task="saber",
        data=saber,
        pairings=list(PAIRINGS),
        out=out,
        cache=False,
        report=False,
        verbose=False,
    )
    return {r["pairing"]: r["scores"]["mcq_accuracy"] for r in records}


def sweep(model: str, adapter: Path, saber: Path, out: Path, alphas: Sequence[float]) -> Any:
    from bindkit.adapters.lines import apply_lines

    rows = []
    for alpha in [None, *alphas]:
        if alpha is None:
            spec, label = model, "base"
        elif alpha == 1:
            spec, label = f"{model}+adapter={adapter}", "α 1 (raw)"
        else:
            scaled = out / f"lines-{alpha:g}"
            apply_lines(adapter, scaled, alpha=alpha, overwrite=True)
            spec, label = f"{model}+adapter={scaled}", f"α {alpha:g}"
        row = {"label": label, "alpha": alpha, **saber_scores(spec, saber, out / "results")}
        row.update(content_recall(spec, saber))
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| model | tt | ti | it | ii | R@1 image→caption | R@1 caption→image |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        cells = [f"{100 * row[p]:.1f}" for p in PAIRINGS]
        cells += [f"{100 * row['image_to_text']:.1f}", f"{100 * row['text_to_image']:.1f}"]
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="builtin:tiny-vlm")
    parser.add_argument("--adapter", type=Path, required=True, help="the raw LoRA adapter")
    parser.add_argument("--saber", type=Path, required=True, help="a rendered SABER directory")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--alphas", type=float, nargs="+", default=[0.0, 0.25, 0.5, 0.75, 1.0])
    args = parser.parse_args(argv)
    from bindkit.support import atomic_write_text

    try:
        if any(not 0 <= a <= 1 for a in args.alphas):
            raise BindkitError(f"--alphas {args.alphas}: each in [0, 1]")
        rows = sweep(args.model, args.adapter, args.saber, args.out, args.alphas)
    except BindkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    atomic_write_text(args.out / "sweep.json", json.dumps(rows, indent=2) + "\n")
    atomic_write_text(args.out / "sweep.md", report(rows))
    print(report(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
