"""Time SABER generation and validation of the default set (1,800 MCQs) on one core.

Run: ``python benchmarks/bench_saber.py [--repeats 5]``; paste the table into docs/experiments/.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from bindkit.errors import BindkitError
from bindkit.saber.build import generate_saber
from bindkit.saber.validate import validate_saber
from bindkit.support import check_range


def best_of(fn: object, repeats: int = 5) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times), statistics.median(times)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed runs per step (best, median)")
    args = parser.parse_args(argv)
    try:
        check_range("--repeats", args.repeats, 1, 100)
    except BindkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "saber"
        gen = best_of(lambda: generate_saber(out, overwrite=True), args.repeats)
        val = best_of(lambda: validate_saber(out), args.repeats)
        size = (out / "saber.jsonl").stat().st_size
    print("| step | best (s) | median (s) |")
    print("|---|---|---|")
    print(
        f"| generate default set (1,800 MCQs, {size / 1e6:.1f} MB) | {gen[0]:.2f} | {gen[1]:.2f} |"
    )
    print(f"| validate default set | {val[0]:.2f} | {val[1]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
