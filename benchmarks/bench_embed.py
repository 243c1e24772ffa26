"""Embedding throughput of ``st:default`` through bindkit vs plain sentence-transformers.

One process, same texts (distinct SABER query and candidate texts), same device:

1. the peer's best batch size: ``SentenceTransformer.encode`` timed on a slice at each of
   ``--sweep`` batch sizes;
2. plain ``encode``, bindkit (no cache) at that batch size and bindkit at its own default batch
   size, alternating, best of ``--repeats``;
3. the cache's cost: bindkit with no cache vs a cold cache (embed + store, a new cache file each
   round), alternating for ``--cache-rounds`` rounds, the order flipped every round, both models
   warmed up; best of the rounds, their spread, and the ratio cold / no cache; then a warm pass.

``--cache-only`` runs step 3 alone; ``--clock cpu`` times the process's CPU seconds instead of
wall seconds (on a machine shared with other jobs).

Run: ``python benchmarks/bench_embed.py`` (CPU: 10,000 texts) or
``python benchmarks/bench_embed.py --device cuda`` (60,000 texts; a few minutes on one GPU).
"""

from __future__ import annotations

import argparse
import itertools
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _alternate import Timings, alternate, ratio_spread

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


#: ``--clock``: wall seconds, or the CPU seconds of this process (every thread: the cache
#: writer's work counts), which other jobs on a shared machine disturb far less
CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
clock = CLOCKS["wall"]


def timed(run: Callable[[], object], sync: Callable[[], None]) -> float:
    sync()
    start = clock()
    run()
    sync()
    return clock() - start


def cache_cost(
    data: list[str], batch: int, device: str, rounds: int, sync: Callable[[], None]
) -> None:
    """No cache vs a cold cache, alternating; prints both, the ratio and a warm pass."""
    from bindkit.embed import EmbeddingCache, load_embedder

    warm_up = [f"warm-up text {i}" for i in range(4 * batch)]  # not in ``data``
    plain = load_embedder("st:default", cache=False, batch_size=batch, device=device)
    plain.embed_texts(warm_up)
    with tempfile.TemporaryDirectory() as tmp:
        files = (Path(tmp) / f"c{i}.sqlite" for i in itertools.count())
        caches: list[EmbeddingCache] = []

        def no_cache() -> float:
            return timed(lambda: plain.embed_texts(data), sync)

        def cold() -> float:
            caches.append(EmbeddingCache(next(files)))
            model = load_embedder("st:default", cache=caches[-1], batch_size=batch, device=device)
            model.embed_texts(warm_up)  # the fingerprint, the first forward passes
            writes.clear()
            return timed(lambda: model.embed_texts(data), sync)

        writes: list[float] = []
        put_many = EmbeddingCache.put_many

        def counted(self: EmbeddingCache, *args: Any) -> None:
            start = time.thread_time()  # the writer thread's own CPU seconds
            put_many(self, *args)
            writes.append(time.thread_time() - start)

        EmbeddingCache.put_many = counted  # type: ignore[method-assign]
        try:
            timings = alternate({"no cache": no_cache, "cold cache": cold}, rounds)
        finally:
            EmbeddingCache.put_many = put_many  # type: ignore[method-assign]
        warm = load_embedder("st:default", cache=caches[-1], batch_size=batch, device=device)
        t_warm = timed(lambda: warm.embed_texts(data), sync)
        for cache in caches:
            cache.close()
    none, cold_t = timings["no cache"], timings["cold cache"]
    print(f"\n{len(data):,} texts, batch size {batch}, {rounds} alternating rounds")
    print("| run | seconds (best) | texts/s | rounds (s) | spread |\n|---|---|---|---|---|")
    rows: list[tuple[str, Timings]] = [
        ("bindkit, no cache", none),
        ("bindkit, cold cache (embed + store)", cold_t),
        ("bindkit, warm cache (second pass)", Timings((t_warm,))),
    ]
    for label, t in rows:
        rounds_s = ", ".join(f"{s:.2f}" for s in t.seconds)
        print(
            f"| {label} | {t.best:.2f} | {len(data) / t.best:,.0f} | {rounds_s} "
            f"| {100 * t.spread:.0f} % |"
        )
    print(
        f"the writer thread's CPU in the last cold round: {sum(writes):.3f} s in "
        f"{len(writes)} transactions"
    )
    ratio, low, high = ratio_spread(cold_t, none)
    print(
        f"cold cache / no cache (time, best of {rounds}) = {ratio:.3f} "
        f"(round by round {low:.3f}-{high:.3f}); warm speed-up = {none.best / t_warm:.0f}x"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--n", type=int, default=None, help="texts (cpu 10,000; cuda 60,000)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--sweep", default=None, help="batch sizes for the peer's best")
    parser.add_argument("--cache-rounds", type=int, default=3, help="no cache vs cold rounds")
    parser.add_argument("--cache-only", action="store_true", help="only the cache's cost")
    parser.add_argument("--batch-size", type=int, default=32, help="batch size of --cache-only")
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall")
    args = parser.parse_args()
    global clock
    clock = CLOCKS[args.clock]
    import torch
    from sentence_transformers import SentenceTransformer

    from bindkit.embed import load_embedder
    from bindkit.embed.backends.st import default_model_path

    cuda = args.device.startswith("cuda")
    n = args.n or (60_000 if cuda else 10_000)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    data = texts(n)
    name = torch.cuda.get_device_name() if cuda else f"CPU, {torch.get_num_threads()} threads"
    print(f"device: {name}; torch {torch.__version__}; {len(data):,} distinct texts")
    print(f"clock: {args.clock} seconds")
    if args.cache_only:
        cache_cost(data, args.batch_size, args.device, args.cache_rounds, sync)
        return
    sweep = [int(b) for b in (args.sweep or ("64,128,256,512" if cuda else "32,64,128")).split(",")]
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
    peers = alternate(
        {
            "plain": lambda: timed(
                lambda: plain.encode(data, batch_size=best, normalize_embeddings=True), sync
            ),
            "ours": lambda: timed(lambda: ours.embed_texts(data), sync),
            "default": lambda: timed(lambda: default.embed_texts(data), sync),
        },
        args.repeats,
    )
    bp, bo, bd = (peers[k].best for k in ("plain", "ours", "default"))
    print(f"best of {args.repeats}")
    sweep_row = ", ".join(f"{b}: {len(probe) / t:,.0f}/s" for b, t in sweep_times.items())
    print(f"peer sweep on {len(probe):,} texts: {sweep_row} -> best batch size {best}")
    print("| run | batch size | seconds | texts/s | spread |")
    print("|---|---|---|---|---|")
    rows = [
        ("sentence-transformers `encode`", best, peers["plain"]),
        ("bindkit `st:default` (no cache)", best, peers["ours"]),
        (
            "bindkit `st:default`, default batch size (no cache)",
            default.batch_size,
            peers["default"],
        ),
    ]
    for label, batch, t in rows:
        print(
            f"| {label} | {batch} | {t.best:.2f} | {len(data) / t.best:,.0f} "
            f"| {100 * t.spread:.0f} % |"
        )
    print(f"\nratio plain / bindkit at the peer's best batch size = {bp / bo:.2f}")
    print(f"ratio plain (best) / bindkit (its default batch size) = {bp / bd:.2f}")
    cache_cost(data, best, args.device, args.cache_rounds, sync)


if __name__ == "__main__":
    main()
