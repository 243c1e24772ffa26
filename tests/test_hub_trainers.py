"""A synth export goes into sentence-transformers' trainer as it is: no column to drop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

datasets = pytest.importorskip("datasets")
pytest.importorskip("sentence_transformers")

from bindkit.cli import main  # noqa: E402


@pytest.fixture(scope="module")
def synth_hf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from bindkit.synth.command import run
    from bindkit.synth.splits import write_splits

    out = tmp_path_factory.mktemp("synth") / "run"
    run(out, 60, seed=3, progress=False)
    write_splits(out)
    assert main(["export", "synth", str(out), "--out", str(out.parent / "run-hf")]) == 0
    return out.parent / "run-hf"


def _trainer(train: Any, tmp_path: Path, steps: int) -> Any:
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.losses import MultipleNegativesRankingLoss

    from bindkit.embed.backends.st import default_model_path

    model = SentenceTransformer(default_model_path(), device="cpu")
    model.max_seq_length = 32
    args = SentenceTransformerTrainingArguments(
        output_dir=str(tmp_path / "st"),
        max_steps=steps,
        per_device_train_batch_size=4,
        report_to=[],
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
    )
    loss = MultipleNegativesRankingLoss(model)
    return SentenceTransformerTrainer(model=model, args=args, train_dataset=train, loss=loss)


def test_default_config_is_what_the_trainer_takes(synth_hf: Path, tmp_path: Path) -> None:
    """The default config's columns are (anchor, positive, negative) text, in that order, and
    the trainer's own collator takes a batch of them (the labelled columns made it fail with
    "Unsupported input type: int"); the labels stay in the `full` config."""
    cache = str(tmp_path / "hf")
    train = datasets.load_dataset(str(synth_hf), split="train", cache_dir=cache)
    assert train.column_names == ["query", "positive", "negative"]
    batch = _trainer(train, tmp_path, 1).data_collator([train[0], train[1]])
    assert {"query_input_ids", "positive_input_ids", "negative_input_ids"} <= set(batch)
    full = datasets.load_dataset(str(synth_hf), "full", split="train", cache_dir=cache)
    assert full.column_names[:3] == train.column_names
    assert isinstance(full.features["negative_kind"], datasets.ClassLabel)
    assert full.select_columns(["query", "positive", "negative"]).to_list() == train.to_list()


@pytest.mark.slow
def test_synth_export_trains_in_sentence_transformers_unchanged(
    synth_hf: Path, tmp_path: Path
) -> None:
    """Two steps of MultipleNegativesRankingLoss on the export loaded with load_dataset, no
    column dropped: the weights move."""
    train = datasets.load_dataset(str(synth_hf), split="train", cache_dir=str(tmp_path / "hf"))
    trainer = _trainer(train, tmp_path, 2)
    weights = trainer.model[0].auto_model.embeddings.word_embeddings.weight
    before = weights.detach().clone()
    output = trainer.train()
    assert output.global_step == 2 and output.training_loss > 0
    assert (weights.detach() - before).abs().max().item() > 0
