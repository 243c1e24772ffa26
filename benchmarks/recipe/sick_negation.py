"""How each adapter treats SICK pairs whose one side is negated ("There is no man ..." vs
"A man ..."), the diagnosis behind issue 18's negation triplets (docs/experiments/)::

    python benchmarks/recipe/sick_negation.py SICK_trial.txt st:default st:default+adapter=DIR ...

Per model: Spearman on all pairs, the mean cosine of the negated pairs and of the others, and
Spearman without the negated pairs.
"""

from __future__ import annotations

import re
import sys

import numpy as np
from scipy.stats import spearmanr

NEGATION = re.compile(r"\b(no|not|nobody|none)\b|n't")


def main(path: str, specs: list[str]) -> None:
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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
