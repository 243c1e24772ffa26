"""Throughput of the offline template backend (validated, admitted and written examples per
second, one core) and of the validator alone. Best of ``--repeats`` runs.

Run: ``python benchmarks/bench_synth.py [--n 5000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

from bindkit.synth.backends.template import TemplateBackend
from bindkit.synth.generate import generate
from bindkit.synth.splits import read_examples
from bindkit.synth.validate import validate_example, validate_file


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    gen_times, val_times = [], []
    file_times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            generate(Path(tmp), args.n, TemplateBackend(seed=0), progress=False)
            gen_times.append(time.perf_counter() - start)
            examples = read_examples(Path(tmp) / "examples.jsonl")
            for workers in file_times:
                start = time.perf_counter()
                checked, failures = validate_file(
                    Path(tmp) / "examples.jsonl", workers=workers, chunk=args.n // 4
                )
                file_times[workers].append(time.perf_counter() - start)
                assert checked == args.n and not failures
        gc.collect()
        gc.freeze()  # the loaded examples are long-lived: keep the collector off them
        start = time.perf_counter()
        bad = sum(bool(validate_example(ex)) for ex in examples)
        val_times.append(time.perf_counter() - start)
        gc.unfreeze()
        assert bad == 0
    print("| step | examples | best (s) | examples/s |")
    print("|---|---|---|---|")
    g, v = min(gen_times), min(val_times)
    print(
        f"| template backend: plan, produce, negatives, validate, admit, append | {args.n:,} | "
        f"{g:.2f} | {args.n / g:,.0f} |"
    )
    print(f"| validator alone, one core | {args.n:,} | {v:.2f} | {args.n / v:,.0f} |")
    for workers, times in file_times.items():
        t = min(times)
        print(
            f"| `bindkit synth validate FILE` (parse + validate), {workers} process(es) | "
            f"{args.n:,} | {t:.2f} | {args.n / t:,.0f} |"
        )


if __name__ == "__main__":
    main()
