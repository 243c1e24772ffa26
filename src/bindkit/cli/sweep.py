"""``bindkit sweep``: a thin wrapper over :func:`bindkit.sweep.study.run_sweep`."""

from __future__ import annotations

import argparse
from typing import Any


def register(commands: Any) -> None:
    parser = commands.add_parser(
        "sweep",
        help="an Optuna study over train-triplets options, scored on a panel (Pareto front)",
        description="Each trial trains with TrainConfig overrides drawn from CONFIG.toml, scores "
        "the raw adapter and its LiNeS copies on the panel, and updates OUT/sweep.md, "
        "OUT/sweep.csv and OUT/sweep.png. Rerun to resume; run several processes (one "
        "--storage) to share a study. Example file: examples/sweep.toml.",
    )
    parser.add_argument("config", help="the sweep TOML: [study], [train], [search.*], [[panel]]")
    parser.add_argument("--out", required=True, help="sweep folder: trials, results, study.db")
    parser.add_argument(
        "--storage",
        default=None,
        help="Optuna storage URL shared by the workers (default: sqlite:///OUT/study.db)",
    )
    parser.add_argument(
        "--n-trials", type=int, default=None, help="trials of this worker (default: study.trials)"
    )
    parser.add_argument(
        "--seed", type=int, default=None, help="sampler seed (default: study.seed); one per worker"
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="a recipe trial's torch CPU threads, pinned with deterministic kernels as "
        "`bindkit finetune --threads` (default: torch's own)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress output")
    parser.set_defaults(handler=_sweep)


def _sweep(args: argparse.Namespace) -> int:
    from bindkit.sweep.study import run_sweep

    summary = run_sweep(
        args.config,
        args.out,
        storage=args.storage,
        n_trials=args.n_trials,
        seed=args.seed,
        progress=not args.quiet,
        threads=args.threads,
    )
    states = ", ".join(f"{n} {s.lower()}" for s, n in sorted(summary["states"].items()))
    print(
        f"study {summary['study']}: {states or 'no trials'}; wrote {', '.join(summary['outputs'])}"
    )
    return 0
