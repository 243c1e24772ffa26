"""bindkit vs a plain transformers (+ peft) loop at the sizes users bring: embedding (texts,
images) and LoRA training steps, on the same model object, the same inputs and the same batch.

The model is a published shape with random weights (``bindkit.embed.shapes``: the 2B
Qwen3-VL-Embedding by default, no download) or a local checkpoint (``--spec``, e.g. the real
all-MiniLM-L6-v2 as ``st:DIR``). One model is loaded and shared: the plain loop calls the very
``nn.Module`` bindkit loaded, so the timings differ only by the code around the forward pass.

- ``embed``: bindkit's ``embed_texts``/``embed_images`` (uncached) vs a loop that renders the same
  prompts with the tokenizer's chat template (or, for a sentence-transformers model, tokenises
  the texts), expands the image tokens, runs the model in batches of the same size and pools
  (last token, or the mean for st). The two outputs are compared first (they must agree): the
  same work is timed.
- ``train``: ``bindkit.train.train_triplets`` (the loaded model handed in; LoRA r 4 on q/k/v/o,
  hinge loss, AdamW) vs a plain peft loop (``get_peft_model``, the same LoRA, loss, optimiser
  and batches): seconds per optimizer step. LoRA is removed after each run so both start from
  the same base.

Rounds alternate (A B, B A, ...); the table gives min/median/max seconds and the ratio
plain / bindkit (> 1: bindkit faster) of the medians with the range of the per-round ratios.
Prints the markdown table (the command, date, load and versions above it) and writes it with
the numbers to ``OUT/<name>.md`` and ``.json``.

Run: ``python benchmarks/bench_real_shapes.py all --out runs/bench-shapes`` (CPU, 2B bf16: embed
and train on one loaded model); ``embed`` or ``train`` alone; ``--spec st:DIR --dtype float32``
for MiniLM.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from _alternate import Timings, alternate
from _args import positive

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("BINDKIT_PROGRESS", "0")

CAPTIONS = [
    "a red cube beside a blue kite",
    "a striped sphere on top of a wooden table",
    "the transparent bottle and an orange ball",
    "a small gray dog sitting next to a white cat",
    "an iridescent soap bubble above a green lawn",
    "two yellow chairs and a black umbrella",
    "a purple vase holding three pink flowers",
    "the metallic robot waves at a brown horse",
]


def texts(count: int) -> list[str]:
    """``count`` distinct captions (numbered past the first eight, so none is deduplicated)."""
    return [
        CAPTIONS[i % len(CAPTIONS)]
        + (f" number {i // len(CAPTIONS)}" if i >= len(CAPTIONS) else "")
        for i in range(count)
    ]


def images(count: int, side: int) -> list[Any]:
    """Random RGB images of ``side`` pixels (a multiple of 32: no resize changes them)."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    return [
        Image.fromarray(rng.integers(0, 256, (side, side, 3), dtype=np.uint8)) for _ in range(count)
    ]


# -- the plain loop ------------------------------------------------------------------------------
def plain_mllm_batch(embedder: Any, batch: Sequence[Any], modality: str) -> Any:
    """One batch as a user's own transformers code does it: chat template, image processor,
    image tokens expanded, forward, last-token pooling, L2 normalisation."""
    import torch

    tokenizer, model = embedder.tokenizer, embedder.model
    system = [{"type": "text", "text": "Represent the user's input."}]
    extra: dict[str, Any] = {}
    if modality == "image":
        content: list[dict[str, Any]] = [{"type": "image"}]
        prompts = [
            tokenizer.apply_chat_template(
                [{"role": "system", "content": system}, {"role": "user", "content": content}],
                tokenize=False,
                add_generation_prompt=True,
            )
        ] * len(batch)
        pixels = embedder.image_processor(images=list(batch), return_tensors="pt", do_resize=False)
        merge = int(embedder.image_processor.merge_size) ** 2
        prompts = [
            p.replace("<|image_pad|>", "<|image_pad|>" * (int(g.prod()) // merge))
            for p, g in zip(prompts, pixels["image_grid_thw"], strict=True)
        ]
        extra = {
            "pixel_values": pixels["pixel_values"].to(model.dtype),
            "image_grid_thw": pixels["image_grid_thw"],
        }
    else:
        prompts = [
            tokenizer.apply_chat_template(
                [
                    {"role": "system", "content": system},
                    {"role": "user", "content": [{"type": "text", "text": t}]},
                ],
                tokenize=False,
                add_generation_prompt=True,
            )
            for t in batch
        ]
    tokens = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    if "pixel_values" in extra:
        image_id = tokenizer.convert_tokens_to_ids("<|image_pad|>")
        extra["mm_token_type_ids"] = (tokens["input_ids"] == image_id).long()
    hidden = model(**tokens, **extra).last_hidden_state
    last = tokens["attention_mask"].sum(1) - 1  # right padding
    pooled = hidden[torch.arange(hidden.shape[0]), last]
    return torch.nn.functional.normalize(pooled.float(), dim=-1)


def plain_st_batch(embedder: Any, batch: Sequence[str], modality: str) -> Any:
    """One batch of a sentence-transformers checkpoint with plain transformers: tokenise,
    forward, mean over the real tokens, L2 normalisation."""
    import torch

    transformer = embedder.module[0]
    tokens = transformer.tokenizer(
        list(batch), return_tensors="pt", padding=True, truncation=True, max_length=256
    )
    hidden = transformer.auto_model(**tokens).last_hidden_state
    mask = tokens["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1)
    return torch.nn.functional.normalize(pooled.float(), dim=-1)


def is_st(embedder: Any) -> bool:
    """A sentence-transformers embedder (mean pooling), not a multimodal LLM (last token)."""
    return not hasattr(embedder, "tokenizer")


def plain_embed(embedder: Any, inputs: Sequence[Any], modality: str, batch_size: int = 8) -> Any:
    import numpy as np
    import torch

    one = (
        plain_st_batch
        if hasattr(embedder, "module") and not hasattr(embedder, "tokenizer")
        else plain_mllm_batch
    )
    with torch.inference_mode():
        parts = [
            one(embedder, inputs[i : i + batch_size], modality).numpy()
            for i in range(0, len(inputs), batch_size)
        ]
    return np.concatenate(parts)


# -- embedding ---------------------------------------------------------------------------------
def load(spec: str, dtype: str | None, root: Path, batch_size: int) -> tuple[str, Any]:
    """The spec (a shape name becomes its random-weights folder) and its loaded embedder."""
    from bindkit.embed.registry import load_embedder
    from bindkit.embed.shapes import SHAPES, shape_spec

    if spec in SHAPES:
        spec = shape_spec(spec, root)
    if dtype:
        spec = f"{spec}+dtype={dtype}"
    started = time.perf_counter()
    # the batch size given, not the one the backend would choose: the plain loop uses it too
    embedder = load_embedder(spec, cache=False, progress=False, batch_size=batch_size)
    print(f"loaded {spec} in {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return spec, embedder


def seconds(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def timed(run: Callable[[Any], object], inputs: Any) -> Callable[[], float]:
    """A contender: the seconds ``run(inputs)`` takes."""
    return lambda: seconds(lambda: run(inputs))


def summary(plain: Timings, bindkit: Timings) -> dict[str, Any]:
    """min/median/max of each, and plain / bindkit: of the medians, and the per-round range."""
    paired = [p / b for p, b in zip(plain.seconds, bindkit.seconds, strict=True)]
    return {
        "bindkit_seconds": list(bindkit.seconds),
        "plain_seconds": list(plain.seconds),
        "ratio_median": statistics.median(plain.seconds) / statistics.median(bindkit.seconds),
        "ratio_min": min(paired),
        "ratio_max": max(paired),
    }


def embed_bench(embedder: Any, args: argparse.Namespace) -> dict[str, Any]:
    """The rows of embedding: texts, and images when the model takes them."""
    import numpy as np

    cases: dict[str, list[Any]] = {"text": texts(args.texts)}
    if "image" in embedder.modalities and args.images:
        cases["image"] = images(args.images, args.side)
    rows: dict[str, Any] = {}
    for modality, inputs in cases.items():
        ours = getattr(embedder, f"embed_{modality}s")
        theirs = plain_embed(embedder, inputs, modality, args.batch_size)
        # the same work: both give the same vectors (bf16 sums in another batch order differ a
        # little)
        agreement = float(np.min(np.sum(ours(inputs) * theirs, axis=1)))
        assert agreement > 0.99, f"{modality}: bindkit and the plain loop disagree ({agreement})"
        timings = alternate(
            {
                "bindkit": timed(ours, inputs),
                "plain": timed(
                    partial(plain_embed, embedder, modality=modality, batch_size=args.batch_size),
                    inputs,
                ),
            },
            args.rounds,
        )
        what = f"{len(inputs)} {modality}s" + (f" of {args.side} px" if modality == "image" else "")
        rows[modality] = {
            "label": f"embed {what}, batch {args.batch_size}",
            "inputs": len(inputs),
            "cosine_agreement_min": round(agreement, 5),
            **summary(timings["plain"], timings["bindkit"]),
        }
    return rows


# -- training ----------------------------------------------------------------------------------
def remove_lora(model: Any) -> None:
    """Put every LoRA-wrapped linear back to its base layer (the base weights are untouched)."""
    for name, module in list(model.named_modules()):
        base = getattr(module, "base_layer", None)
        if base is not None and hasattr(module, "lora_A"):
            parent_name, _, child = name.rpartition(".")
            setattr(model.get_submodule(parent_name) if parent_name else model, child, base)
    for attribute in ("_bindkit_lora_config", "peft_config", "_hf_peft_config_loaded"):
        if attribute in vars(model):
            delattr(model, attribute)


def triplet_rows(count: int) -> list[dict[str, str]]:
    caps = texts(count)
    return [
        {"query": c, "positive": c + ".", "negative": caps[(i + 1) % count] + "."}
        for i, c in enumerate(caps)
    ]


def bindkit_train(
    embedder: Any, spec: str, data: Path, out: Path, args: argparse.Namespace
) -> float:
    """Seconds per optimizer step of ``train_triplets`` on the loaded model (handed in)."""
    from bindkit.train import loop, trainer
    from bindkit.train.config import TrainConfig

    original = loop.load_trainable
    loop.load_trainable = lambda *_: embedder  # type: ignore[assignment]
    try:
        record = trainer.train_triplets(
            TrainConfig(
                model=spec,
                train=str(data),
                out=str(out),
                lr=1e-4,
                batch_size=args.train_batch,
                max_steps=args.steps,
                model_dropout=False,
                lines=False,
                save_every=0,
                progress=False,
                overwrite=True,
            )
        )
    finally:
        loop.load_trainable = original
        from bindkit.adapters.lora import transformers_model

        remove_lora(transformers_model(embedder.module))
    return float(record["train_seconds"]) / int(record["optimizer_steps"])


def plain_train(embedder: Any, rows: list[dict[str, str]], args: argparse.Namespace) -> float:
    """Seconds per optimizer step of a plain peft loop with the same LoRA, loss and batches."""
    import torch
    from peft import LoraConfig, get_peft_model

    from bindkit.adapters.lora import TARGET_MODULES, transformers_model

    base = transformers_model(embedder.module)
    started = time.perf_counter()
    for parameter in base.parameters():
        parameter.requires_grad_(False)
    torch.manual_seed(0)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=4, target_modules=TARGET_MODULES))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    one = plain_st_batch if is_st(embedder) else plain_mllm_batch
    size = args.train_batch
    for step in range(args.steps):
        batch = rows[step * size : (step + 1) * size]
        query = one(embedder, [r["query"] for r in batch], "text")
        documents = one(
            embedder, [r["positive"] for r in batch] + [r["negative"] for r in batch], "text"
        )
        positive, negative = documents[: len(batch)], documents[len(batch) :]
        # hinge on cosine distances, margin 0.05 (bindkit's default triplet loss)
        loss = torch.relu(
            (1 - (query * positive).sum(-1)) - (1 - (query * negative).sum(-1)) + 0.05
        ).mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    elapsed = time.perf_counter() - started
    model.unload()  # the base model as it was: LoRA layers replaced by their base layers
    return float(elapsed / args.steps)


def train_bench(embedder: Any, spec: str, args: argparse.Namespace) -> dict[str, Any]:
    """The row of training: seconds per LoRA optimizer step."""
    rows = triplet_rows(args.train_batch * args.steps)
    with tempfile.TemporaryDirectory() as folder:
        data = Path(folder) / "train.jsonl"
        data.write_text("".join(json.dumps(r) + "\n" for r in rows))
        runs = iter(range(1 << 30))
        timings = alternate(
            {
                "bindkit": lambda: bindkit_train(
                    embedder, spec, data, Path(folder) / f"run{next(runs)}", args
                ),
                "plain": lambda: plain_train(embedder, rows, args),
            },
            args.rounds,
        )
    label = f"LoRA train step, {args.train_batch} triplets ({args.steps} steps a round)"
    return {"train step": {"label": label, **summary(timings["plain"], timings["bindkit"])}}


def table(result: dict[str, Any]) -> str:
    """The result as markdown: what ran (command, date, load, versions), then one row per work."""
    made = result["produced_by"]
    versions = made["versions"]
    libraries = ", ".join(
        f"{name} {versions[name]}" for name in ("torch", "transformers", "peft") if name in versions
    )
    rounds = len(next(iter(result["rows"].values()))["bindkit_seconds"])
    lines = [
        f"`python {made['script']} {' '.join(made['argv'])}`",
        "",
        f"`{result['spec']}`; {made['date']}; {made['device']}, {made['threads']} threads, "
        f"load average {made['load_before']:.1f} before and {made['load_after']:.1f} after; "
        f"bindkit {made['bindkit']}, {libraries}; {rounds} alternating rounds",
        "",
        "| work | bindkit s (min / median / max) | plain s (min / median / max) "
        "| plain / bindkit: medians (per-round range) |",
        "|---|---|---|---|",
    ]
    for row in result["rows"].values():
        cells = []
        for side in ("bindkit", "plain"):
            values = row[f"{side}_seconds"]
            cells.append(f"{min(values):.2f} / {statistics.median(values):.2f} / {max(values):.2f}")
        ratio = f"{row['ratio_median']:.2f}x ({row['ratio_min']:.2f}-{row['ratio_max']:.2f})"
        lines.append(f"| {row['label']} | {cells[0]} | {cells[1]} | {ratio} |")
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/bench_real_shapes.py all --rounds 5 --out runs/shapes",
    )
    parser.add_argument(
        "work", choices=("embed", "train", "all"), help="what to time (all: embed, then train)"
    )
    parser.add_argument("--spec", default="qwen3-vl-embedding-2b", help="a shape name or a spec")
    parser.add_argument("--dtype", default="bfloat16", help="weights' dtype ('' for the backend's)")
    parser.add_argument(
        "--root",
        default=str(Path(tempfile.gettempdir()) / "bindkit-shapes"),
        help="where a shape's folder is written (kilobytes, reused)",
    )
    parser.add_argument("--texts", type=positive, default=8, help="texts embedded per round")
    parser.add_argument("--images", type=int, default=4, help="images embedded per round (0: none)")
    parser.add_argument("--side", type=positive, default=224, help="image side in pixels")
    parser.add_argument("--batch-size", type=positive, default=8, help="embedding batch size")
    parser.add_argument("--train-batch", type=positive, default=2, help="triplets per step")
    parser.add_argument("--steps", type=positive, default=1, help="optimizer steps per round")
    parser.add_argument("--rounds", type=positive, default=5, help="alternating rounds")
    parser.add_argument("--out", default=None, help="folder for NAME.json and NAME.md")
    parser.add_argument("--name", default=None, help="result file name (default: work-shape)")
    args = parser.parse_args(argv)
    if args.images < 0:
        parser.error(f"--images {args.images}: use 0 or more")
    if args.side % 32:
        parser.error(f"--side {args.side}: use a multiple of 32 (no resize changes the image)")
    if args.out and Path(args.out).exists() and not Path(args.out).is_dir():
        parser.error(f"--out {args.out}: is a file, not a folder")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    import torch

    torch.manual_seed(0)
    load_before = os.getloadavg()[0]
    spec, embedder = load(args.spec, args.dtype, Path(args.root), args.batch_size)
    result: dict[str, Any] = {"spec": spec, "rows": {}}
    if args.work in ("embed", "all"):
        result["rows"].update(embed_bench(embedder, args))
    if args.work in ("train", "all"):
        result["rows"].update(train_bench(embedder, spec, args))
    from bindkit import __version__
    from bindkit.identity import versions

    result["produced_by"] = {
        "script": "benchmarks/bench_real_shapes.py",
        "argv": list(argv if argv is not None else sys.argv[1:]),
        "bindkit": __version__,
        "versions": versions(),
        "threads": torch.get_num_threads(),
        "device": "cpu",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
    }
    markdown = table(result)
    print(markdown)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        name = args.name or f"{args.work}-{Path(args.spec).name}"
        (out / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / f"{name}.md").write_text(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
