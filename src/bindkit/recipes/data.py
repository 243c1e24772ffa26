"""A recipe's data: ``bindkit synth`` examples and split set → the training mix → preservation.

:func:`build_data` writes, in ``DATA`` (a synth run folder): ``examples.jsonl`` (template
backend), the standard split set (``train/val/test.jsonl``, ``splits.json``), the training
triplets ``train-<mix>.jsonl`` (:func:`bindkit.synth.mixes.write_mix`, ``bindkit synth mix``:
the train split's examples after NoOverlap against the SABER vocabulary), ``val-recipe.jsonl``
and ``test-recipe.jsonl`` (the first rows of the split's val and test files) and one
``preserve-<set>.jsonl`` per preservation set the runs use
(:func:`bindkit.synth.mixes.write_preservation`). The training file is a ``train`` file of the
run's split set: every row must pass its kind's rule and the split set's leak check
(:func:`~bindkit.synth.splitset.check_split_set`) before it is written, else the recipe refuses
with one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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


def micro_batches(recipe: Recipe, rows: int) -> int:
    """The micro-batches a run of ``rows`` training triplets takes (``max_steps`` caps it)."""
    from bindkit.train.config import TrainConfig
    from bindkit.train.plan import epoch_micro_batches

    config = TrainConfig(model=recipe.model, train=__file__, out="out", **recipe.train)
    per_epoch = -(-rows // config.batch_size)
    total = epoch_micro_batches(config.epochs, per_epoch)
    if config.max_steps is not None:
        total = min(total, config.max_steps * config.grad_accum)
    return total


def build_data(recipe: Recipe, folder: Path, *, progress: bool = True) -> RecipeData:
    """Write the recipe's data into ``folder`` (a rerun regenerates the same bytes)."""
    from bindkit._io import atomic_write_text
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate
    from bindkit.synth.mixes import write_mix, write_preservation
    from bindkit.synth.splits import write_splits

    spec = recipe.data
    generate(folder, spec.examples, TemplateBackend(spec.seed), seed=spec.seed, progress=progress)
    # the standard split set (hashed, as `bindkit synth split` writes it): val and test come
    # from it; the recipe's own files are named beside it so the split checks see them
    write_splits(folder, seed=spec.seed, exclude_vocab=spec.exclude_vocab)
    # `bindkit synth mix`: every row checked by its kind's rule and against the split set's
    # val/test/held-out texts before anything is written (one line, else)
    train = write_mix(
        folder,
        spec.mix,
        seed=spec.seed,
        exclude_vocab=spec.exclude_vocab,
        max_rows=spec.max_triplets,
        overwrite=True,
        exclude_data=reported_data(recipe),
    )
    rows = _lines(train)
    sizes = {"val": spec.val_triplets, "test": spec.test_triplets}
    for name, size in sizes.items():
        lines = (folder / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()[:size]
        atomic_write_text(folder / f"{name}-recipe.jsonl", "\n".join(lines) + "\n")
        sizes[name] = len(lines)
    preserve_batch = int(recipe.train.get("preserve_batch", 32))
    wanted = micro_batches(recipe, rows) * preserve_batch  # one batch per micro-batch
    files = {
        kind: write_preservation(
            folder,
            kind,
            seed=spec.seed,
            exclude_vocab=spec.exclude_vocab,
            max_rows=wanted,
            overwrite=True,
        )
        for kind in dict.fromkeys(r.preservation for r in recipe.runs if r.preserved)
    }
    return RecipeData(
        folder=folder,
        train=train,
        val=folder / "val-recipe.jsonl",
        test=folder / "test-recipe.jsonl",
        preserve=files,
        counts={"train": rows, **sizes},
        sentences={kind: _lines(path) for kind, path in files.items()},
    )


def reported_data(recipe: Recipe) -> list[str]:
    """The panel's own data files and folders (not the recipe's ``{test}``/``{saber}``): the
    sets a role mix's words must not occur in (:func:`bindkit.synth.mixes.check_role_words`)."""
    paths = [e.data for e in recipe.panel if e.data is not None and not e.data.startswith("{")]
    return list(dict.fromkeys(paths))


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())
