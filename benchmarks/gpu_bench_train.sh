#!/usr/bin/env bash
# One-shot GPU check (a few minutes on one GPU): training throughput of `bindkit train triplets`
# vs sentence-transformers' trainer, LoRA r4, all-MiniLM-L6-v2, batch 64, bf16 on both sides.
# Issue 8's plain loop ran 656 triplets/s on an H200 at batch 64.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}" python benchmarks/bench_train.py \
    --device cuda --triplets "${TRIPLETS:-12800}" --batch-size 64 --full
