"""Embedding throughput of ``st:default`` through bindkit vs plain sentence-transformers.

One shot, one process, same texts (distinct SABER query and candidate texts), same device:

1. the peer's best batch size: ``SentenceTransformer.encode`` timed on a slice at each of
   ``--sweep`` batch sizes;
2. plain ``encode`` and bindkit (no cache) at that batch size, alternating, best of
   ``--repeats``; then bindkit at its own default batch size (what a user gets);
3. bindkit with a cold cache (embed + store batch by batch) and a warm one (second pass).

Run: ``python benchmarks/bench_embed.py`` (CPU: 10,000 texts) or
``python benchmarks/bench_embed.py --device cuda`` (60,000 texts; a few minutes on one GPU).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("BINDKIT_PROGRESS", "0")


def texts(n: int) -> list[str]:
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.vocab import load_vocabulary

    vocab = load_vocabulary()
    seen: dict[str, None] = {}
    seed = 0
    while len(seen) < n:
        for mcq in build_saber(SaberOptions(seed=seed), vocab):
            for item in mcq.items:
                seen.setdefault(item.text)
        seed += 1
    return list(seen)[:n]


def timed(run: Callable[[], object], sync: Callable[[], None]) -> float:
    sync()
    start = time.perf_counter()
    run()
    sync()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--n", type=int, default=None, help="texts (cpu 10,000; cuda 60,000)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sweep", default=None, help="batch sizes for the peer's best")
    args = parser.parse_args()
    import torch
    from sentence_transformers import SentenceTransformer

    from bindkit.embed import EmbeddingCache, load_embedder
    from bindkit.embed.backends.st import default_model_path

    cuda = args.device.startswith("cuda")
    n = args.n or (60_000 if cuda else 10_000)
    sweep = [int(b) for b in (args.sweep or ("64,128,256,512" if cuda else "32,64,128")).split(",")]
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    data = texts(n)
    plain = SentenceTransformer(default_model_path(), device=args.device)
    probe = data[: min(len(data), 20_000 if cuda else 2_000)]
    plain.encode(probe[:512], batch_size=64)  # warm-up
    sweep_times = {
        b: timed(lambda b=b: plain.encode(probe, batch_size=b, normalize_embeddings=True), sync)
        for b in sweep
    }
    best = min(sweep_times, key=lambda b: sweep_times[b])
    ours = load_embedder("st:default", cache=False, batch_size=best, device=args.device)
    default = load_embedder("st:default", cache=False, device=args.device)
    ours.embed_texts(probe[:512])
    default.embed_texts(probe[:512])
    t_plain, t_ours, t_default = [], [], []
    for _ in range(args.repeats):
        t_plain.append(
            timed(lambda: plain.encode(data, batch_size=best, normalize_embeddings=True), sync)
        )
        t_ours.append(timed(lambda: ours.embed_texts(data), sync))
        t_default.append(timed(lambda: default.embed_texts(data), sync))
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "c.sqlite")
        cold = load_embedder("st:default", cache=cache, batch_size=best, device=args.device)
        t_cold = timed(lambda: cold.embed_texts(data), sync)
        warm = load_embedder("st:default", cache=cache, batch_size=best, device=args.device)
        t_warm = timed(lambda: warm.embed_texts(data), sync)
    bp, bo, bd = min(t_plain), min(t_ours), min(t_default)
    name = torch.cuda.get_device_name() if cuda else f"CPU, {torch.get_num_threads()} threads"
    print(f"device: {name}; torch {torch.__version__}")
    print(f"texts: {len(data):,} distinct; best of {args.repeats}")
    sweep_row = ", ".join(f"{b}: {len(probe) / t:,.0f}/s" for b, t in sweep_times.items())
    print(f"peer sweep on {len(probe):,} texts: {sweep_row} -> best batch size {best}")
    print("| run | batch size | seconds | texts/s |")
    print("|---|---|---|---|")
    rows = [
        ("sentence-transformers `encode`", best, bp),
        ("bindkit `st:default` (no cache)", best, bo),
        ("bindkit `st:default`, default batch size (no cache)", default.batch_size, bd),
        ("bindkit, cold cache (embed + store)", best, t_cold),
        ("bindkit, warm cache (second pass)", best, t_warm),
    ]
    for label, batch, seconds in rows:
        print(f"| {label} | {batch} | {seconds:.2f} | {len(data) / seconds:,.0f} |")
    print(f"\nratio plain / bindkit at the peer's best batch size = {bp / bo:.2f}")
    print(f"ratio plain (best) / bindkit (its default batch size) = {bp / bd:.2f}")
    print(f"cold cache / no cache = {t_cold / bo:.2f}; warm speed-up = {bo / t_warm:.0f}x")


if __name__ == "__main__":
    main()
