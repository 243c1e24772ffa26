"""What ``benchmarks/vlm_analyses.py``'s three analyses share: the constants, the pure parts
(the shapes vocabulary split in two halves, size matching, binding keys, false negatives), model
specs and their cached results, the evaluation set and the output files.
"""

from __future__ import annotations

import argparse
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


def say(progress: bool, text: str) -> None:
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
    from bindkit.support import atomic_write_text

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
    from bindkit.demo.tiny_clip import evaluate_pairings
    from bindkit.support import sha256_file

    def compute() -> dict[str, Any]:
        table, provenance = evaluate_pairings(work, saber, {label: spec})
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
    from bindkit.saber.render.renderer import render_saber

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
    from bindkit.support import atomic_write_text

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
