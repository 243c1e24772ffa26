"""Training throughput: ``bindkit train triplets`` vs sentence-transformers' trainer.

Same model (``--model``, default all-MiniLM-L6-v2), same triplets (template data from
``bindkit synth``), same batch, same loss (sentence-transformers ``TripletLoss`` with the cosine
distance and margin 0.05 == bindkit's hinge), same LoRA (r 4, α 4 on q/k/v/output, injected with
peft in both), one process. Each side first trains once on ``--warmup`` triplets (the process's
one-time costs), then the two alternate for ``--rounds`` rounds, the order flipped every round, so
a changing load hits both alike; the table gives the best of the rounds and their spread.

Full finetuning is not a mode of ``bindkit train`` (it trains LoRA adapters only), so only the
sentence-transformers side can be timed there; ``--full`` adds that row for reference (best of
the same rounds). ``--clock cpu`` times CPU seconds instead of wall seconds.

Run: ``python benchmarks/bench_train.py [--triplets 1024] [--batch-size 32] [--rounds 3]``.
On a GPU: ``python benchmarks/bench_train.py --device cuda --triplets 6400 --batch-size 64``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from _alternate import alternate, ratio_spread

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("BINDKIT_PROGRESS", "0")


#: ``--clock cpu``: the process's CPU seconds (every thread), which other jobs on a shared machine
#: disturb far less than wall seconds; bindkit's over the span of its ``train_seconds``
CPU_CLOCK = False


def make_triplets(folder: Path, sizes: Sequence[int]) -> list[Path]:
    """One triplet file per size, cut from one synth run (repeated when it is too short)."""
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.splits import write_splits

    generate(folder, max(200, *sizes), TemplateBackend(0), progress=False)
    write_splits(folder)
    lines = (folder / "train.jsonl").read_text().splitlines()
    paths = []
    for n in sizes:
        rows = lines * -(-n // len(lines))
        path = folder / f"bench-{n}.jsonl"
        path.write_text("\n".join(rows[:n]) + "\n")
        paths.append(path)
    return paths


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
    if not CPU_CLOCK:
        return float(train_triplets(config)["train_seconds"])
    # CPU seconds over train_seconds' span: from the loaded model to the end of the loop
    from bindkit.train import loop as train_loop

    marks: list[float] = []
    load, loop = train_loop.load_trainable, train_loop.Run.train_loop

    def timed_load(*args: Any) -> Any:
        model = load(*args)
        marks.append(time.process_time())
        return model

    def timed_loop(self: Any, *args: Any) -> None:
        loop(self, *args)
        marks.append(time.process_time())

    train_loop.load_trainable, train_loop.Run.train_loop = timed_load, timed_loop  # type: ignore[method-assign]
    try:
        train_triplets(config)
    finally:
        train_loop.load_trainable, train_loop.Run.train_loop = load, loop  # type: ignore[method-assign]
    return marks[1] - marks[0]


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
    clock = time.process_time if CPU_CLOCK else time.perf_counter
    start = clock()
    trainer.train()
    return clock() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--triplets", type=int, default=1024)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (best of)")
    parser.add_argument("--warmup", type=int, default=64, help="triplets of each side's warm-up")
    parser.add_argument("--full", action="store_true", help="also time ST full finetuning")
    parser.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    args = parser.parse_args()
    global CPU_CLOCK
    CPU_CLOCK = args.clock == "cpu"
    from bindkit.embed.backends.st import default_model_path

    path = default_model_path()
    device = None if args.device == "cpu" else args.device
    spec = "st:default" + (f"+device={device}" if device else "")
    batch = args.batch_size
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        warm, train = make_triplets(folder / "data", [args.warmup, args.triplets])
        runs = itertools.count()

        def st(data: Path = train, lora: bool = True) -> float:
            return run_st(path, data, folder / f"st{next(runs)}", batch, args.device, lora)

        def bk(data: Path = train) -> float:
            return run_bindkit(spec, data, folder / f"bk{next(runs)}", batch, device)

        st(warm), bk(warm)
        contenders: dict[str, Callable[[], float]] = {
            "LoRA r4, sentence-transformers trainer": st,
            "LoRA r4, bindkit train triplets": bk,
        }
        if args.full:
            contenders["full finetuning, sentence-transformers trainer"] = lambda: st(lora=False)
        timings = alternate(contenders, args.rounds)
    print(
        f"{args.triplets} triplets, batch {batch}, device {args.device}, best of {args.rounds}, "
        f"{args.clock} seconds"
    )
    print("| run | seconds (best) | triplets/s | rounds (s) | spread |\n|---|---|---|---|---|")
    for name, t in timings.items():
        rounds = ", ".join(f"{s:.1f}" for s in t.seconds)
        print(
            f"| {name} | {t.best:.1f} | {args.triplets / t.best:.1f} | {rounds} "
            f"| {100 * t.spread:.0f} % |"
        )
    st_t, bk_t = list(timings.values())[:2]
    ratio, low, high = ratio_spread(st_t, bk_t)
    print(
        f"ratio bindkit / sentence-transformers (LoRA, triplets/s, best of {args.rounds}): "
        f"{ratio:.2f} (round by round {low:.2f}-{high:.2f})"
    )


if __name__ == "__main__":
    main()
