"""Training throughput: ``bindkit train triplets`` vs sentence-transformers' trainer.

Same model (``--model``, default all-MiniLM-L6-v2), same triplets (template data from
``bindkit synth``), same batch, same loss (sentence-transformers ``TripletLoss`` with the cosine
distance and margin 0.05 == bindkit's hinge), same LoRA (r 4, α 4 on q/k/v/output, injected with
peft in both), one process, alternating. Reports triplets/s and the ratio.

Full finetuning is not a mode of ``bindkit train`` (it trains LoRA adapters only), so only the
sentence-transformers side can be timed there; ``--full`` adds that row for reference.

Run: ``python benchmarks/bench_train.py [--triplets 256] [--batch-size 32] [--device cuda]``.
On a GPU: ``python benchmarks/bench_train.py --device cuda --triplets 6400 --batch-size 64``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("BINDKIT_PROGRESS", "0")


def make_triplets(folder: Path, n: int) -> Path:
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.splits import write_splits

    generate(folder, max(200, n), TemplateBackend(0), progress=False)
    write_splits(folder)
    lines = (folder / "train.jsonl").read_text().splitlines()
    while len(lines) < n:
        lines += lines
    path = folder / "bench.jsonl"
    path.write_text("\n".join(lines[:n]) + "\n")
    return path


def run_bindkit(model: str, train: Path, out: Path, batch: int, device: str | None) -> float:
    from bindkit.train.config import TrainConfig
    from bindkit.train.trainer import train_triplets

    config = TrainConfig(
        model=model,
        train=str(train),
        out=str(out),
        lr=1e-3,
        batch_size=batch,
        lines=False,
        save_every=0,
        progress=False,
        overwrite=True,
    )
    record = train_triplets(config)
    return float(record["train_seconds"])


def run_st(model_path: str, train: Path, out: Path, batch: int, device: str, lora: bool) -> float:
    import datasets
    from peft import LoraConfig, inject_adapter_in_model
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.losses import TripletDistanceMetric, TripletLoss

    from bindkit.adapters.lora import TARGET_MODULES
    from bindkit.tasks.text.triplets import read_triplets

    rows = read_triplets(train)
    data = datasets.Dataset.from_dict(
        {k: [r[k] for r in rows] for k in ("query", "positive", "negative")}
    )
    model = SentenceTransformer(model_path, device=device)
    if lora:
        for p in model.parameters():
            p.requires_grad_(False)
        config = LoraConfig(r=4, lora_alpha=4, lora_dropout=0.0, target_modules=TARGET_MODULES)
        inject_adapter_in_model(config, model[0].auto_model)
    loss = TripletLoss(model, distance_metric=TripletDistanceMetric.COSINE, triplet_margin=0.05)
    args = SentenceTransformerTrainingArguments(
        output_dir=str(out),
        per_device_train_batch_size=batch,
        num_train_epochs=1,
        learning_rate=1e-3,
        weight_decay=0.01,
        lr_scheduler_type="constant",
        warmup_steps=0,
        save_strategy="no",
        report_to=[],
        logging_steps=10_000,
        disable_tqdm=True,
        bf16=device.startswith("cuda"),
        use_cpu=device == "cpu",
        dataloader_drop_last=False,
    )
    trainer = SentenceTransformerTrainer(model=model, args=args, train_dataset=data, loss=loss)
    start = time.perf_counter()
    trainer.train()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--triplets", type=int, default=256)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--full", action="store_true", help="also time ST full finetuning")
    args = parser.parse_args()
    from bindkit.embed.backends.st import default_model_path

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        train = make_triplets(folder / "data", args.triplets)
        device = None if args.device == "cpu" else args.device
        spec = "st:default" + (f"+device={device}" if device else "")
        rows = []
        st = run_st(default_model_path(), train, folder / "st", args.batch_size, args.device, True)
        bk = run_bindkit(spec, train, folder / "bk", args.batch_size, device)
        rows.append(("LoRA r4, sentence-transformers trainer", st))
        rows.append(("LoRA r4, bindkit train triplets", bk))
        if args.full:
            full = run_st(
                default_model_path(), train, folder / "full", args.batch_size, args.device, False
            )
            rows.append(("full finetuning, sentence-transformers trainer", full))
    print(f"{args.triplets} triplets, batch {args.batch_size}, device {args.device}")
    print("| run | seconds | triplets/s |\n|---|---|---|")
    for name, seconds in rows:
        print(f"| {name} | {seconds:.1f} | {args.triplets / seconds:.1f} |")
    print(f"ratio bindkit / sentence-transformers (LoRA, triplets/s): {st / bk:.2f}")


if __name__ == "__main__":
    main()
