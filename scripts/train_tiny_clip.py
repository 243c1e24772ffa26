"""Train ``builtin:tiny-clip``: a small image–text dual encoder on procedurally rendered scenes.

A thin wrapper: the training is :mod:`bindkit.builtin.tiny_clip` (the shipped weights are built by
library code); ``--help`` lists every option.

Usage (the packaged weights)::

    python scripts/train_tiny_clip.py --out src/bindkit/embed/backends/data/tiny_clip \\
        --eval /tmp/saber-shapes   # a rendered `saber generate --vocab shapes` directory
"""

from __future__ import annotations

from bindkit.builtin.tiny_clip import main

if __name__ == "__main__":
    raise SystemExit(main())
