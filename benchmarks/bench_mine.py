"""End to end on real texts: ``bindkit mine --method hn`` vs sentence-transformers'
``mine_hard_negatives``, the same texts and model (all-MiniLM-L6-v2, CPU), a cold cache.

Both contenders are started at the same moment, each as a fresh process, and timed from launch to
exit (imports, model load, embedding, search, writing the output) in wall seconds and in CPU
seconds (user + system of the process, from ``wait4``): on a shared machine the two see the
same load, and CPU time measures the work done whatever the load.

The pairs: SugarCrepe's (caption, negative caption) rows from ``--sugarcrepe`` (all seven
files; 7,511 pairs, 11,844 distinct texts), optionally repeated with a numbered suffix to reach
``--pairs``; ``--repeats`` rounds:

- ``bindkit``: ``bindkit mine --model st:default --method hn --k 7 --m 4`` with an empty
  ``BINDKIT_CACHE_DIR`` (the embeddings cache is written, never read);
- ``st``: ``SentenceTransformer(all-MiniLM-L6-v2)`` + ``mine_hard_negatives(num_negatives=7,
  use_faiss=True, output_format="n-tuple", batch_size=32)`` and ``Dataset.to_json``.

``--profile`` runs bindkit once more under cProfile and prints where its time goes.

Run: ``python benchmarks/bench_mine.py --sugarcrepe DIR`` (DIR: the SugarCrepe folder, e.g.
``../shared/data/sugarcrepe`` beside a checkout).
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


def bindkit_command(data: Path, work: Path, profile: Path | None = None) -> list[str]:
    command = [sys.executable]
    if profile is not None:
        command += ["-m", "cProfile", "-o", str(profile)]
    command += ["-m", "bindkit", "mine", "--model", "st:default", "--data", str(data)]
    command += ["--out", str(work / "bindkit.jsonl"), "--method", "hn", "--k", "7", "--m", "4"]
    return command


def bindkit_env(work: Path) -> dict[str, str]:
    cache = Path(tempfile.mkdtemp(dir=work, prefix="cache-"))
    return {**os.environ, "BINDKIT_CACHE_DIR": str(cache), "BINDKIT_PROGRESS": "0"}


def peer_command(data: Path, work: Path) -> list[str]:
    return [sys.executable, "-c", PEER, str(data), str(work / "st.jsonl")]


def run_together(
    commands: dict[str, tuple[list[str], dict[str, str]]],
) -> dict[str, dict[str, float]]:
    """Start every command at once (so they share whatever else loads the machine) and return
    each one's wall seconds and CPU seconds (user + system, from ``wait4``)."""
    start = time.perf_counter()
    procs = {
        name: subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for name, (cmd, env) in commands.items()
    }
    by_pid = {proc.pid: name for name, proc in procs.items()}
    out: dict[str, dict[str, float]] = {}
    while by_pid:
        pid, status, usage = os.wait4(-1, 0)
        name = by_pid.pop(pid, None)
        if name is None:
            continue
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{name} failed: {procs[name].stderr.read().decode()[-2000:]}")
        out[name] = {
            "wall_s": time.perf_counter() - start,
            "cpu_s": usage.ru_utime + usage.ru_stime,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--sugarcrepe", type=Path, required=True, help="the SugarCrepe folder (its JSON files)"
    )
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
        runs = []
        for _ in range(args.repeats):
            runs.append(
                run_together(
                    {
                        "bindkit": (bindkit_command(data, work), bindkit_env(work)),
                        "st": (peer_command(data, work), {**os.environ, "HF_HUB_OFFLINE": "1"}),
                    }
                )
            )
            print(json.dumps(runs[-1]), flush=True)
        for measure in ("wall_s", "cpu_s"):
            ours = statistics.median(r["bindkit"][measure] for r in runs)
            peer = statistics.median(r["st"][measure] for r in runs)
            print(f"{measure}: bindkit {ours:.1f}, st {peer:.1f}, st/bindkit {peer / ours:.2f}")
        if args.profile:
            import pstats

            profile = work / "bindkit.prof"
            took = run_together(
                {"bindkit": (bindkit_command(data, work, profile), bindkit_env(work))}
            )
            print(f"profiled bindkit run: {took['bindkit']}")
            pstats.Stats(str(profile)).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
