"""ARO COCO/Flickr30k-Order: building every caption's four shuffles, bindkit vs the original's
way, on real COCO captions (the SugarCrepe captions in ../shared/data, all COCO val2017).

bindkit tags each caption once, batched (``nlp.pipe``), with spaCy's tagger alone; the original
(``TextShuffler``) runs the full ``en_core_web_sm`` pipeline twice per caption (once per spaCy
shuffle). Both build the same options from the same seed: the script checks that, then reports
CPU seconds (``time.process_time``: this process alone, so a busy shared machine does not skew
the ratio) and captions per CPU second for each, best of ``--repeats``, and a 25,010-caption
estimate (the COCO Karpathy test split). Needs ``pip install 'bindkit[benchmarks]'``.

Run: ``python benchmarks/bench_aro_order.py [--n 2000] [--repeats 2]``.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from bindkit.tasks.pairs.aro import caption_options, nltk_tokenize, spacy_model, spacy_tag

DATA = next(
    (
        p / "shared" / "data" / "sugarcrepe"
        for p in Path(__file__).resolve().parents
        if (p / "shared" / "data" / "sugarcrepe").is_dir()
    ),
    Path("shared/data/sugarcrepe"),
)
COCO_TEST_CAPTIONS = 25_010


def coco_captions(n: int) -> list[str]:
    captions: list[str] = []
    for path in sorted(DATA.glob("*.json")):
        captions += [row["caption"] for row in json.loads(path.read_text()).values()]
    unique = list(dict.fromkeys(captions))
    if len(unique) < n:
        raise SystemExit(f"{DATA}: {len(unique)} distinct captions, fewer than --n {n}")
    return unique[:n]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    import spacy

    captions = coco_captions(args.n)
    full = spacy.load(spacy_model())

    def original_tag(caps: Sequence[str]) -> Iterator[tuple[list[str], list[str]]]:
        for caption in caps:
            for _ in range(2):  # shuffle_nouns_and_adj and shuffle_allbut_nouns_and_adj
                doc = full(caption)
            yield [t.text for t in doc], [t.tag_ for t in doc]

    # load the reduced pipeline and import NLTK outside the timing
    list(spacy_tag(captions[:10]))
    nltk_tokenize(captions[0])
    timings: dict[str, list[float]] = {"bindkit": [], "original": []}
    results = {}
    for _ in range(args.repeats):
        for name, tag in (("bindkit", spacy_tag), ("original", original_tag)):
            start = time.process_time()
            results[name] = caption_options(captions, 1, tag, nltk_tokenize)
            timings[name].append(time.process_time() - start)
    same = results["bindkit"] == results["original"]
    print(f"{args.n:,} COCO captions, seed 1: identical options: {same}")
    print("| way | CPU seconds | captions per CPU second | 25,010 captions (COCO test) |")
    print("|---|---|---|---|")
    for name, times in timings.items():
        t = min(times)
        print(f"| {name} | {t:.2f} | {args.n / t:,.0f} | {COCO_TEST_CAPTIONS * t / args.n:.0f} s |")
    ratio = min(timings["original"]) / min(timings["bindkit"])
    print(f"bindkit needs 1/{ratio:.1f} of the original's CPU time")
    if not same:
        raise SystemExit("the two ways built different options")


if __name__ == "__main__":
    main()
