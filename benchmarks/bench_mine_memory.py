"""Mining search over a 1M-row pool of precomputed vectors: peak RSS and recall against exact.

The pool: ``--n`` (1,000,000) candidates and as many queries, 384-d float32 unit vectors
clustered around 2,000 topic centres (as in ``bench_mining.py``), written once to ``.npy``
files (1.43 GiB each) and memory-mapped by every contender, each in its own subprocess, which
reports its wall time and its peak RSS (``ru_maxrss``, which counts mapped file pages that were
resident).

- ``flat-faiss`` / ``flat-numpy``: the exact streamed search (``IndexConfig(kind="flat")``,
  scratch budget ``--memory``) of the first ``--queries`` queries against all candidates. An exact
  search of all 1M queries is ~7.7·10¹⁴ flops: hours on two cores, so the query count is
  bounded; memory does not grow with it beyond the ``[queries, n]`` result.
- ``ivf``: FAISS IVF-Flat (``--nlist``; a sweep of ``--nprobe``) over all candidates, the same
  queries; recall@n against the exact ids (the index holds its own copy of the candidates).
- ``hnsw``: FAISS HNSW-Flat (M=32, efSearch=128) over the first ``--hnsw-n`` candidates (building
  the graph for 1M points takes too long here), recall against an exact search of that subset.

Run: ``python benchmarks/bench_mine_memory.py [--n 1000000] [--queries 4096]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

K_TIMES_M = 28  # the candidates SaHa retrieves per anchor at k=7, m=4


def write_pool(folder: Path, n: int, dim: int, topics: int, seed: int = 0) -> None:
    """Queries and positives around shared topic centres, written in chunks (low memory)."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim)).astype(np.float32)
    files = {
        name: np.lib.format.open_memmap(
            folder / f"{name}.npy", mode="w+", dtype=np.float32, shape=(n, dim)
        )
        for name in ("queries", "candidates")
    }
    for start in range(0, n, 50_000):
        size = min(50_000, n - start)
        base = centres[rng.integers(0, topics, size)]
        base += 0.8 * rng.standard_normal((size, dim), dtype=np.float32)
        for array in files.values():
            x = base + 0.3 * rng.standard_normal((size, dim), dtype=np.float32)
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            array[start : start + size] = x
    for array in files.values():
        array.flush()


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_one(which: str, folder: Path, args: argparse.Namespace) -> dict[str, Any]:
    from bindkit.mining.index import IndexConfig, search

    queries = np.load(folder / "queries.npy", mmap_mode="r")
    candidates = np.load(folder / "candidates.npy", mmap_mode="r")
    nq = args.queries
    rss_before = peak_rss_mib()
    start = time.perf_counter()
    out: dict[str, Any] = {"which": which, "queries": nq}
    if which.startswith("flat"):
        backend = which.split("-")[1]
        config = IndexConfig(kind="flat", backend=backend, memory=args.memory)
        _, ids = search(queries[:nq], candidates, K_TIMES_M, config)
        np.save(folder / f"exact-{backend}.npy", ids)
        out["candidates"] = len(candidates)
    elif which == "ivf":
        from bindkit.mining.index import faiss_index

        config = IndexConfig(kind="ivf", nlist=args.nlist, memory=args.memory)
        index = faiss_index(candidates, config)
        out["build_seconds"] = time.perf_counter() - start
        exact = np.load(folder / "exact-faiss.npy")
        out["sweep"] = []
        for nprobe in [int(p) for p in args.nprobe.split(",")]:
            index.nprobe = nprobe
            began = time.perf_counter()
            _, ids = index.search(np.ascontiguousarray(queries[:nq]), K_TIMES_M)
            took = time.perf_counter() - began
            out["sweep"].append({"nprobe": nprobe, "recall": recall(ids, exact), "seconds": took})
        out["candidates"] = len(candidates)
        out["nlist"] = args.nlist
    else:
        sub = candidates[: args.hnsw_n]
        config = IndexConfig(kind="hnsw", memory=args.memory)
        _, ids = search(queries[:nq], sub, K_TIMES_M, config)
        exact_start = time.perf_counter()
        _, exact = search(queries[:nq], sub, K_TIMES_M, IndexConfig(memory=args.memory))
        out["exact_seconds"] = time.perf_counter() - exact_start
        out["candidates"] = len(sub)
        out["recall"] = recall(ids, exact)
    out["seconds"] = time.perf_counter() - start
    out["peak_rss_mib"] = peak_rss_mib()
    out["rss_before_mib"] = rss_before
    out["candidate_vectors_mib"] = out["candidates"] * candidates.shape[1] * 4 / 2**20
    return out


def recall(found: np.ndarray, exact: np.ndarray) -> float:
    """Mean share of each query's exact top-n that the approximate search also returned."""
    hits = [len(set(f.tolist()) & set(e.tolist())) for f, e in zip(found, exact, strict=True)]
    return float(np.sum(hits) / exact.size)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--topics", type=int, default=2_000)
    parser.add_argument("--queries", type=int, default=4096)
    parser.add_argument("--memory", type=int, default=512 << 20, help="search scratch, bytes")
    parser.add_argument("--nlist", type=int, default=1024)
    parser.add_argument("--nprobe", default="8,32,128", help="IVF: lists visited, a sweep")
    parser.add_argument("--hnsw-n", type=int, default=100_000)
    parser.add_argument("--only", default="flat-faiss,flat-numpy,ivf,hnsw")
    parser.add_argument("--folder", default=None, help="where the .npy files go (kept)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.folder is None:
        parser.error("--folder DIR is required (about 2·n·dim·4 bytes of disk)")
    folder = Path(args.folder)
    if args.child == "write":
        start = time.perf_counter()
        write_pool(folder, args.n, args.dim, args.topics)
        print(f"wrote the pool in {time.perf_counter() - start:.0f} s", flush=True)
        return
    if args.child:
        print(json.dumps(run_one(args.child, folder, args)))
        return
    folder.mkdir(parents=True, exist_ok=True)
    # every step in a fresh child of this small parent: Linux keeps ru_maxrss across exec, so
    # a child forked from a large process would inherit its peak
    passed = [
        f"--{name.replace('_', '-')}={value}"
        for name, value in vars(args).items()
        if name not in ("only", "child")
    ]
    steps = args.only.split(",")
    if not (folder / "candidates.npy").exists():
        steps.insert(0, "write")
    for which in steps:
        done = subprocess.run(
            [sys.executable, __file__, *passed, "--child", which],
            check=True,
            capture_output=True,
            text=True,
        )
        print(done.stdout.strip().splitlines()[-1], flush=True)


if __name__ == "__main__":
    main()
