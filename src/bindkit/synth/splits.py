"""Hold out the deferred_bind types, split the rest 80/10/10, and write triplets.

Each example yields two triplets, one per hard negative:
``{"query", "positive", "negative", "type", "negative_kind"}``.

The split is made once, on the full run (the order is fixed by example id and the seed); the
paper's ablations then change the **training** split only, so every variant shares the full
run's val, test and held-out files byte for byte:

- ``no_overlap/``: train examples none of whose captions (query, positive, negatives: every
  word, filler and context included) contains an item of a SABER vocabulary;
- ``random/``: a uniform sample of the full train split, the same size;
- ``overlap_only/``: train examples that do share a word, the same size;
- ``mixed_lengths/``: every train example in three formats (short query / long caption, short /
  short, long / short).

The files of one call form a set: they are staged in a temporary folder, ``splits.json`` (which
lists every file's hash) is removed, the files are renamed into place, and ``splits.json`` is
written last. A reader that finds no ``splits.json``, or a hash that does not match, knows the
set is incomplete (:func:`verify_splits`).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text, jsonl_bytes, sha256_bytes, sha256_file
from bindkit.errors import BindkitError, DataFormatError
from bindkit.saber.io import iter_lines
from bindkit.synth.controls import controls
from bindkit.synth.example import Example, Pair
from bindkit.synth.text import render_query

SPLITS_JSON = "splits.json"
FORMAT = "bindkit-synth-splits"
SUBSETS = ("no_overlap", "random", "overlap_only")
MIXED = "mixed_lengths"
VARIANTS = (*SUBSETS, MIXED)
FORMATS = ("short-long", "short-short", "long-short")


def read_examples(path: str | Path) -> list[Example]:
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; run `bindkit synth generate` first")
    return [Example.from_json(obj, f"{path}:{n}") for n, obj in iter_lines(path)]


def check_exclude_vocab(value: str | Path) -> None:
    """Refuse an --exclude-vocab that is neither ``builtin`` nor a directory."""
    if str(value) != "builtin" and not Path(value).is_dir():
        raise BindkitError(
            f"--exclude-vocab {value}: not a directory; give a SABER vocabulary directory or "
            "'builtin'"
        )


def saber_words(vocab_dir: str | Path | None) -> set[str]:
    """Every vocabulary item of a SABER vocabulary (None: the packaged one): its attribute names
    and object names, a two-word object as one item ("teddy bear", not "teddy" and "bear")."""
    from bindkit.saber.vocab import load_vocabulary

    vocab = load_vocabulary(vocab_dir)
    return {a.name for a in vocab.attributes} | set(vocab.objects)


MAX_ITEM_WORDS = 3  # the longest vocabulary item the overlap filter matches (in words)


def example_words(ex: Example) -> set[str]:
    """Every word, and every run of two or three words, of every caption of an example: the
    query, the positive and both negatives, filler and context included (what a vocabulary item
    is looked up in; see :func:`overlaps`)."""
    from bindkit.synth.text import words

    out: set[str] = set()
    for text in (ex.query, ex.positive, *ex.negatives.values()):
        tokens = words(text)
        for n in range(1, MAX_ITEM_WORDS + 1):
            out.update(" ".join(tokens[i : i + n]) for i in range(len(tokens) - n + 1))
    return out


def overlaps(ex: Example, items: set[str]) -> bool:
    """Whether any caption of ``ex`` contains a vocabulary item (a word or a run of words)."""
    return not example_words(ex).isdisjoint(items)


def no_overlap(examples: Iterable[Example], words: set[str]) -> list[Example]:
    """The NoOverlap filter: drop examples whose captions contain any item of ``words``."""
    return [ex for ex in examples if not overlaps(ex, words)]


def triplets(examples: Iterable[Example]) -> list[dict[str, Any]]:
    return [
        {
            "query": ex.query,
            "positive": ex.positive,
            "negative": ex.negatives[kind],
            "type": ex.type,
            "negative_kind": kind,
        }
        for ex in examples
        for kind in ("attribute", "object")
    ]


def _render(pairs: Iterable[Pair], order: list[str]) -> str:
    groups: dict[str, list[str]] = {o: [] for o in order}
    for attribute, obj in pairs:
        groups[obj].append(attribute)
    return render_query([(attributes, obj) for obj, attributes in groups.items()])


def short_forms(ex: Example) -> tuple[str, dict[str, str]]:
    """A short positive and short negatives: the bindings as a conjunction, objects in the
    reverse of the query's order (so the short positive is never the query verbatim).

    Each short negative moves the same words as its long negative (read from the text: the word
    each queried attribute or object became), so it keeps the short positive's word order and
    changes one word per rebound object; the two negatives are never the same string.

    >>> # "a blue ball and a red cube": attribute "a red ball and a blue cube",
    >>> #                               object    "a blue cube and a red ball"
    """
    from bindkit.synth.text import permute_words, words

    query = f" {ex.query} "
    order = sorted(ex.objects, key=lambda o: query.find(f" {o} "), reverse=True)
    positive = _render(ex.bindings, order)
    vocabulary = ex.vocabulary()
    long_positive = words(ex.positive)
    negatives = {}
    for kind in ("attribute", "object"):
        long_negative = words(ex.negatives[kind])
        if len(long_negative) != len(long_positive):
            raise DataFormatError(f"{ex.id}: the {kind} negative is not a permutation; validate it")
        mapping = {
            p: n for p, n in zip(long_positive, long_negative, strict=True) if p in vocabulary
        }
        negatives[kind] = permute_words(positive, mapping)
    return positive, negatives


def mixed_length_triplets(examples: Iterable[Example]) -> list[dict[str, Any]]:
    """The MixedLengths training rows: each example in every format of :data:`FORMATS`."""
    rows = []
    for ex in examples:
        short, short_negatives = short_forms(ex)
        forms = {
            "short-long": (ex.query, ex.positive, ex.negatives),
            "short-short": (ex.query, short, short_negatives),
            "long-short": (ex.positive, short, short_negatives),
        }
        for name in FORMATS:
            query, positive, negatives = forms[name]
            rows += [
                {
                    "query": query,
                    "positive": positive,
                    "negative": negatives[kind],
                    "type": ex.type,
                    "negative_kind": kind,
                    "format": name,
                }
                for kind in ("attribute", "object")
            ]
    return rows


def split(examples: list[Example], seed: int = 0) -> dict[str, list[Example]]:
    """train/val/test (80/10/10 of the non-held-out types) plus one held-out set per held-out
    type, deterministic for a seed."""
    cfg = controls()["splits"]
    heldout = {t: [ex for ex in examples if ex.type == t] for t in cfg["heldout"]}
    rest = sorted((ex for ex in examples if ex.type not in heldout), key=lambda ex: ex.id)
    random.Random(f"{seed}/split").shuffle(rest)
    n_train = round(cfg["train"] * len(rest))
    n_val = round(cfg["val"] * len(rest))
    out = {
        "train": rest[:n_train],
        "val": rest[n_train : n_train + n_val],
        "test": rest[n_train + n_val :],
    }
    out.update({f"heldout_{t}": v for t, v in heldout.items()})
    return out


def pools(train: list[Example], words: set[str]) -> dict[str, list[Example]]:
    """The train examples without (``no_overlap``) and with (``overlap_only``) a vocabulary item
    in any caption, in the train split's order."""
    marks = [overlaps(ex, words) for ex in train]
    return {
        "no_overlap": [ex for ex, hit in zip(train, marks, strict=True) if not hit],
        "overlap_only": [ex for ex, hit in zip(train, marks, strict=True) if hit],
    }


def subsets(train: list[Example], words: set[str], seed: int) -> dict[str, list[Example]]:
    """NoOverlap, Random and OverlapOnly: size-matched subsets of the full run's train split.

    The size is that of the smaller pool (examples without, or with, a SABER item in any
    caption), so all three are equally large; rows keep the train split's order.
    """
    found = pools(train, words)
    by_name = {"no_overlap": found["no_overlap"], "random": train}
    by_name["overlap_only"] = found["overlap_only"]
    size = min(len(found["no_overlap"]), len(found["overlap_only"]))
    out = {}
    for name, pool in by_name.items():
        keep = sorted(random.Random(f"{seed}/subset/{name}").sample(range(len(pool)), size))
        out[name] = [pool[i] for i in keep]
    return out


def vocab_identity(value: str | Path, words: set[str]) -> dict[str, Any]:
    return {
        "source": "builtin" if str(value) == "builtin" else str(Path(value).resolve()),
        "words": len(words),
        "sha256": sha256_bytes("\n".join(sorted(words)).encode()),
    }


def split_files(
    examples: list[Example],
    *,
    seed: int,
    words: set[str] | None = None,
    mixed_lengths: bool = False,
) -> tuple[dict[str, bytes], dict[str, int]]:
    """Every file of a split set (relative path → bytes) and the size of each subset."""
    parts = split(examples, seed)
    files = {f"{name}.jsonl": jsonl_bytes(triplets(group)) for name, group in parts.items()}
    shared = {name: data for name, data in files.items() if name != "train.jsonl"}
    sizes = {"train": len(parts["train"])}
    variants: dict[str, bytes] = {}
    if words is not None:
        for name, group in subsets(parts["train"], words, seed).items():
            variants[name] = jsonl_bytes(triplets(group))
            sizes[name] = len(group)
        for name, group in pools(parts["train"], words).items():
            sizes[f"{name}_pool"] = len(group)
    if mixed_lengths:
        variants[MIXED] = jsonl_bytes(mixed_length_triplets(parts["train"]))
        sizes[MIXED] = len(parts["train"])
    for variant, train in variants.items():
        files[f"{variant}/train.jsonl"] = train
        files.update({f"{variant}/{name}": data for name, data in shared.items()})
    return files, sizes


def write_splits(
    directory: str | Path,
    *,
    seed: int | None = None,
    exclude_vocab: str | Path | None = None,
    mixed_lengths: bool = False,
    drop_variants: bool = False,
    lock: bool = True,
) -> dict[str, int]:
    """Read ``DIR/examples.jsonl`` and write the split set (see the module docstring).

    Args:
        directory: a synth run.
        seed: the split's seed (default: the run's seed from ``manifest.json``, else 0).
        exclude_vocab: a SABER vocabulary directory or ``"builtin"``: also write the
            ``no_overlap``, ``random`` and ``overlap_only`` subsets.
        mixed_lengths: also write ``mixed_lengths/``.
        drop_variants: delete variant folders of an earlier split that this one does not
            write (:func:`stale_variants`); without it such folders are an error.
        lock: hold the directory's lock (False when the caller already holds it).

    Returns:
        The number of triplets per file (relative path without ``.jsonl``).

    Raises:
        BindkitError: an earlier split's variants would be deleted and ``drop_variants`` is off.
    """
    from contextlib import nullcontext

    from bindkit._lock import directory_lock

    directory = Path(directory)
    if exclude_vocab is not None:
        check_exclude_vocab(exclude_vocab)
    path = directory / "examples.jsonl"
    if not path.is_file():
        raise DataFormatError(f"{path}: not found; run `bindkit synth generate` first")
    with directory_lock(directory, "bindkit synth split") if lock else nullcontext():
        if not drop_variants:
            check_variants_kept(directory, exclude_vocab, mixed_lengths)
        return _write_set(directory, seed, exclude_vocab, mixed_lengths)


def stale_variants(
    directory: Path, exclude_vocab: str | Path | None, mixed_lengths: bool
) -> list[str]:
    """Variant folders in ``directory`` that a split with these options would delete."""
    wanted = (*(SUBSETS if exclude_vocab is not None else ()), *((MIXED,) if mixed_lengths else ()))
    return [v for v in VARIANTS if v not in wanted and (directory / v).is_dir()]


def check_variants_kept(
    directory: Path, exclude_vocab: str | Path | None, mixed_lengths: bool
) -> None:
    """Refuse, before any work, a re-split that would silently delete an earlier split's
    ablation variants (``no_overlap/``, ``random/``, ``overlap_only/``, ``mixed_lengths/``)."""
    stale = stale_variants(directory, exclude_vocab, mixed_lengths)
    if not stale:
        return
    options = []
    if any(v in SUBSETS for v in stale):
        options.append("--exclude-vocab")
    if MIXED in stale:
        options.append("--mixed-lengths")
    folders = ", ".join(f"{v}/" for v in stale)
    raise BindkitError(
        f"{directory}: this split would delete {folders} from an earlier split; pass "
        f"{' and '.join(options)} again to rewrite them, or --drop-variants to delete them"
    )


def _run_seed(directory: Path) -> int:
    from bindkit.synth.rundir import read_manifest

    manifest = read_manifest(directory)
    seed = (manifest or {}).get("identity", {}).get("seed", 0)
    return seed if isinstance(seed, int) else 0


def _write_set(
    directory: Path, seed: int | None, exclude_vocab: str | Path | None, mixed_lengths: bool
) -> dict[str, int]:
    from bindkit import __version__
    from bindkit.synth.rundir import clean_temporary

    clean_temporary(directory)
    seed = _run_seed(directory) if seed is None else seed
    path = directory / "examples.jsonl"
    data = path.read_bytes()
    examples = read_examples(path)
    if not examples:
        raise DataFormatError(f"{path}: holds no examples; run `bindkit synth generate` first")
    words = (
        saber_words(None if str(exclude_vocab) == "builtin" else exclude_vocab)
        if (exclude_vocab is not None)
        else None
    )
    files, sizes = split_files(examples, seed=seed, words=words, mixed_lengths=mixed_lengths)
    options = {"seed": seed, "mixed_lengths": mixed_lengths}
    generation = sha256_bytes(
        json.dumps([sha256_bytes(data), options, sorted(words or [])]).encode()
    )[:16]
    staging = directory / f".splits-{generation}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    for name, content in files.items():
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        (staging / name).write_bytes(content)
        os.chmod(staging / name, 0o644)
    (directory / SPLITS_JSON).unlink(missing_ok=True)  # from here on the set is incomplete
    for variant in VARIANTS:
        if not any(name.startswith(f"{variant}/") for name in files):
            shutil.rmtree(directory / variant, ignore_errors=True)
    for name in files:
        (directory / name).parent.mkdir(exist_ok=True)
        os.replace(staging / name, directory / name)
    summary = {
        "format": FORMAT,
        "generation": generation,
        "bindkit_version": __version__,
        "examples": {
            "file": "examples.jsonl",
            "sha256": sha256_bytes(data),
            "count": len(examples),
        },
        "options": options,
        "exclude_vocab": None if words is None else vocab_identity(exclude_vocab or "", words),
        "examples_per_split": sizes,
        "files": {
            name: {"sha256": sha256_bytes(content), "triplets": content.count(b"\n")}
            for name, content in files.items()
        },
    }
    atomic_write_text(directory / SPLITS_JSON, json.dumps(summary, indent=2) + "\n")
    shutil.rmtree(staging, ignore_errors=True)
    return {
        name.removesuffix(".jsonl"): content.count(b"\n")
        for name, content in files.items()
        if "/" not in name or name.endswith("/train.jsonl")
    }


def verify_splits(directory: str | Path) -> dict[str, Any]:
    """Check that ``DIR``'s split files are one complete set, written from its examples.

    Returns:
        The parsed ``splits.json``.

    Raises:
        DataFormatError: no ``splits.json`` (a split was interrupted or never ran), a file whose
            hash differs from the one recorded, or ``examples.jsonl`` changed since.
    """
    directory = Path(directory)
    rerun = f"rerun `bindkit synth split {directory}`"
    path = directory / SPLITS_JSON
    if not path.is_file():
        raise DataFormatError(
            f"{path}: missing, so the split files are not a complete set; {rerun}"
        )
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
        files = dict(summary["files"])
        examples = str(summary["examples"]["sha256"])
    except (UnicodeDecodeError, ValueError, KeyError, TypeError):
        raise DataFormatError(f"{path}: corrupt; {rerun}") from None
    for name, entry in files.items():
        file = directory / name
        if not file.is_file() or sha256_file(file) != entry.get("sha256"):
            raise DataFormatError(
                f"{file}: not the file {path} records (an interrupted split?); {rerun}"
            )
    if sha256_file(directory / "examples.jsonl") != examples:
        raise DataFormatError(
            f"{directory / 'examples.jsonl'}: changed since the splits were written; {rerun}"
        )
    return dict(summary)
