"""A recipe's data: ``bindkit synth`` examples and split set → the training mix → preservation.

:func:`build_data` writes, in ``DATA`` (a synth run folder): ``examples.jsonl`` (template
backend), the standard split set (``train/val/test.jsonl``, ``splits.json``), the training
triplets ``train-<mix>.jsonl`` (the train split's examples after NoOverlap against the SABER
vocabulary, as :func:`bindkit.synth.mixes.training_triplets`), ``val-recipe.jsonl`` and
``test-recipe.jsonl`` (the first rows of the split's val and test files) and one
``preserve-<set>.jsonl`` per preservation set the runs use. The training file is named so that
``synth.validate.split_name`` reads it as ``train``: every row must pass
:func:`~bindkit.synth.validate.validate_triplet` and the split set's leak check
(:func:`~bindkit.synth.validate.check_split_set`), else the recipe refuses with one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bindkit.errors import BindkitError
from bindkit.recipes.recipe import Recipe


@dataclass(frozen=True)
class RecipeData:
    """The files :func:`build_data` wrote, and their row counts."""

    folder: Path
    train: Path
    val: Path
    test: Path
    preserve: dict[str, Path]  # preservation set → its sentences file
    counts: dict[str, int]  # train/val/test triplets
    sentences: dict[str, int]  # preservation set → sentences


def train_file(recipe: Recipe) -> str:
    return f"train-{recipe.data.mix}.jsonl"


def micro_batches(recipe: Recipe, rows: int) -> int:
    """The micro-batches a run of ``rows`` training triplets takes (``max_steps`` caps it)."""
    from bindkit.train.config import TrainConfig

    config = TrainConfig(model=recipe.model, train=__file__, out="out", **recipe.train)
    per_epoch = -(-rows // config.batch_size)
    total = per_epoch * config.epochs
    if config.max_steps is not None:
        total = min(total, config.max_steps * config.grad_accum)
    return total


def build_data(recipe: Recipe, folder: Path, *, progress: bool = True) -> RecipeData:
    """Write the recipe's data into ``folder`` (a rerun regenerates the same bytes)."""
    from bindkit._io import atomic_write_bytes, atomic_write_text, jsonl_bytes
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.mixes import training_triplets
    from bindkit.synth.preservation import preservation_sentences
    from bindkit.synth.splits import no_overlap, read_examples, saber_words, split, write_splits

    spec = recipe.data
    generate(folder, spec.examples, TemplateBackend(spec.seed), seed=spec.seed, progress=progress)
    # the standard split set (hashed, as `bindkit synth split` writes it): val and test come
    # from it; the recipe's own files are named beside it so the split checks see them
    write_splits(folder, seed=spec.seed, exclude_vocab=spec.exclude_vocab)
    examples = read_examples(folder / "examples.jsonl")
    vocab = None if spec.exclude_vocab == "builtin" else spec.exclude_vocab
    train = no_overlap(split(examples, spec.seed)["train"], saber_words(vocab))
    rows = training_triplets(train, spec.seed, spec.mix)
    if spec.max_triplets is not None:
        rows = rows[: spec.max_triplets]
    if not rows:
        raise BindkitError(
            f"data.examples {spec.examples}: no training triplet survives NoOverlap; give more"
        )
    train_path = folder / train_file(recipe)
    atomic_write_bytes(train_path, jsonl_bytes(rows))
    sizes = {"val": spec.val_triplets, "test": spec.test_triplets}
    for name, size in sizes.items():
        lines = (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:size]
        atomic_write_text(folder / f"{name}-recipe.jsonl", "\n".join(lines) + "\n")
        sizes[name] = len(lines)
    check_training_rows(train_path)
    preserve_batch = int(recipe.train.get("preserve_batch", 32))
    wanted = micro_batches(recipe, len(rows)) * preserve_batch  # one batch per micro-batch
    files, counts = {}, {}
    for kind in dict.fromkeys(r.preservation for r in recipe.runs if r.preserved):
        sentences = preservation_sentences(train, kind, spec.seed)[:wanted]
        files[kind] = folder / f"preserve-{kind}.jsonl"
        atomic_write_bytes(files[kind], jsonl_bytes({"text": t} for t in sentences))
        counts[kind] = len(sentences)
    return RecipeData(
        folder=folder,
        train=train_path,
        val=folder / "val-recipe.jsonl",
        test=folder / "test-recipe.jsonl",
        preserve=files,
        counts={"train": len(rows), **sizes},
        sentences=counts,
    )


def check_training_rows(path: Path) -> None:
    """Refuse (one line) the recipe's training file unless ``bindkit synth validate`` accepts
    every row of it (as the ``train`` split) and its split set passes the leak check."""
    from bindkit.synth.validate import require_split_set

    require_split_set(path)
