"""How close ``bindkit memory``'s estimate comes to a measured training step.

Each setting runs in its own process: a Qwen3-VL-Embedding-shaped model scaled down (``--hidden``,
``--layers``; random weights, float32 on the CPU) trains one LoRA step with ``train_triplets``; the
step's peak is the process's peak resident memory during the training loop (the kernel's
high-water mark, reset when the loop starts) minus the resident memory at that moment (the loaded
weights, Python, torch). The estimate's matching part is everything but the frozen weights:
LoRA state, kept activations and one layer's working tensors, at the padded token count of the
batch. Writes ``OUT/memory_estimate.json`` and prints the table (estimate / measured - 1).

Run: ``python benchmarks/bench_memory_estimate.py --out runs/memory`` (a minute or two).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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


def measure(folder: str, batch: int, checkpointing: bool, out: str) -> dict[str, Any]:
    """One training step in this process: the step's measured peak above the loaded state."""
    import torch

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
    seen: dict[str, Any] = {}
    loop = train_loop.Run.train_loop

    def measured(self: Any, *args: Any) -> None:
        batch_inputs = self.objective.collate(self.embedder, list(range(len(rows))), 0)
        seen["tokens"] = [
            int(side[0].groups[0][1]["input_ids"].shape[1]) for side in batch_inputs.sides
        ]
        seen["before"] = rss()
        Path("/proc/self/clear_refs").write_text("5")  # reset the high-water mark
        loop(self, *args)
        seen["peak"] = high_water()

    train_loop.Run.train_loop = measured  # type: ignore[method-assign]
    trainer.train_triplets(
        TrainConfig(
            model=f"qwen3-vl-embedding:{folder}",
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
    return {"tokens": seen["tokens"], "step_bytes": seen["peak"] - seen["before"]}


def estimate(folder: Path, batch: int, checkpointing: bool, tokens: list[int]) -> dict[str, Any]:
    from bindkit.train.memory import StepSetting, estimate_for_config

    config = json.loads((folder / "config.json").read_text())
    # the query side has `batch` inputs of tokens[0], the documents 2·batch of tokens[1]
    mean_tokens = (tokens[0] + 2 * tokens[1]) / 3
    setting = StepSetting(batch_size=batch, gradient_checkpointing=checkpointing)
    guess = estimate_for_config(config, setting, tokens=round(mean_tokens), weight_bytes=4)
    return {"step_bytes": guess.peak - guess.weights, "activations": guess.activations}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--batches", default="8,32", help="triplets per step, comma-separated")
    parser.add_argument("--out", default=None)
    parser.add_argument("--child", nargs=4, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        folder, batch, checkpointing, out = args.child
        print(json.dumps(measure(folder, int(batch), checkpointing == "1", out)))
        return 0
    from bindkit.embed.shapes import write_shape

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = write_shape("qwen3-vl-embedding-2b", Path(tmp) / "model")
        scale_config(folder, args.hidden, args.layers)
        for batch in (int(b) for b in args.batches.split(",")):
            for checkpointing in (False, True):
                work = Path(tmp) / f"b{batch}-{int(checkpointing)}"
                work.mkdir()
                child = [sys.executable, __file__, "--child", str(folder), str(batch)]
                child += ["1" if checkpointing else "0", str(work)]
                done = subprocess.run(child, capture_output=True, text=True)
                if done.returncode != 0:
                    raise SystemExit(f"the measuring process failed:\n{done.stderr[-3000:]}")
                measured = json.loads(done.stdout.strip().splitlines()[-1])
                guess = estimate(folder, batch, checkpointing, measured["tokens"])
                rows.append(
                    {
                        "batch": batch,
                        "gradient_checkpointing": checkpointing,
                        "tokens": measured["tokens"],
                        "measured_mib": round(measured["step_bytes"] / 2**20, 1),
                        "estimated_mib": round(guess["step_bytes"] / 2**20, 1),
                        "error": round(guess["step_bytes"] / measured["step_bytes"] - 1, 3),
                    }
                )
                print(rows[-1], flush=True)
    lines = [
        f"Qwen3-VL-Embedding shape scaled to hidden {args.hidden}, {args.layers} layers, fp32, CPU",
        "",
        "| triplets | checkpointing | tokens (query, docs) | measured MiB | estimated MiB "
        "| error |",
        "|---:|---|---|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['batch']} | {'on' if row['gradient_checkpointing'] else 'off'} | "
            f"{row['tokens'][0]}, {row['tokens'][1]} | {row['measured_mib']} | "
            f"{row['estimated_mib']} | {100 * row['error']:+.0f} % |"
        )
    print("\n".join(lines))
    if args.out:
        from bindkit._environment import library_versions
        from bindkit._io import atomic_write_text, make_dirs

        make_dirs(Path(args.out))
        record = {
            "rows": rows,
            "hidden": args.hidden,
            "layers": args.layers,
            "produced_by": {
                "script": "benchmarks/bench_memory_estimate.py",
                "argv": list(argv if argv is not None else sys.argv[1:]),
                "versions": library_versions(),
            },
        }
        atomic_write_text(Path(args.out) / "memory_estimate.json", json.dumps(record, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
