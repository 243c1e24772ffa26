"""How each adapter treats SICK pairs whose one side is negated ("There is no man ..." vs
"A man ..."), the diagnosis behind issue 18's negation triplets (docs/experiments/)::

    python benchmarks/recipe/sick_negation.py SICK_trial.txt st:default st:default+adapter=DIR ...

Per model: Spearman on all pairs, the mean cosine of the negated pairs and of the others, and
Spearman without the negated pairs.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

NEGATION = re.compile(r"\b(no|not|nobody|none)\b|n't")


def compare(path: str, specs: list[str]) -> None:
    """Print the negation diagnosis of each model spec on the SICK file ``path``."""
    import torch

    from bindkit.embed.registry import load_embedder
    from bindkit.tasks.text.sts import read_sts

    torch.set_num_threads(1)
    first, second, gold = read_sts(path)
    negated = np.array(
        [
            bool(NEGATION.search(x.lower())) != bool(NEGATION.search(y.lower()))
            for x, y in zip(first, second, strict=True)
        ]
    )
    print(
        f"{negated.sum()} of {len(gold)} pairs negate one side; mean gold "
        f"{gold[negated].mean():.2f} vs {gold[~negated].mean():.2f}"
    )
    for spec in specs:
        embedder = load_embedder(spec)
        x, y = (np.asarray(embedder.embed_texts(t)) for t in (first, second))
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        y /= np.linalg.norm(y, axis=1, keepdims=True)
        cos = (x * y).sum(1)
        print(
            f"{spec}: Spearman {100 * spearmanr(cos, gold)[0]:.2f}, negated pairs cos "
            f"{cos[negated].mean():.3f}, others {cos[~negated].mean():.3f}, Spearman without the "
            f"negated {100 * spearmanr(cos[~negated], gold[~negated])[0]:.2f}"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sick", type=Path, help="a SICK file (SICK_trial.txt, SICK.txt)")
    parser.add_argument("models", nargs="+", help="model specs to compare")
    args = parser.parse_args(argv)
    if not args.sick.is_file():
        print(f"error: {args.sick}: no such file; give a SICK .txt file", file=sys.stderr)
        return 2
    compare(str(args.sick), args.models)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
