"""How far each adapter moves embeddings away from the base model's, per kind of sentence: the
diagnosis behind issue 18's everyday binding scenes (docs/experiments/, session 4)::

    python benchmarks/recipe/gating.py --work W --shared ../shared/data st:default+adapter=DIR ...

Kinds (300 sentences each, seeded): the queries of the search's training rows
(``W/train-fullpararelnegL.jsonl``), SugarCrepe++ swap_att captions, SICK trial first
sentences, and the preservation sentences (``W/preserve-ctxgen.jsonl``). Per adapter: the mean
1 − cos(f(x), f_base(x)) of each kind, and on all of swap_att how often each TOT condition
fails (cos(c, n) ≥ cos(c, c2): the caption is nearer its swap than its paraphrase; cos(c2, n) ≥
cos(c, c2): the paraphrase is).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import numpy as np

BASE = "st:default"
PER_KIND = 300


def cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def main(argv: list[str] | None = None) -> None:
    import torch

    from bindkit.embed.registry import load_embedder
    from bindkit.tasks.text.sts import read_sts

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("specs", nargs="+", help="adapted models (st:default+adapter=DIR)")
    parser.add_argument("--work", required=True, help="the recipe search's work directory")
    parser.add_argument("--shared", default="../shared/data", help="the public data folder")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    work, shared = Path(args.work), Path(args.shared)
    rng = random.Random(0)
    with (work / "train-fullpararelnegL.jsonl").open(encoding="utf-8") as f:
        train = [json.loads(line)["query"] for line in f]
    with (work / "preserve-ctxgen.jsonl").open(encoding="utf-8") as f:
        preserve = [json.loads(line)["text"] for line in f]
    rng.shuffle(train)
    rng.shuffle(preserve)
    swap = json.loads((shared / "sugarcrepe_pp" / "swap_att.json").read_text(encoding="utf-8"))
    sick = read_sts(shared / "sick2014" / "SICK_trial.txt")[0]
    kinds = {
        "training queries": train[:PER_KIND],
        "SC++ swap_att captions": [x["caption"] for x in swap[:PER_KIND]],
        "SICK trial sentences": list(sick[:PER_KIND]),
        "preservation sentences": preserve[:PER_KIND],
    }
    vectors: dict[str, dict[str, np.ndarray]] = {}
    print(
        "| model | " + " | ".join(f"1 − cos to base, {k}" for k in kinds) + " | TOT fails c | c2 |"
    )
    print("|---" * (len(kinds) + 3) + "|")
    for spec in [BASE, *args.specs]:
        embedder = load_embedder(spec)
        vectors[spec] = {k: np.asarray(embedder.embed_texts(v)) for k, v in kinds.items()}
        c, c2, n = (
            np.asarray(embedder.embed_texts([x[key] for x in swap]))
            for key in ("caption", "caption2", "negative_caption")
        )
        same = cosines(c, c2)
        moved = [1 - cosines(vectors[spec][k], vectors[BASE][k]).mean() for k in kinds]
        print(
            f"| {spec} | "
            + " | ".join(f"{m:.3f}" for m in moved)
            + f" | {(cosines(c, n) >= same).mean():.2f} | {(cosines(c2, n) >= same).mean():.2f} |"
        )


if __name__ == "__main__":
    main()
