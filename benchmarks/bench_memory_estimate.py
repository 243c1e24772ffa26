"""How close ``bindkit memory``'s estimate comes to a measured training step.

Each setting runs in its own process: a Qwen3-VL-Embedding-shaped model scaled down (``--hidden``,
``--layers``; random weights, float32 or bfloat16 on the CPU) trains one LoRA step with
``train_triplets``; the step's peak is the process's peak resident memory after the model is
loaded (the kernel's high-water mark, reset then) minus the resident memory at that moment (the
loaded weights, Python, torch). Each setting is measured twice: with glibc's mmap threshold fixed
("tensors": every tensor of 64 KiB or more is mapped and unmapped, so the peak is what the
tensors held) and with the default allocator ("resident": glibc keeps freed blocks on its heap,
what ``ps`` shows). The estimate's matching part is everything but the frozen weights: LoRA
state, kept activations and the backward's working space, at the padded token count of the
batch. Prints the table (estimate / measured - 1) and writes it to ``OUT/memory_estimate.md``
and ``.json``.

Run: ``python benchmarks/bench_memory_estimate.py --out runs/memory`` (a few minutes)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _args import positive
from _shapes import scale_config

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("BINDKIT_PROGRESS", "0")


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def high_water() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def measure(
    folder: str, batch: int, checkpointing: bool, out: str, dtype: str = "float32"
) -> dict[str, Any]:
    """One training step in this process: the step's measured peak above the loaded model.

    The high-water mark is reset once the model is loaded (``load_trainable`` wrapped), and a
    forward pre-hook records each forward's padded token count.
    """
    import torch

    from bindkit.adapters.lora import transformers_model
    from bindkit.train import loop as train_loop
    from bindkit.train import trainer
    from bindkit.train.config import TrainConfig

    torch.set_num_threads(1)
    words = ["red", "blue", "green", "gray", "white", "black", "pink", "brown"]
    rows = [
        {
            "query": f"a {a} cube and a {b} kite",
            "positive": f"A {a} cube beside a {b} kite.",
            "negative": f"A {b} cube beside a {a} kite.",
        }
        for a in words
        for b in words
        if a != b
    ][:batch]
    data = Path(out) / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    seen: dict[str, Any] = {"forwards": []}
    load = train_loop.load_trainable

    def loaded(*args: Any) -> Any:
        embedder = load(*args)

        def record(_module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
            ids = kwargs.get("input_ids")
            if ids is not None:
                seen["forwards"].append([int(n) for n in ids.shape])

        transformers_model(embedder.module).register_forward_pre_hook(record, with_kwargs=True)
        seen["before"] = rss()
        Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
        return embedder

    train_loop.load_trainable = loaded  # type: ignore[assignment]
    trainer.train_triplets(
        TrainConfig(
            model=f"qwen3-vl-embedding:{folder}+dtype={dtype}",
            train=str(data),
            out=str(Path(out) / "run"),
            batch_size=batch,
            max_steps=1,
            gradient_checkpointing=checkpointing,
            model_dropout=False,
            lines=False,
            save_every=0,
            progress=False,
        )
    )
    return {"forwards": seen["forwards"], "step_bytes": high_water() - seen["before"]}


BYTES = {"float32": 4, "bfloat16": 2}
# glibc's fixed mmap threshold: every tensor of 64 KiB or more is its own mapping, returned to
# the system when freed, so the resident peak is what the tensors held (no freed-but-kept heap)
EXACT_MALLOC = {"MALLOC_MMAP_THRESHOLD_": "65536"}


def estimate(
    folder: Path, batch: int, checkpointing: bool, forwards: list[list[int]], dtype: str
) -> int:
    """The estimate's part above the loaded weights: LoRA state, activations, working space."""
    from bindkit.train.memory import StepSetting, estimate_for_config

    config = json.loads((folder / "config.json").read_text())
    # the query side and the documents are padded apart: the estimate's tokens is their mean
    sequences = sum(shape[0] for shape in forwards)
    mean_tokens = sum(shape[0] * shape[1] for shape in forwards) / sequences
    setting = StepSetting(batch_size=batch, gradient_checkpointing=checkpointing)
    guess = estimate_for_config(
        config, setting, tokens=round(mean_tokens), weight_bytes=BYTES[dtype]
    )
    return guess.peak - guess.weights


def run_child(
    folder: Path, batch: int, checkpointing: bool, dtype: str, work: Path, exact: bool
) -> dict[str, Any]:
    work.mkdir(parents=True)
    child = [sys.executable, __file__, "--child", str(folder), str(batch)]
    child += ["1" if checkpointing else "0", str(work), dtype]
    env = {**os.environ, **(EXACT_MALLOC if exact else {})}
    done = subprocess.run(child, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the measuring process failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="Example: python benchmarks/bench_memory_estimate.py --out runs/memory",
    )
    parser.add_argument("--hidden", type=positive, default=512, help="text hidden size")
    parser.add_argument("--layers", type=positive, default=8, help="text layers")
    parser.add_argument("--batches", default="8,32", help="triplets per step, comma-separated")
    parser.add_argument(
        "--dtypes", default="float32,bfloat16", help="weights' dtypes, comma-separated"
    )
    parser.add_argument("--out", default=None, help="folder for memory_estimate.json and .md")
    parser.add_argument("--child", nargs=5, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        folder, batch, checkpointing, out, dtype = args.child
        print(json.dumps(measure(folder, int(batch), checkpointing == "1", out, dtype)))
        return 0
    try:
        batches = [int(b) for b in args.batches.split(",")]
    except ValueError:
        parser.error(f"--batches {args.batches}: give integers separated by commas")
    if min(batches) < 1:
        parser.error(f"--batches {args.batches}: use 1 or more triplets")
    dtypes = args.dtypes.split(",")
    for dtype in dtypes:
        if dtype not in BYTES:
            parser.error(f"--dtypes {args.dtypes}: {dtype!r} is not one of {', '.join(BYTES)}")
    if args.hidden % 64:
        parser.error(f"--hidden {args.hidden}: use a multiple of 64 (whole attention heads)")
    from bindkit.embed.shapes import write_shape

    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    load = os.getloadavg()[0]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_shape("qwen3-vl-embedding-2b", Path(tmp) / "model")
        scale_config(folder, args.hidden, args.layers)
        for dtype in dtypes:
            for batch in batches:
                for checkpointing in (False, True):
                    work = Path(tmp) / f"{dtype}-b{batch}-{int(checkpointing)}"
                    exact = run_child(folder, batch, checkpointing, dtype, work / "exact", True)
                    plain = run_child(folder, batch, checkpointing, dtype, work / "plain", False)
                    guess = estimate(folder, batch, checkpointing, exact["forwards"], dtype)
                    rows.append(
                        {
                            "dtype": dtype,
                            "batch": batch,
                            "gradient_checkpointing": checkpointing,
                            "forwards": exact["forwards"],
                            "tensors_mib": round(exact["step_bytes"] / 2**20, 1),
                            "resident_mib": round(plain["step_bytes"] / 2**20, 1),
                            "estimated_mib": round(guess / 2**20, 1),
                            "error": round(guess / exact["step_bytes"] - 1, 3),
                            "error_resident": round(guess / plain["step_bytes"] - 1, 3),
                        }
                    )
                    print(rows[-1], file=sys.stderr, flush=True)
    command = " ".join(["python benchmarks/bench_memory_estimate.py", *(argv or sys.argv[1:])])
    lines = [
        f"`{command}`",
        "",
        f"Qwen3-VL-Embedding-2B's shape scaled to hidden {args.hidden}, {args.layers} layers; "
        f"one LoRA step of `train_triplets` on the CPU; {started}, load average {load:.1f}",
        "",
        "| weights | triplets | checkpointing | forwards (inputs x tokens) | tensors MiB "
        "| resident MiB | estimated MiB | estimate vs tensors | vs resident |",
        "|---|---:|---|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        shapes = ", ".join(f"{n} x {t}" for n, t in row["forwards"])
        lines.append(
            f"| {row['dtype']} | {row['batch']} | "
            f"{'on' if row['gradient_checkpointing'] else 'off'} | {shapes} | "
            f"{row['tensors_mib']} | {row['resident_mib']} | {row['estimated_mib']} | "
            f"{100 * row['error']:+.0f} % | {100 * row['error_resident']:+.0f} % |"
        )
    markdown = "\n".join(lines) + "\n"
    print(markdown)
    if args.out:
        from bindkit.identity import versions

        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        record = {
            "rows": rows,
            "hidden": args.hidden,
            "layers": args.layers,
            "produced_by": {
                "script": "benchmarks/bench_memory_estimate.py",
                "argv": list(argv if argv is not None else sys.argv[1:]),
                "versions": versions(),
            },
        }
        (out / "memory_estimate.json").write_text(json.dumps(record, indent=2) + "\n")
        (out / "memory_estimate.md").write_text(markdown)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
