"""End to end on real texts: ``bindkit mine --method hn`` vs sentence-transformers'
``mine_hard_negatives``, the same texts and model (all-MiniLM-L6-v2, CPU), a cold cache.

The pairs: SugarCrepe's (caption, negative caption) rows from ``--sugarcrepe`` (all seven
files; 7,512 pairs, 12,421 distinct texts), optionally repeated with a numbered suffix to reach
``--pairs``. Each contender runs as a fresh process and is timed from launch to exit (imports,
model load, embedding, search, writing the output), alternating ``--repeats`` times:

- ``bindkit``: ``bindkit mine --model st:default --method hn --k 7 --m 4`` with an empty
  ``BINDKIT_CACHE_DIR`` (the embeddings cache is written, never read);
- ``st``: ``SentenceTransformer(all-MiniLM-L6-v2)`` + ``mine_hard_negatives(num_negatives=7,
  use_faiss=True, output_format="n-tuple", batch_size=32)`` and ``Dataset.to_json``.

``--profile`` runs bindkit once more under cProfile and prints where its time goes.

Run: ``python benchmarks/bench_mine.py --sugarcrepe /work/shared/data/sugarcrepe``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PEER = """
import sys, time
start = time.perf_counter()
from datasets import Dataset
from sentence_transformers import SentenceTransformer
from sentence_transformers.util import mine_hard_negatives
from bindkit.embed.backends.st import default_model_path
data, out = sys.argv[1], sys.argv[2]
import json
rows = [json.loads(line) for line in open(data, encoding="utf-8")]
model = SentenceTransformer(default_model_path(), device="cpu")
loaded = time.perf_counter()
dataset = Dataset.from_dict({
    "query": [r["query"] for r in rows], "positive": [r["positive"] for r in rows]
})
mined = mine_hard_negatives(
    dataset, model, num_negatives=7, use_faiss=True, output_format="n-tuple",
    batch_size=32, verbose=False,
)
mined.to_json(out)
print(json.dumps({"load_s": loaded - start, "mine_s": time.perf_counter() - loaded}))
"""


def write_pairs(sugarcrepe: Path, path: Path, pairs: int | None) -> int:
    rows = []
    for file in sorted(sugarcrepe.glob("*.json")):
        for item in json.loads(file.read_text(encoding="utf-8")).values():
            rows.append({"query": item["caption"], "positive": item["negative_caption"]})
    if pairs is not None:
        base = list(rows)
        copy = 1
        while len(rows) < pairs:
            rows += [
                {"query": f"{r['query']} ({copy})", "positive": f"{r['positive']} ({copy})"}
                for r in base
            ]
            copy += 1
        rows = rows[:pairs]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return len(rows)


def run_bindkit(data: Path, work: Path, profile: Path | None = None) -> float:
    cache = Path(tempfile.mkdtemp(dir=work, prefix="cache-"))
    env = {**os.environ, "BINDKIT_CACHE_DIR": str(cache), "BINDKIT_PROGRESS": "0"}
    command = [sys.executable]
    if profile is not None:
        command += ["-m", "cProfile", "-o", str(profile)]
    command += ["-m", "bindkit", "mine", "--model", "st:default", "--data", str(data)]
    command += ["--out", str(work / "bindkit.jsonl"), "--method", "hn", "--k", "7", "--m", "4"]
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, capture_output=True)
    return time.perf_counter() - start


def run_peer(data: Path, work: Path) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", PEER, str(data), str(work / "st.jsonl")],
        check=True,
        env=env,
        capture_output=True,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sugarcrepe", type=Path, default=Path("/work/shared/data/sugarcrepe"))
    parser.add_argument("--pairs", type=int, default=None, help="repeat rows up to this many")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        data = work / "pairs.jsonl"
        n = write_pairs(args.sugarcrepe, data, args.pairs)
        rows = [json.loads(line) for line in data.read_text(encoding="utf-8").splitlines()]
        texts = len({r["query"] for r in rows} | {r["positive"] for r in rows})
        print(f"{n} pairs, {texts} distinct texts", flush=True)
        times: dict[str, list[float]] = {"bindkit": [], "st": []}
        for _ in range(args.repeats):
            times["st"].append(run_peer(data, work))
            times["bindkit"].append(run_bindkit(data, work))
            print(json.dumps(times), flush=True)
        peer, ours = statistics.median(times["st"]), statistics.median(times["bindkit"])
        ratio = peer / ours
        print(f"median: bindkit {ours:.1f} s, st {peer:.1f} s, speed st/bindkit {ratio:.2f}")
        if args.profile:
            import pstats

            profile = work / "bindkit.prof"
            took = run_bindkit(data, work, profile)
            print(f"profiled bindkit run: {took:.1f} s")
            pstats.Stats(str(profile)).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
