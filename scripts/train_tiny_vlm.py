"""Train ``builtin:tiny-vlm``: a few-MB Qwen3-VL embedder on procedurally rendered scenes.

A thin wrapper: the training is :mod:`bindkit.builtin.tiny_vlm` (the shipped weights and
tokenizer are built by library code); ``--help`` lists every option.

Usage (the packaged weights)::

    python scripts/train_tiny_vlm.py --out src/bindkit/embed/backends/data/tiny_vlm \\
        --eval /tmp/saber-shapes   # a rendered `saber generate --vocab shapes` directory
"""

from __future__ import annotations

from bindkit.builtin.tiny_vlm import main

if __name__ == "__main__":
    raise SystemExit(main())
