"""Mining 100,000 (query, positive) pairs: bindkit SaHa / hn vs sentence-transformers.

Precomputed 384-d unit vectors (clustered: queries and positives scattered around 2,000 topic
centres) stand in for a model, so only the mining is timed. Each contender runs in its own
subprocess, which reports its wall time (from vectors to clusters/negatives) and its peak RSS;
the vectors alone take ``2·n·d·4`` bytes in every process.

- bindkit ``saha`` (k=7, m=4), ``hn`` (k=7, m=4) and ``hn-margin`` (relative margin 0.05), exact
  search (FAISS ``IndexFlatIP`` when installed).
- sentence-transformers ``mine_hard_negatives`` (num_negatives=7, relative_margin=0.05,
  ``use_faiss=True``, n-tuple output) fed a stub model returning the same vectors.

Run: ``python benchmarks/bench_mining.py [--n 100000] [--dim 384]``.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np


def make_vectors(n: int, dim: int, topics: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((topics, dim)).astype(np.float32)
    topic = rng.integers(0, topics, n)
    base = centres[topic] + 0.8 * rng.standard_normal((n, dim)).astype(np.float32)
    queries = base + 0.3 * rng.standard_normal((n, dim)).astype(np.float32)
    positives = base + 0.3 * rng.standard_normal((n, dim)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    positives /= np.linalg.norm(positives, axis=1, keepdims=True)
    return queries, positives


class VectorModel:
    """Just enough of a SentenceTransformer for ``mine_hard_negatives``: text "q12" → row 12."""

    def __init__(self, queries: np.ndarray, positives: np.ndarray) -> None:
        import torch

        self.queries, self.positives = queries, positives
        self.device = torch.device("cpu")
        self.model_card_data = SimpleNamespace(base_model=None)

    def get_embedding_dimension(self) -> int:
        return int(self.queries.shape[1])

    def encode_query(self, texts: list[str], **_: Any) -> np.ndarray:
        return self.queries[[int(t[1:]) for t in texts]]

    def encode_document(self, texts: list[str], **_: Any) -> np.ndarray:
        return self.positives[[int(t[1:]) for t in texts]]

    def similarity(self, a: Any, b: Any) -> Any:
        import torch

        return torch.as_tensor(a) @ torch.as_tensor(b).T

    def similarity_pairwise(self, a: Any, b: Any) -> Any:
        import torch

        return (torch.as_tensor(a) * torch.as_tensor(b)).sum(-1)


def run_one(which: str, vectors: Path) -> dict[str, Any]:
    data = np.load(vectors)
    queries, positives = data["queries"], data["positives"]
    n = len(queries)
    # imports happen before the clock starts, for both sides
    from datasets import Dataset
    from sentence_transformers.util import mine_hard_negatives

    from bindkit.mining.baselines import hard_negatives
    from bindkit.mining.pool import Pool
    from bindkit.mining.saha import saha

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    if which == "st":
        dataset = Dataset.from_dict(
            {"query": [f"q{i}" for i in range(n)], "positive": [f"p{i}" for i in range(n)]}
        )
        out = mine_hard_negatives(
            dataset,
            VectorModel(queries, positives),  # type: ignore[arg-type]
            num_negatives=7,
            relative_margin=0.05,
            use_faiss=True,
            output_format="n-tuple",
            verbose=False,
        )
        produced = len(out)
    else:
        # the same text-level de-duplication the peer does, so both start from strings
        texts = [f"p{i}" for i in range(n)]
        ids: dict[str, int] = {}
        positive = np.array([ids.setdefault(t, len(ids)) for t in texts])
        pool = Pool(queries, positives[list(ids.values())], positive)
        if which == "saha":
            clusters = saha(pool, k=7, m=4)
        elif which == "hn":
            clusters = hard_negatives(pool, k=7, m=4)
        else:
            clusters = hard_negatives(pool, k=7, m=4, relative_margin=0.05)
        produced = len(clusters)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {
        "which": which,
        "seconds": seconds,
        "peak_rss_mib": peak,
        "rss_with_vectors_mib": rss_before,
        "produced": produced,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--topics", type=int, default=2_000)
    parser.add_argument("--only", default="st,saha,hn,hn-margin")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--vectors", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_one(args.child, Path(args.vectors))))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "vectors.npz"
        queries, positives = make_vectors(args.n, args.dim, args.topics)
        np.savez(path, queries=queries, positives=positives)
        del queries, positives
        results = {}
        for which in args.only.split(","):
            done = subprocess.run(
                [sys.executable, __file__, "--child", which, "--vectors", str(path)],
                check=True,
                capture_output=True,
                text=True,
            )
            results[which] = json.loads(done.stdout.strip().splitlines()[-1])
            print(json.dumps(results[which]), flush=True)
    if "st" in results:
        peer = results["st"]["seconds"]
        for which, r in results.items():
            print(
                f"{which:<10} {r['seconds']:8.1f} s  ratio to peer {r['seconds'] / peer:5.2f}  "
                f"peak RSS {r['peak_rss_mib']:7.0f} MiB (before {r['rss_with_vectors_mib']:.0f})"
            )


if __name__ == "__main__":
    main()
