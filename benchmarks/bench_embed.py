"""Embedding throughput of ``st:default`` through bindkit vs plain sentence-transformers.

Both embed the same 10,000 distinct texts (SABER query and candidate texts) in one process,
alternating, best of ``--repeats``; then the speed-up of a second, cached pass.

Run: ``python benchmarks/bench_embed.py [--repeats 2] [--batch-size 64]``.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("BINDKIT_PROGRESS", "0")


def texts(n: int = 10_000) -> list[str]:
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=64)
    args = parser.parse_args()
    from sentence_transformers import SentenceTransformer

    from bindkit.embed import EmbeddingCache, load_embedder
    from bindkit.embed.backends.st import default_model_path

    data = texts()
    plain = SentenceTransformer(default_model_path(), device="cpu")
    ours = load_embedder("st:default", cache=False, batch_size=args.batch_size, device="cpu")
    plain.encode(data[:256], batch_size=args.batch_size)  # warm-up
    ours.embed_texts(data[:256])
    t_plain, t_ours = [], []
    for _ in range(args.repeats):
        start = time.perf_counter()
        plain.encode(data, batch_size=args.batch_size, normalize_embeddings=True)
        t_plain.append(time.perf_counter() - start)
        start = time.perf_counter()
        ours.embed_texts(data)
        t_ours.append(time.perf_counter() - start)
    with tempfile.TemporaryDirectory() as tmp:
        cache = EmbeddingCache(Path(tmp) / "c.sqlite")
        cold = load_embedder("st:default", cache=cache, batch_size=args.batch_size, device="cpu")
        start = time.perf_counter()
        cold.embed_texts(data)
        t_cold = time.perf_counter() - start
        warm = load_embedder("st:default", cache=cache, batch_size=args.batch_size, device="cpu")
        start = time.perf_counter()
        warm.embed_texts(data)
        t_warm = time.perf_counter() - start
    bp, bo = min(t_plain), min(t_ours)
    print(f"texts: {len(data)} distinct, batch size {args.batch_size}, best of {args.repeats}")
    print("| run | seconds | texts/s |")
    print("|---|---|---|")
    print(f"| sentence-transformers `encode` | {bp:.2f} | {len(data) / bp:.0f} |")
    print(f"| bindkit `st:default` (no cache) | {bo:.2f} | {len(data) / bo:.0f} |")
    print(f"| bindkit, cold cache (embed + store) | {t_cold:.2f} | {len(data) / t_cold:.0f} |")
    print(f"| bindkit, warm cache (second pass) | {t_warm:.2f} | {len(data) / t_warm:.0f} |")
    print(f"\nratio plain / bindkit = {bp / bo:.2f} (>= 1.0: bindkit is not slower)")
    print(f"cached second pass speed-up over uncached = {bo / t_warm:.0f}x")


if __name__ == "__main__":
    main()
