"""The seeds' analyses on ``builtin:tiny-vlm`` (issue 35, item 3), one subcommand each.

- ``overlap`` (seed 000, Appendix C.1, Table 11 in kind): the demo's text-only LoRA recipe
  (:func:`bindkit.demo.tiny_vlm._train`, called, not copied) trained on size-matched triplets
  drawn from (a) NoOverlap: half A of the shapes vocabulary, whose attributes and objects never
  occur in the evaluation MCQs; (b) Overlap: half B, the evaluation's own vocabulary (binding
  sets of evaluation items dropped, as the demo does); (c) Random: the whole vocabulary (same
  drop). Evaluated on SABER-shapes MCQs drawn from half B only (N = 2..7: half B holds 7
  objects), with a control drawn from half A (did NoOverlap learn its own words?); every
  training row and every evaluation MCQ is checked against its vocabulary.
- ``gap`` (seed 002, Tables I and II in kind): ``analyze modality-gap`` of the base model and
  each ``--adapter`` on the demo's evaluation scenes, once with the model's own prompt format
  (``qwen3-vl-embedding``) and once per prompt layout of the generic ``mllm`` family loaded on
  the same checkpoint folder (``none``, ``user``, ``system``, ``hierarchical``); and SABER
  tt / ti / it / ii under each (``--no-scores``: the gap alone).
- ``saha`` (seed 002, Algorithm 1): caption → image pairs of rendered SABER-shapes scenes
  (a draw disjoint in binding sets from the evaluation set), mined into clusters by SaHa (with
  and without the label filter), plain hard negatives and random; the false-negative rate of
  each (a negative whose image shows the anchor's binding set; SABER gives the ground truth);
  then cluster InfoNCE (``bindkit train clusters``' trainer) on SaHa clusters vs on random
  clusters (random-batch InfoNCE), SABER tt / ti / it / ii before and after.

    python benchmarks/vlm_analyses.py overlap --out analyses
    python benchmarks/vlm_analyses.py gap --out analyses \\
        --adapter DEMO/run/adapter-raw --adapter DEMO/run/adapter-lines
    python benchmarks/vlm_analyses.py saha --out analyses

Each writes ``OUT/<subcommand>/<subcommand>.md`` and ``.json`` (with what produced them);
a rerun reuses finished training runs, rendered images and scores whose inputs are unchanged.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

MODEL = "builtin:tiny-vlm"
PAIRINGS = ("tt", "ti", "it", "ii")
EVAL_SEED = 0  # the demo's evaluation draw
TRAIN_SEED = 2  # the demo's training draw (seed 1 trained tiny-vlm)
POOL_SEED = 3  # the SaHa pool's draw
HALF_N_MAX = 7  # half B holds 7 of the 15 shapes objects: MCQs with N = 2..7
ARMS = ("NoOverlap", "Overlap", "Random")
NATIVE = "qwen3-vl-embedding (native)"
MINERS = {  # label → (bindkit mine method, SaHa label filter)
    "random": ("random", False),
    "hard negatives (top-k)": ("hn", False),
    "SaHa": ("saha", False),
    "SaHa + label filter": ("saha", True),
}
TRAINED = {"random-batch InfoNCE": "random", "SaHa cluster InfoNCE": "SaHa"}


def _say(progress: bool, text: str) -> None:
    if progress:
        print(text, file=sys.stderr, flush=True)


# --- pure parts ------------------------------------------------------------------------------


def split_vocabulary(vocab: Any) -> tuple[Any, Any]:
    """Halves A and B of a vocabulary: alternate attributes and objects in file order (so each
    half keeps colours, materials and patterns), the palette shared.

    Raises:
        BindkitError: the halves share an attribute or object (never, unless the vocabulary
            lists one twice).
    """
    from bindkit.saber.vocab import subset_vocabulary

    attributes = [a.name for a in vocab.attributes]
    objects = list(vocab.objects)
    a = subset_vocabulary(vocab, attributes[0::2], objects[0::2], "A")
    b = subset_vocabulary(vocab, attributes[1::2], objects[1::2], "B")
    check_halves(a, b)
    return a, b


def check_halves(a: Any, b: Any) -> None:
    """Refuse two vocabularies that share an attribute or an object."""
    shared = sorted({x.name for x in a.attributes} & {x.name for x in b.attributes})
    shared += sorted(set(a.objects) & set(b.objects))
    if shared:
        raise BindkitError(
            f"vocabulary halves {a.source} and {b.source} share {shared[0]!r}; NoOverlap needs "
            "disjoint halves"
        )


def mcq_bindings(mcq: Any) -> dict[str, list[list[str]]]:
    """An MCQ's bindings by item role, in the triplet rows' ``bindings`` form."""
    return {item.role: [list(b) for b in item.bindings] for item in mcq.items}


def check_vocabulary(rows: Iterable[Mapping[str, Any]], vocab: Any, what: str) -> int:
    """Refuse a row any of whose texts binds an attribute or object outside ``vocab``; returns
    how many rows were checked.

    Raises:
        BindkitError: naming the row, the text's role and the word.
    """
    attributes, objects = {a.name for a in vocab.attributes}, set(vocab.objects)
    count = 0
    for number, row in enumerate(rows):
        for role, bindings in row["bindings"].items():
            for attribute, obj in bindings:
                for word, known in ((attribute, attributes), (obj, objects)):
                    if word not in known:
                        raise BindkitError(
                            f"{what} row {number} ({role}): {word!r} is not in {vocab.source}; "
                            "the split must keep every row inside its vocabulary half"
                        )
        count += 1
    return count


def size_matched(
    pools: Mapping[str, Sequence[Any]], limit: int, seed: int
) -> tuple[dict[str, list[Any]], int]:
    """The same number of MCQs from each pool (the smallest pool's size, at most ``limit``),
    drawn at random per pool with a fixed seed, in drawn order."""
    count = min(limit, *(len(p) for p in pools.values()))
    return {
        name: random.Random(f"{seed}/{name}").sample(list(pool), count)
        for name, pool in pools.items()
    }, count


def spread(items: Sequence[Any], count: int) -> list[Any]:
    """At most ``count`` of ``items``, evenly spaced (every N of a SABER file, which is ordered
    by N).

    Example:
        >>> spread(list(range(10)), 4)
        [0, 2, 5, 7]
    """
    if len(items) <= count:
        return list(items)
    return [items[i * len(items) // count] for i in range(count)]


def binding_key(bindings: Iterable[Sequence[str]]) -> str:
    """A binding set as a label: order-free, so two scenes with the same bindings share it.

    Example:
        >>> binding_key([("red", "cube"), ("blue", "cone")]) == binding_key(
        ...     [("blue", "cone"), ("red", "cube")])
        True
    """
    return "; ".join(sorted(f"{a} {o}" for a, o in bindings))


def false_negatives(
    clusters: Iterable[Mapping[str, Any]], truth: Mapping[str, str]
) -> tuple[int, int]:
    """(false negatives, negatives) over clusters as ``bindkit mine`` writes them: a negative
    pair is false when its positive (an image) shows the binding set of the anchor's positive.
    ``truth`` maps each positive to its binding set (from the SABER file, not the rows' labels).
    """
    wrong = total = 0
    for cluster in clusters:
        anchor, *negatives = cluster["pairs"]
        for pair in negatives:
            total += 1
            wrong += truth[pair["positive"]] == truth[anchor["positive"]]
    return wrong, total


# --- model specs and cached results -------------------------------------------------------


def checkpoint_folder(spec: str) -> tuple[Path, dict[str, Any], str | None]:
    """The checkpoint folder, loading options and adapter of a tiny-vlm-like spec:
    ``builtin:tiny-vlm[+weights=DIR]`` or ``qwen3-vl-embedding:DIR`` (+ options)."""
    from bindkit.embed.backends.builtin import builtin_dir, read_embedder_file
    from bindkit.embed.registry import Spec

    parsed = Spec.parse(spec)
    options: dict[str, Any] = dict(parsed.options)
    adapter = options.pop("adapter", None)
    if parsed.name == "builtin" and parsed.arg == "tiny-vlm":
        folder = Path(options.pop("weights", None) or builtin_dir("tiny-vlm"))
        _family, defaults = read_embedder_file(folder)
        return folder, {**defaults, **options}, adapter
    if parsed.name == "qwen3-vl-embedding" and parsed.arg:
        return Path(parsed.arg), options, adapter
    raise BindkitError(
        f"--model {spec}: give builtin:tiny-vlm[+weights=DIR] or qwen3-vl-embedding:DIR (a "
        "Qwen3-VL-Embedding checkpoint folder the mllm family can load with its layouts)"
    )


def model_identity(spec: str) -> dict[str, Any]:
    """What decides a model's outputs: the spec, its checkpoint folder's and adapter's files."""
    from bindkit.embed.weights import weights_identity

    folder, options, adapter = checkpoint_folder(spec)
    return {
        "spec": spec,
        "weights": weights_identity(str(folder)),
        "options": options,
        "adapter": weights_identity(adapter) if adapter else None,
    }


def cached(path: Path, identity: Mapping[str, Any], compute: Callable[[], Any]) -> Any:
    """``compute()``, or the value stored in ``path`` by an earlier call with this identity."""
    from bindkit._io import atomic_write_text

    identity = json.loads(json.dumps(identity, default=str))
    if path.is_file():
        stored = json.loads(path.read_text("utf-8"))
        if stored.get("identity") == identity:
            return stored["value"]
    value = compute()
    record = {"identity": identity, "value": value}
    atomic_write_text(path, json.dumps(record, indent=2, default=str) + "\n")
    return value


def saber_scores(
    work: Path, saber: Path, label: str, spec: str, files: str | None = None
) -> dict[str, Any]:
    """tt / ti / it / ii MCQ accuracy of ``spec`` on ``saber`` (the demos' evaluation call),
    reused while the model's files and the SABER file are unchanged. ``files``: a tiny-vlm-like
    spec naming the same checkpoint and adapter, when ``spec`` is of another family (``mllm:``)."""
    from bindkit._io import sha256_file
    from bindkit.demo.tiny_clip import _evaluate

    def compute() -> dict[str, Any]:
        table, provenance = _evaluate(work, saber, {label: spec})
        return {"scores": table[label], "provenance": provenance}

    identity = {**model_identity(files or spec), "spec": spec}
    identity["saber"] = sha256_file(saber / "saber.jsonl")
    return dict(cached(work / "scores" / f"{slug(label)}.json", identity, compute))


def slug(label: str) -> str:
    """A file name for a row label: ``"SaHa + label filter"`` → ``saha---label-filter``."""
    return "".join(c if c.isalnum() else "-" for c in label).strip("-").lower()


def render(saber: Path, progress: bool) -> list[Any]:
    """Render a SABER directory's missing images procedurally; its MCQs."""
    from bindkit.saber.io import read_manifest, read_saber
    from bindkit.saber.render import make_backend
    from bindkit.saber.render.run import render_saber

    seed = (read_manifest(saber) or {}).get("seed", 0)
    render_saber(saber, make_backend("procedural", seed=seed), progress=progress)
    return list(read_saber(saber).mcqs)


def draw(saber: Path, vocab: Any, seed: int, per_n: int, n_max: int, progress: bool) -> list[Any]:
    """Generate (unless the same draw is there) and render a SABER-shapes set."""
    from bindkit.saber.build import generate_saber
    from bindkit.saber.io import read_manifest

    manifest = read_manifest(saber) if (saber / "manifest.json").is_file() else None
    wanted = (seed, per_n, n_max, vocab.sha256)
    found = (
        (manifest or {}).get("seed"),
        ((manifest or {}).get("options") or {}).get("per_n"),
        ((manifest or {}).get("options") or {}).get("n_max"),
        ((manifest or {}).get("vocabulary") or {}).get("sha256"),
    )
    if found != wanted:
        generate_saber(saber, seed=seed, per_n=per_n, n_max=n_max, vocab=vocab, overwrite=True)
    return render(saber, progress)


def eval_set(out: Path, per_n: int, progress: bool) -> tuple[Path, list[Any]]:
    """The demo's evaluation set (SABER-shapes seed 0, N = 2..10) in ``OUT/saber``."""
    from bindkit.saber.vocab import load_vocabulary

    saber = out / "saber"
    return saber, draw(saber, load_vocabulary("shapes"), EVAL_SEED, per_n, 10, progress)


def table_md(rows: Mapping[str, Mapping[str, float]]) -> list[str]:
    lines = ["| model | " + " | ".join(PAIRINGS) + " |", "|---" + "|---:" * len(PAIRINGS) + "|"]
    for label, row in rows.items():
        lines.append(f"| {label} | " + " | ".join(f"{100 * row[p]:.1f}" for p in PAIRINGS) + " |")
    return lines


def write_outputs(folder: Path, name: str, record: dict[str, Any], markdown: list[str]) -> None:
    from bindkit._io import atomic_write_text

    atomic_write_text(folder / f"{name}.json", json.dumps(record, indent=2, default=str) + "\n")
    atomic_write_text(folder / f"{name}.md", "\n".join(markdown) + "\n")
    print("\n".join(markdown))


def provenance(args: argparse.Namespace, started: float) -> dict[str, Any]:
    from bindkit import __version__

    options = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    options.pop("handler", None)
    return {
        "script": "benchmarks/vlm_analyses.py",
        "bindkit": __version__,
        "options": options,
        "base_model": model_identity(args.model),
        "seconds": round(time.perf_counter() - started, 1),
    }


# --- overlap ---------------------------------------------------------------------------------


def run_overlap(args: argparse.Namespace) -> dict[str, Any]:
    """NoOverlap / Overlap / Random training vocabularies (seed 000, Table 11 in kind)."""
    from bindkit.demo.tiny_clip import check_disjoint, disjoint_mcqs, triplet_rows
    from bindkit.demo.tiny_vlm import TinyVlmDemoOptions, _train
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.vocab import load_vocabulary

    started = time.perf_counter()
    work = args.out / "overlap"
    full = load_vocabulary("shapes")
    half_a, half_b = split_vocabulary(full)
    saber, control_saber = work / "saber-B", work / "saber-A"
    held_out = draw(saber, half_b, EVAL_SEED, args.eval_per_n, HALF_N_MAX, args.progress)
    check_vocabulary(({"bindings": mcq_bindings(m)} for m in held_out), half_b, "evaluation")
    # the control: the same adapters on half A, NoOverlap's own vocabulary (did it learn at all?)
    control = draw(control_saber, half_a, EVAL_SEED, args.eval_per_n, HALF_N_MAX, args.progress)
    check_vocabulary(({"bindings": mcq_bindings(m)} for m in control), half_a, "control")
    evaluation = [*held_out, *control]
    vocabularies = {"NoOverlap": half_a, "Overlap": half_b, "Random": full}
    drawn = {
        arm: build_saber(
            SaberOptions(seed=TRAIN_SEED, per_n=args.train_per_n, n_max=HALF_N_MAX), vocab
        )
        for arm, vocab in vocabularies.items()
    }
    pools = {arm: disjoint_mcqs(mcqs, evaluation) for arm, mcqs in drawn.items()}
    chosen, count = size_matched(pools, args.train_mcqs, TRAIN_SEED)
    models = {"base": args.model}
    counts: dict[str, Any] = {
        "eval_mcqs": len(held_out),
        "control_mcqs": len(control),
        "train_mcqs_per_arm": count,
    }
    for arm in ARMS:
        rows = triplet_rows(chosen[arm])
        check_disjoint(rows, evaluation)  # no evaluation binding set, in any arm
        check_vocabulary(rows, vocabularies[arm], arm)
        counts[arm] = {
            "drawn": len(drawn[arm]),
            "dropped": len(drawn[arm]) - len(pools[arm]),
            "triplets": len(rows),
        }
        _say(args.progress, f"{arm}: {len(rows)} triplets")
        options = TinyVlmDemoOptions(
            out=str(work / arm),
            steps=args.steps,
            threads=args.threads,
            progress=args.progress,
            model=args.model,
        )
        run = _train(options, work / arm, rows)
        counts[arm]["lines_alpha"] = (run.get("lines") or {}).get("alpha")
        counts[arm]["optimizer_steps"] = run["optimizer_steps"]
        models[arm] = f"{args.model}+adapter={work / arm / 'run' / 'adapter-raw'}"
    results = {label: saber_scores(work, saber, label, spec) for label, spec in models.items()}
    table = {label: r["scores"] for label, r in results.items()}
    checks = {
        label: saber_scores(work, control_saber, f"{label} on A", spec)
        for label, spec in models.items()
    }
    control_table = {label: r["scores"] for label, r in checks.items()}
    record = {
        "table": table,
        "control": control_table,
        "counts": counts,
        "vocabulary": {
            half.source: {
                "attributes": [a.name for a in half.attributes],
                "objects": list(half.objects),
                "sha256": half.sha256,
            }
            for half in (half_a, half_b)
        },
        "scores": {"B": results, "A": checks},
        "provenance": provenance(args, started),
    }
    markdown = [
        f"# NoOverlap vs Overlap vs Random training vocabulary: {args.model}",
        "",
        "Evaluation on half B (unseen by NoOverlap):",
        "",
        *table_md(table),
        "",
        "Control, the same adapters on half A (NoOverlap's own vocabulary, unseen by Overlap):",
        "",
        *table_md(control_table),
        "",
        f"- evaluation: SABER-shapes seed {EVAL_SEED} drawn from half B only "
        f"({len(half_b.attributes)} attributes, {len(half_b.objects)} objects), "
        f"{len(held_out)} MCQs, N = 2..{HALF_N_MAX}; the control the same from half A "
        f"({len(control)} MCQs); MCQ accuracy in % (chance 25).",
        f"- training: {count} MCQs × 3 = {3 * count} triplets per arm (size-matched), drawn "
        f"with seed {TRAIN_SEED} from half A (NoOverlap), half B (Overlap) or the whole "
        "vocabulary (Random); MCQs holding a binding set of either evaluation set dropped; the "
        "demo's recipe in every arm, its distillation of single-pair captions of the whole "
        f'vocabulary ("A red cube.", nothing to bind) included; {args.steps} steps, raw adapters.',
        f"- half A: {', '.join(a.name for a in half_a.attributes)}; {', '.join(half_a.objects)}.",
        f"- half B: {', '.join(a.name for a in half_b.attributes)}; {', '.join(half_b.objects)}.",
    ]
    write_outputs(work, "overlap", record, markdown)
    return record


# --- gap -------------------------------------------------------------------------------------


def gap_specs(model: str, adapter: Path | None) -> dict[str, str]:
    """``native``: the model's own spec (its family's prompt format); ``mllm``: the generic
    ``mllm`` family on the same folder and options, whose prompt layouts
    ``analyze_modality_gap`` compares."""
    folder, options, base_adapter = checkpoint_folder(model)
    if base_adapter:
        raise BindkitError(f"--model {model}: give the adapter with --adapter, not in the spec")
    extra = "".join(f"+{k}={v}" for k, v in options.items())
    tail = f"+adapter={adapter}" if adapter else ""
    return {"native": f"{model}{tail}", "mllm": f"mllm:{folder}{extra}{tail}"}


def run_gap(args: argparse.Namespace) -> dict[str, Any]:
    """Modality gap and alignment per prompt layout (seed 002, Table I in kind)."""
    from bindkit._io import atomic_write_bytes, jsonl_bytes, sha256_file
    from bindkit.analysis.modality_gap import analyze_modality_gap

    started = time.perf_counter()
    work = args.out / "gap"
    adapters: dict[str, Path | None] = {"base": None}
    for adapter in args.adapter:
        if not (adapter / "adapter_config.json").is_file():
            raise BindkitError(f"--adapter {adapter}: no adapter_config.json; give a LoRA folder")
        if adapter.name in adapters:
            raise BindkitError(
                f"--adapter {adapter}: a second adapter named {adapter.name!r} (rows are labelled "
                "by folder name); copy or link one under another name"
            )
        adapters[adapter.name] = adapter
    specs = {label: gap_specs(args.model, adapter) for label, adapter in adapters.items()}
    saber, mcqs = eval_set(args.out, args.eval_per_n, args.progress)
    pairs = work / "pairs.jsonl"
    queries = spread([m.query for m in mcqs], args.pairs)
    rows = [{"image": str((saber / q.image).resolve()), "caption": q.text} for q in queries]
    atomic_write_bytes(pairs, jsonl_bytes(rows))
    layouts: dict[str, dict[str, dict[str, Any]]] = {}
    scores: dict[str, dict[str, dict[str, Any]]] = {}
    for label, adapter in adapters.items():
        layouts[label], scores[label] = {}, {}
        files = args.model + (f"+adapter={adapter}" if adapter else "")
        for kind, spec in specs[label].items():
            identity = {**model_identity(files), "spec": spec}
            identity["pairs"] = sha256_file(pairs)

            def compute(spec: str = spec, folder: Path = work / label / kind) -> Any:
                return analyze_modality_gap(spec, pairs, folder, cache=False)["layouts"]

            found = cached(work / label / f"{kind}.json", identity, compute)
            for layout, result in found.items():
                name = NATIVE if kind == "native" else f"mllm {layout}"
                layouts[label][name] = result
                if args.scores:
                    row = f"{label} · {name}"
                    found_scores = saber_scores(work, saber, row, result["spec"], files)
                    scores[label][name] = found_scores
    record = {
        "layouts": layouts,
        "scores": scores,
        "pairs": {"file": str(pairs), "count": len(rows), "saber": str(saber)},
        "provenance": provenance(args, started),
    }
    names = list(next(iter(layouts.values())))
    markdown = [
        f"# Modality gap and alignment per prompt format: {args.model}",
        "",
        "| prompt | " + " | ".join(f"{m} gap | {m} align" for m in layouts) + " |",
        "|---" + "|---:|---:" * len(layouts) + "|",
    ]
    for name in names:
        cells = [
            f"{layouts[m][name]['modality_gap']:.3f} | {layouts[m][name]['alignment']:.3f}"
            for m in layouts
        ]
        markdown.append(f"| {name} | " + " | ".join(cells) + " |")
    markdown += [
        "",
        f"- pairs: the query scene and caption of {len(rows)} of the {len(mcqs)} MCQs of "
        f"SABER-shapes seed {EVAL_SEED} ({args.eval_per_n} per N, evenly spaced over N); "
        "images embedded as documents, captions "
        "as queries, no instruction.",
        "- gap: distance between the image and caption centroids; align: mean cosine of matched "
        "pairs (`bindkit analyze modality-gap`).",
    ]
    if args.scores:
        table = {
            f"{label} · {name}": found["scores"]
            for label, by_name in scores.items()
            for name, found in by_name.items()
        }
        markdown += [
            "",
            f"SABER MCQ accuracy per prompt format (the {len(mcqs)} MCQs of the same set, %):",
            "",
            *table_md(table),
        ]
    write_outputs(work, "gap", record, markdown)
    return record


# --- saha ------------------------------------------------------------------------------------


def pool_rows(saber: Path, mcqs: Sequence[Any]) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Caption → image rows of every item of ``mcqs`` (the ``bindkit mine`` input; the label is
    the binding set) and each image's binding set (the ground truth of the FN count)."""
    rows, truth = [], {}
    for mcq in mcqs:
        for item in mcq.items:
            image = str((saber / item.image).resolve())
            truth[image] = binding_key(item.bindings)
            rows.append({"query": item.text, "positive": image, "label": truth[image]})
    return rows, truth


def run_saha(args: argparse.Namespace) -> dict[str, Any]:
    """SaHa clusters, their false negatives, and cluster InfoNCE (seed 002, Algorithm 1)."""
    from bindkit._io import atomic_write_bytes, jsonl_bytes, sha256_file
    from bindkit.demo.tiny_clip import disjoint_mcqs
    from bindkit.embed.registry import load_embedder
    from bindkit.mining.pipeline import MineConfig, mine
    from bindkit.saber.vocab import load_vocabulary
    from bindkit.train.config import ClusterTrainConfig
    from bindkit.train.trainer import train_clusters

    started = time.perf_counter()
    work = args.out / "saha"
    saber, held_out = eval_set(args.out, args.eval_per_n, args.progress)
    pool_saber = work / "pool-saber"
    drawn = draw(pool_saber, load_vocabulary("shapes"), POOL_SEED, args.pool_per_n, 10, False)
    kept = disjoint_mcqs(drawn, held_out)
    rows, truth = pool_rows(pool_saber, kept)
    data = work / "pairs.jsonl"
    atomic_write_bytes(data, jsonl_bytes(rows))
    embedder = None
    mined: dict[str, Any] = {}
    for label, (method, label_filter) in MINERS.items():
        config = MineConfig(method=method, k=args.k, label_filter=label_filter)
        clusters = work / f"clusters-{method}{'-filtered' if label_filter else ''}.jsonl"
        identity = {**model_identity(args.model), "pairs": sha256_file(data)}
        identity["config"] = dataclasses.asdict(config)
        record = clusters.with_suffix(".record.json")
        if not clusters.is_file():
            record.unlink(missing_ok=True)

        def compute(config: MineConfig = config, clusters: Path = clusters) -> Any:
            nonlocal embedder
            embedder = embedder or load_embedder(args.model, cache=False, progress=False)
            return mine(embedder, data, clusters, config, log=None)["total"]

        diagnostics = cached(record, identity, compute)
        lines = clusters.read_text("utf-8").splitlines()
        wrong, negatives = false_negatives([json.loads(line) for line in lines], truth)
        mined[label] = {
            "clusters_file": str(clusters),
            "false_negatives": wrong,
            "negatives": negatives,
            "false_negative_rate": wrong / negatives if negatives else None,
            "diagnostics": diagnostics,
        }
    models = {"base": args.model}
    runs = {}
    for label, miner in TRAINED.items():
        run_dir = work / f"run-{slug(miner)}"
        train_config = ClusterTrainConfig(
            model=args.model,
            clusters=mined[miner]["clusters_file"],
            out=str(run_dir),
            clusters_per_step=args.clusters_per_step,
            lr=args.lr,
            lora_r=8,
            lora_alpha=8.0,
            warmup_steps=0,
            schedule="constant",
            max_steps=args.steps,
            epochs=1000,
            # the model's own resolution and token limit, as these analyses were run (not seed
            # 002's 448 x 448 training images and 1024 tokens, the train clusters defaults)
            image_size=0,
            max_length=None,
            lines=False,
            model_dropout=False,
            save_every=100,
            seed=args.seed,
            progress=args.progress,
        )
        run = train_clusters(dataclasses.replace(train_config, overwrite=True), reuse=True)
        runs[label] = {"optimizer_steps": run["optimizer_steps"], "out": str(run_dir)}
        models[label] = f"{args.model}+adapter={run_dir / 'adapter-raw'}"
    results = {label: saber_scores(work, saber, label, spec) for label, spec in models.items()}
    table = {label: r["scores"] for label, r in results.items()}
    record = {
        "mining": mined,
        "table": table,
        "training": runs,
        "counts": {"pool_mcqs": len(kept), "dropped": len(drawn) - len(kept), "pairs": len(rows)},
        "scores": results,
        "provenance": provenance(args, started),
    }
    markdown = [
        f"# SaHa mining and cluster InfoNCE: {args.model}",
        "",
        "| miner | clusters | negatives | false negatives | FN rate | high-risk rate | hardness "
        "| owner similarity |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for label, m in mined.items():
        d = m["diagnostics"]
        risk = d["high_risk_rate"]
        markdown.append(
            f"| {label} | {d['clusters']} | {m['negatives']} | {m['false_negatives']} | "
            f"{100 * (m['false_negative_rate'] or 0):.2f} % | "
            f"{'–' if risk is None else f'{100 * risk:.1f} %'} | {d['mean_hardness']:.3f} | "
            f"{d['mean_owner_similarity']:.3f} |"
        )
    markdown += ["", *table_md(table), ""]
    markdown += [
        f"- pool: {len(rows)} caption → image pairs, every item of {len(kept)} MCQs of "
        f"SABER-shapes seed {POOL_SEED} ({args.pool_per_n} per N; {len(drawn) - len(kept)} MCQs "
        "holding an evaluation binding set dropped), rendered procedurally; k = "
        f"{args.k} negatives per cluster, mined with the base model.",
        "- false negative: a negative pair whose image shows the anchor's binding set (read from "
        "the SABER file); high-risk: owner caption cosine ≥ 0.90 with the anchor; hardness: mean "
        "cosine of the anchor caption and the negative image; owner similarity: mean cosine of "
        "the anchor caption and the negative's caption (seed 002, Fig. 5).",
        f"- training: cluster InfoNCE (τ 0.02) through `bindkit train clusters`' trainer, LoRA r 8 "
        f"on the language model, lr {args.lr}, {args.clusters_per_step} clusters per step, "
        f"{args.steps} steps, seed {args.seed}; evaluation: the demo's SABER-shapes seed "
        f"{EVAL_SEED} set "
        f"({len(held_out)} MCQs), MCQ accuracy in %.",
    ]
    write_outputs(work, "saha", record, markdown)
    return record


# --- command line ----------------------------------------------------------------------------


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value}: must be at least 1")
    return value


def _rate(text: str) -> float:
    value = float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"{value}: a learning rate in (0, 1), e.g. 1e-3")
    return value


def _even(text: str) -> int:
    value = _positive(text)
    if value % 2:
        raise argparse.ArgumentTypeError(f"{value}: must be even (half independent, half nested)")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    def common(
        name: str, handler: Callable[[argparse.Namespace], Any], help: str, eval_per_n: int = 20
    ) -> Any:
        sub = commands.add_parser(
            name,
            help=help,
            description=help,
            formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        )
        sub.add_argument("--model", default=MODEL, help="e.g. builtin:tiny-vlm+weights=DIR")
        sub.add_argument("--out", type=Path, required=True, help="output folder (shared)")
        sub.add_argument("--threads", type=_positive, default=1, help="torch threads")
        sub.add_argument(
            "--eval-per-n", type=_even, default=eval_per_n, help="evaluation MCQs per N"
        )
        sub.set_defaults(handler=handler, progress=True)  # before -q, whose default is hidden
        sub.add_argument(
            "-q",
            "--quiet",
            dest="progress",
            action="store_false",
            default=argparse.SUPPRESS,
            help="no progress output",
        )
        return sub

    overlap = common("overlap", run_overlap, "NoOverlap vs Overlap vs Random vocabulary", 40)
    overlap.add_argument("--train-per-n", type=_even, default=150, help="MCQs drawn per N, per arm")
    overlap.add_argument("--train-mcqs", type=_positive, default=800, help="MCQs per arm, at most")
    overlap.add_argument("--steps", type=_positive, default=300, help="optimizer steps per arm")
    gap = common("gap", run_gap, "modality gap per prompt layout, base and adapters")
    gap.add_argument(
        "--adapter", type=Path, action="append", default=[], help="a LoRA folder (repeatable)"
    )
    gap.add_argument("--pairs", type=_positive, default=180, help="image-caption pairs, at most")
    gap.add_argument(
        "--no-scores",
        dest="scores",
        action="store_false",
        help="skip SABER tt/ti/it/ii per prompt format (the gap alone)",
    )
    saha = common("saha", run_saha, "SaHa clusters, FN rate, cluster InfoNCE vs random batches")
    saha.add_argument("--pool-per-n", type=_even, default=40, help="pool MCQs drawn per N")
    saha.add_argument("--k", type=_positive, default=7, help="negatives per cluster")
    saha.add_argument("--steps", type=_positive, default=200, help="optimizer steps per run")
    saha.add_argument("--clusters-per-step", type=_positive, default=4, help="clusters per step")
    saha.add_argument("--lr", type=_rate, default=1e-3, help="LoRA learning rate")
    saha.add_argument("--seed", type=int, default=0, help="LoRA init and cluster order")
    return parser


#: upper bounds of the size options (a typo never starts a day of CPU work)
LIMITS = {
    "threads": 1024,
    "eval_per_n": 1000,
    "train_per_n": 10_000,
    "train_mcqs": 1_000_000,
    "steps": 1_000_000,
    "pairs": 100_000,
    "pool_per_n": 10_000,
    "k": 1000,
    "clusters_per_step": 1000,
}


def check_arguments(args: argparse.Namespace) -> None:
    """Every argument before any work, one line naming the first bad one: the sizes' upper
    bounds (argparse checked the lower ones), --seed, --model and its checkpoint folder, each
    --adapter, and that --out can be a folder."""
    from bindkit._checks import check_range
    from bindkit._io import check_can_create
    from bindkit.adapters.out import CONFIG

    for name, high in LIMITS.items():
        if hasattr(args, name):
            check_range("--" + name.replace("_", "-"), getattr(args, name), 1, high)
    if hasattr(args, "seed"):
        check_range("--seed", args.seed, 0, 2**31 - 1)
    folder, _options, adapter = checkpoint_folder(args.model)
    if not folder.is_dir():
        raise BindkitError(f"--model {args.model}: {folder} is not a folder")
    for path in [*([Path(adapter)] if adapter else []), *getattr(args, "adapter", [])]:
        if not (Path(path) / CONFIG).is_file():
            raise BindkitError(
                f"--adapter {path}: not a LoRA adapter folder (no {CONFIG}); give the folder "
                "`bindkit train` or the demo wrote"
            )
    if args.out.exists() and not args.out.is_dir():
        raise BindkitError(f"--out {args.out}: is a file; give a folder")
    check_can_create(args.out)


def main(argv: Sequence[str] | None = None) -> int:
    from bindkit._lock import directory_lock
    from bindkit.recipes.run import pinned

    args = build_parser().parse_args(argv)
    try:
        check_arguments(args)  # a wrong argument fails before any work
        work = args.out / args.command
        work.mkdir(parents=True, exist_ok=True)
        with directory_lock(work, f"vlm_analyses {args.command}"), pinned(args.threads):
            args.handler(args)
    except BindkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
