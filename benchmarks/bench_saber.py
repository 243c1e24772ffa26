"""Time SABER generation and validation of the default set (1,800 MCQs) on one core.

Run: ``python benchmarks/bench_saber.py``; paste the table into docs/experiments/.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from bindkit.saber.build import generate_saber
from bindkit.saber.validate import validate_saber


def best_of(fn: object, repeats: int = 5) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "saber"
        gen = best_of(lambda: generate_saber(out, overwrite=True))
        val = best_of(lambda: validate_saber(out))
        size = (out / "saber.jsonl").stat().st_size
    print("| step | best (s) | median (s) |")
    print("|---|---|---|")
    print(
        f"| generate default set (1,800 MCQs, {size / 1e6:.1f} MB) | {gen[0]:.2f} | {gen[1]:.2f} |"
    )
    print(f"| validate default set | {val[0]:.2f} | {val[1]:.2f} |")


if __name__ == "__main__":
    main()
