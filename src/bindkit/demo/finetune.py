"""``bindkit demo finetune``: template data → LoRA on all-MiniLM-L6-v2 (CPU) → before/after table.

Steps: (1) ``bindkit synth`` template examples and their standard split set; the training
examples are the train split after NoOverlap against the packaged SABER vocabulary, as
full-caption, paraphrase, relation and negation triplets, with everyday binding scenes mixed in
(:mod:`bindkit.synth.mixes`, mix :data:`MIX`); (2)
preservation sentences: the scene contexts of those training captions and as many everyday
sentences without adjectives (:mod:`bindkit.synth.preservation`), whose base-model embeddings are
distilled into each batch; (3) two trainings (with preservation, and plain as the comparison
row), the preserved one also as a LiNeS adapter (α fixed by issue 18's recipe search: 1, the
whole update);
(4) SABER text→text, held-out full-caption triplets and (with ``--sts``/``--scpp``) STS and
SugarCrepe++ TOT through ``bindkit.evaluate``; (5) ``OUT/report.md`` with one table and what was
chosen. Torch threads and deterministic algorithms are pinned, so a rerun gives the same table.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text
from bindkit._lock import directory_lock
from bindkit.errors import BindkitError
from bindkit.synth.mixes import KIND_TEXT, MIXES, training_triplets
from bindkit.synth.preservation import PRESERVATION_TEXT, preservation_sentences

MODEL = "st:default"
# The recipe (issue 18's search, docs/benchmarks.md): the paper's 5e-5 barely moves a
# 22M-parameter model (issue 8's table); 2e-3 with batch 32 learns binding in 100-200 steps.
LR = 2e-3
BATCH = 32
MARGIN = 0.05
STEPS = 300  # optimizer steps (9,600 training triplets): the CPU budget
LINES_ALPHA = 1.0  # LiNeS α of the shipped adapter, chosen on the search's dev panel
MIX = "fullpararelnegLEOR"  # the training triplets (synth.mixes.MIXES): NoOverlap + everyday
PRESERVATION = "ctxgen"  # the `preserve` run's set (synth.preservation.PRESERVATION_SETS)
PRESERVE_WEIGHT = 1.0  # the default --preserve-weight
PLAIN = False  # the default of --plain/--no-plain: the comparison row without preservation
SOUP = 2  # the default --soup: preserved runs (seeds seed, seed + 1, …) averaged into the adapter
# the preservation set of each preserved run (run k: SOUP_PRESERVATION[k % 2]): the soup averages
# a run that keeps everyday sentences without attributes with one that also keeps one-attribute
# sentences, on either side of the binding / STS front (issue 18's search, session 5)
SOUP_PRESERVATION = (PRESERVATION, "ctxgenD")
TRAIN = "demo-train.jsonl"
PRESERVE = "preserve.jsonl"
PRESERVE_BATCH = 32  # preservation sentences per batch
VAL_TRIPLETS = 256  # the LiNeS sweep's validation triplets (the first of val.jsonl)
TEST_TRIPLETS = 1024  # the held-out column (the first of test.jsonl)
SCPP_SUBSETS = ("swap_att", "replace_att", "replace_rel", "swap_obj", "replace_obj")


@dataclass
class DemoOptions:
    """Options of ``bindkit demo finetune``."""

    out: str
    sts: str | None = None
    scpp: str | None = None  # SugarCrepe++ folder: adds its TOT columns (text only)
    examples: int = 24000  # template examples to generate; ~1/4 survive NoOverlap as triplets
    max_triplets: int | None = None  # cap on the training triplets (None: all)
    saber_per_n: int | None = None  # a smaller SABER (MCQs per N) for quick runs; None: default
    preserve_weight: float = PRESERVE_WEIGHT
    plain: bool = PLAIN  # also train without preservation (the comparison row)
    soup: int = SOUP  # preserved runs with consecutive seeds, their adapters averaged
    seed: int = 0
    threads: int = 2  # torch CPU threads, pinned: another count sums in another order
    progress: bool = True

    def __post_init__(self) -> None:
        """Every option checked before any data is generated or a model loaded."""
        from bindkit._checks import check_range
        from bindkit.saber.build import MAX_PER_N

        most = 1_000_000  # 40x the default; a CPU demo beyond that is a typo, not a plan
        check_range("--examples", self.examples, 100, most)
        check_range("--max-triplets", self.max_triplets, BATCH, 2 * most)
        check_range("--preserve-weight", self.preserve_weight, 0, 1000)
        check_range("--saber-per-n", self.saber_per_n, 2, MAX_PER_N)
        if self.saber_per_n is not None and self.saber_per_n % 2:
            raise BindkitError(
                f"--saber-per-n {self.saber_per_n}: must be even (half independent MCQs, half "
                "nested chains)"
            )
        check_range("--threads", self.threads, 1, 1024)
        check_range("--soup", self.soup, 1, 16)
        if self.scpp is not None and not Path(self.scpp).is_dir():
            raise BindkitError(f"--scpp {self.scpp}: not a directory (the SugarCrepe++ data/)")
        if self.sts is not None:
            from bindkit.errors import DataFormatError
            from bindkit.tasks.text.sts import read_sts

            if not Path(self.sts).is_file():
                raise BindkitError(
                    f"--sts {self.sts}: file not found; `bindkit fetch sts --to sick` downloads "
                    "SICK (then --sts sick/SICK_trial.txt)"
                )
            try:
                read_sts(self.sts)  # a corrupt file fails now, not after the training
            except DataFormatError as exc:
                raise BindkitError(f"--sts: {exc}") from None


def run_demo(options: DemoOptions) -> dict[str, Any]:
    """Run the demo; returns the table rows also written to ``OUT/report.md``."""
    out = Path(options.out)
    with directory_lock(out, "bindkit demo finetune"), pinned(options.threads):
        return _run(options, out)


def _say(options: DemoOptions, text: str) -> None:
    if options.progress:
        print(text, file=sys.stderr, flush=True)


def preserve_file(kind: str) -> str:
    """The demo's file of preservation set ``kind`` (``preserve.jsonl`` for PRESERVATION)."""
    return PRESERVE if kind == PRESERVATION else f"preserve-{kind}.jsonl"


def run_preservation(options: DemoOptions, k: int) -> str:
    """The preservation set of preserved run ``k`` (``preserve``, ``preserve-s1``, …)."""
    return SOUP_PRESERVATION[k % len(SOUP_PRESERVATION)] if options.soup > 1 else PRESERVATION


def _data(options: DemoOptions, out: Path) -> tuple[Path, dict[str, int], dict[str, int]]:
    from bindkit._io import atomic_write_bytes, jsonl_bytes
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.splits import no_overlap, read_examples, saber_words, split, write_splits

    data = out / "data"
    generate(
        data,
        options.examples,
        TemplateBackend(options.seed),
        seed=options.seed,
        progress=options.progress,
    )
    # the standard split set (hashed, as `bindkit synth split` writes it): val and test come
    # from it; the demo's own files are copies beside it
    write_splits(data, seed=options.seed, exclude_vocab="builtin")
    examples = read_examples(data / "examples.jsonl")
    train = no_overlap(split(examples, options.seed)["train"], saber_words(None))
    rows = training_triplets(train, options.seed, MIX)
    if options.max_triplets is not None:
        rows = rows[: options.max_triplets]
    atomic_write_bytes(data / TRAIN, jsonl_bytes(rows))
    for name, size in (("val", VAL_TRIPLETS), ("test", TEST_TRIPLETS)):
        lines = (data / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:size]
        atomic_write_text(data / f"demo-{name}.jsonl", "\n".join(lines) + "\n")
    steps = min(STEPS, -(-len(rows) // BATCH))
    sizes = {}
    for kind in dict.fromkeys(run_preservation(options, k) for k in range(options.soup)):
        sentences = preservation_sentences(train, kind, options.seed)[: steps * PRESERVE_BATCH]
        atomic_write_bytes(data / preserve_file(kind), jsonl_bytes({"text": t} for t in sentences))
        sizes[kind] = len(sentences)
    counts = {"train": len(rows), "val": VAL_TRIPLETS, "test": TEST_TRIPLETS}
    return data, sizes, counts


def _train(
    options: DemoOptions,
    data: Path,
    name: str,
    preserve: str | None,
    seed: int | None = None,
) -> dict[str, Any]:
    from bindkit.train.config import TrainConfig
    from bindkit.train.trainer import reusable_run, train_triplets

    config = TrainConfig(
        model=MODEL,
        train=str(data / TRAIN),
        val=str(data / "demo-val.jsonl"),
        out=str(Path(options.out) / "runs" / name),
        lr=LR,
        batch_size=BATCH,
        margin=MARGIN,
        max_steps=STEPS,
        lines_alpha=LINES_ALPHA,
        model_dropout=False,
        preserve=str(data / preserve_file(preserve)) if preserve else None,
        preserve_weight=options.preserve_weight,
        preserve_batch=PRESERVE_BATCH,
        save_every=25,
        seed=options.seed if seed is None else seed,
        progress=options.progress,
    )
    # A rerun of the same demo reuses a finished run and resumes a killed one from its last
    # checkpoint; a run made with other options or data starts over: the trainer's one reuse
    # rule (its run identity hashes every option and input file).
    record = reusable_run(config)
    if record is not None:
        _say(options, f"run `{name}`: finished earlier, reusing {config.out}")
        return record
    return train_triplets(dataclasses.replace(config, overwrite=True), reuse=True)


def _evaluate(
    options: DemoOptions, out: Path, models: dict[str, str], saber: Path | None
) -> dict[str, dict[str, float]]:
    from bindkit.evaluation import evaluate

    results = out / "results"
    table: dict[str, dict[str, float]] = {}
    for label, spec in models.items():
        row: dict[str, float] = {}
        record = evaluate(
            [spec],
            task="saber",
            data=saber,
            pairings="tt",
            out=results,
            cache=False,
            report=False,
            verbose=False,
        )
        row["saber_t2t_mcq"] = record[0]["scores"]["mcq_accuracy"]
        record = evaluate(
            [spec],
            task="triplets",
            data=out / "data" / "demo-test.jsonl",
            out=results,
            cache=False,
            report=False,
            verbose=False,
        )
        row["heldout_triplets"] = record[0]["scores"]["triplet_accuracy"]
        if options.sts:
            record = evaluate(
                [spec],
                task="sts",
                data=options.sts,
                out=results,
                cache=False,
                report=False,
                verbose=False,
            )
            row["sts_spearman"] = record[0]["scores"]["spearman"]
        if options.scpp:
            records = evaluate(
                [spec],
                task="sugarcrepe_pp",
                data=options.scpp,
                subsets=list(SCPP_SUBSETS),
                out=results,
                cache=False,
                report=False,
                verbose=False,
            )
            for one in records:
                row[f"scpp_{one['subset']}"] = one["scores"]["tot_accuracy"]
        table[label] = row
        _say(options, f"{label}: " + ", ".join(f"{k} {100 * v:.2f}" for k, v in row.items()))
    return table


@contextlib.contextmanager
def pinned(threads: int) -> Iterator[None]:
    """Fix what makes a CPU run vary, for the block: the thread count (the order of float sums
    in matmuls) and nondeterministic kernels (an error instead, should one be used)."""
    import torch

    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


def _run(options: DemoOptions, out: Path) -> dict[str, Any]:
    started = time.perf_counter()
    data, sizes, counts = _data(options, out)
    _say(options, f"data: {counts} triplets, preservation sentences {sizes}")
    saber = None
    if options.saber_per_n is not None:
        from bindkit.saber.build import generate_saber

        saber = out / "saber"
        generate_saber(saber, per_n=options.saber_per_n, overwrite=True)
    runs: dict[str, dict[str, Any]] = {}
    for k in range(options.soup):
        kind = run_preservation(options, k) if options.preserve_weight > 0 else None
        name = f"preserve-s{k}" if k else "preserve"
        runs[name] = _train(options, data, name, preserve=kind, seed=options.seed + k)
    if options.plain:
        runs["plain"] = _train(options, data, "plain", preserve=None)
    final = out / "runs" / "preserve"
    if options.soup > 1:
        final = _soup(out, [n for n in runs if n.startswith("preserve")])
    for variant in ("adapter-raw", "adapter-lines"):
        if (out / variant).exists():
            shutil.rmtree(out / variant)
        shutil.copytree(final / variant, out / variant)
    # the plain run is the comparison row (its raw update); the preserved run's raw and LiNeS
    models = {"base": MODEL}
    named = [("plain", "raw"), ("preserve", "raw"), ("preserve", "lines")]
    named += [("preserve-soup", "raw"), ("preserve-soup", "lines")]
    made = {*runs, *(["preserve-soup"] if options.soup > 1 else [])}
    for name, variant in named:
        if name in made and not (variant == "lines" and LINES_ALPHA == 1.0):  # lines = raw
            models[f"{name} {variant}"] = (
                f"{MODEL}+adapter={out / 'runs' / name / f'adapter-{variant}'}"
            )
    table = _evaluate(options, out, models, saber)
    seconds = time.perf_counter() - started
    report = render_report(options, counts, sizes, runs, table, seconds)
    atomic_write_text(out / "report.md", report)
    summary = {
        "table": table,
        "seconds": round(seconds, 1),
        "triplets": counts,
        "runs": {
            k: {"lines": v["lines"], "optimizer_steps": v["optimizer_steps"]}
            for k, v in runs.items()
        },
    }
    atomic_write_text(out / "demo.json", json.dumps(summary, indent=2) + "\n")
    return summary


def _soup(out: Path, names: list[str]) -> Path:
    """The preserved runs' raw adapters averaged (``bindkit soup``) into ``runs/preserve-soup``,
    LiNeS applied at ``LINES_ALPHA`` as for one run; returns that run directory."""
    from bindkit.adapters.lines import apply_lines
    from bindkit.adapters.soup import average_adapters

    soup = out / "runs" / "preserve-soup"
    sources = [out / "runs" / n / "adapter-raw" for n in names]
    average_adapters(sources, soup / "adapter-raw", overwrite=True)  # the demo's own folder
    if (soup / "adapter-lines").exists():
        shutil.rmtree(soup / "adapter-lines")
    if LINES_ALPHA == 1.0:
        shutil.copytree(soup / "adapter-raw", soup / "adapter-lines")
    else:
        apply_lines(soup / "adapter-raw", soup / "adapter-lines", alpha=LINES_ALPHA)
    return soup


def render_report(
    options: DemoOptions,
    counts: dict[str, int],
    preserved: dict[str, int],
    runs: dict[str, dict[str, Any]],
    table: dict[str, dict[str, float]],
    seconds: float,
) -> str:
    columns = {
        "saber_t2t_mcq": "SABER t2t MCQ",
        "heldout_triplets": "held-out full-caption triplets",
        "sts_spearman": "STS Spearman",
        **{f"scpp_{s}": f"SC++ TOT {s}" for s in SCPP_SUBSETS},
    }
    shown = [c for c in columns if any(c in row for row in table.values())]
    lines = [
        "# bindkit demo finetune: all-MiniLM-L6-v2, LoRA on binding triplets (CPU)",
        "",
        "| model | " + " | ".join(columns[c] for c in shown) + " |",
        "|---" * (len(shown) + 1) + "|",
    ]
    for label, row in table.items():
        lines.append(f"| {label} | " + " | ".join(f"{100 * row[c]:.2f}" for c in shown) + " |")
    lines += ["", "What was chosen and why:", ""]
    lines.append(
        f"- data: {options.examples} template examples (`bindkit synth --backend template`, seed "
        f"{options.seed}); the train split after NoOverlap against the SABER vocabulary (no "
        "SABER attribute or object word anywhere, distractors included). Each example gives "
        "full-caption triplets (its short query → its caption vs the caption's attribute or "
        f"object swap) and {' and '.join(KIND_TEXT[k] for k in MIXES[MIX][1:])}; a shuffled mix "
        f"(`{MIX}`), "
        f"{counts['train']} triplets. Val and held-out test triplets are the first "
        f"{counts['val']} and {counts['test']} of the standard split's full captions."
    )
    lines.append(
        f"- training: LoRA r4/α4 on q/k/v/output of all 6 layers, hinge {MARGIN}, AdamW wd 0.01, "
        f"batch {BATCH}, lr {LR}, {STEPS} steps: the paper's 5e-5 does not move a 22M-parameter "
        "model (issue table). The frozen model's dropout is off (a deterministic forward, "
        f"faster on the CPU); torch runs on {options.threads} threads with deterministic "
        "algorithms, so a rerun gives the same table."
    )
    for name, run in runs.items():
        lines.append(f"- run `{name}`: {run['optimizer_steps']} steps, {run['train_seconds']} s.")
    if options.soup > 1:
        lines.append(
            f"- soup: the {options.soup} preserved runs (seeds {options.seed}–"
            f"{options.seed + options.soup - 1}; preservation sets "
            + ", ".join(f"`{run_preservation(options, k)}`" for k in range(options.soup))
            + ") averaged in weight space (`bindkit soup`: the mean of their LoRA updates, "
            "exact): a run on each side of the binding / STS front, and what one seed learnt "
            "alone halved; the shipped adapter."
        )
    lines.append(
        f"- LiNeS α {LINES_ALPHA} (layer ℓ keeps α + (1 − α)·ℓ/5 of its update) for the shipped "
        "adapter: chosen once on a dev panel (SugarCrepe text triplets and SICK train) in "
        "issue 18's recipe search (`benchmarks/recipe/`: the largest α whose dev STS stays "
        "within 0.6 of the base model's), not on this table's files"
        + (
            "; at α 1 the whole update is kept, so `adapter-lines/` equals `adapter-raw/`."
            if LINES_ALPHA == 1.0
            else "."
        )
    )
    sets = "; ".join(
        f"{'`' + kind + '`, ' if len(preserved) > 1 else ''}{size} sentences, "
        f"{PRESERVATION_TEXT[kind]}"
        for kind, size in preserved.items()
    )
    lines.append(
        f"- preservation (`preserve` rows): {sets}; {PRESERVE_BATCH} per batch, loss += "
        f"{options.preserve_weight} · "
        "mean(1 − cos(f(x), f_base(x))). Distilling attribute-free copies of the training "
        "captions instead kept STS too but stopped binding from transferring to SABER's "
        "vocabulary (≈80 %): they share the structure that binding has to change."
    )
    if options.sts:
        lines.append(
            f"- STS: Spearman on `{options.sts}`; it did not choose anything (reported only)."
        )
    if options.scpp:
        lines.append(
            f"- SugarCrepe++ (`{options.scpp}`): text-only TOT accuracy per subset (both "
            "captions closer to each other than either is to the negative); reported only."
        )
    else:
        lines.append("- STS: no `--sts` file given, so no STS column (bindkit does not ship SICK).")
    shipped = "`preserve-soup`" if options.soup > 1 else "the `preserve` run's"
    lines.append(
        f"- adapters: `adapter-lines/` and `adapter-raw/` are {shipped}; "
        f"wall time {seconds / 60:.1f} min."
    )
    return "\n".join(lines) + "\n"
