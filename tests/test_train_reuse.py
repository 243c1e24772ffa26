"""The one reuse rule (``bindkit.train.reuse.run_identity``): a finished run or a checkpoint is
reused or resumed only when every option and the content of every input file are the same.

On builtin:tiny-clip with two steps, so the whole file runs in seconds: a second
``train(reuse=True)`` returns the first record without loading a model; a ``--preserve`` file
edited in place (same path) is refused by name, or trained again with ``overwrite``; a checkpoint
does not resume after that edit either (its identity used to hash the train file alone).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from bindkit.errors import BindkitError

pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("accelerate")

from bindkit.train import loop
from bindkit.train.config import TrainConfig
from bindkit.train.reuse import reusable_run, run_identity
from bindkit.train.trainer import train_triplets

ROWS = [
    {
        "query": f"a {a} cube and a {b} heart",
        "positive": f"a {b} heart and a {a} cube",
        "negative": f"a {b} cube and a {a} heart",
    }
    for a, b in [("red", "blue"), ("striped", "green"), ("white", "orange")] * 2
]


def _config(tmp: Path, **options: Any) -> TrainConfig:
    train = tmp / "train.jsonl"
    if not train.exists():
        train.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    preserve = tmp / "preserve.txt"
    if not preserve.exists():
        preserve.write_text("a red cube\na blue heart\n")
    defaults: dict[str, Any] = dict(
        model="builtin:tiny-clip",
        train=str(train),
        preserve=str(preserve),
        preserve_batch=2,
        out=str(tmp / "run"),
        lr=1e-2,
        batch_size=2,
        max_steps=2,
        lines=False,
        save_every=0,
        progress=False,
    )
    return TrainConfig(**{**defaults, **options})


def _no_model(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("a reused run must not load a model")


def test_a_finished_run_of_the_same_identity_is_reused_without_a_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path)
    first = train_triplets(config, reuse=True)
    assert first["identity"]["inputs"].keys() == {"train", "preserve"}
    monkeypatch.setattr(loop, "load_trainable", _no_model)
    assert train_triplets(config, reuse=True) == first
    assert reusable_run(config) == first
    # non-result options (progress, save_every, ...) do not change the identity
    assert reusable_run(dataclasses.replace(config, save_every=7, progress=True)) == first
    # without reuse (bindkit train), a finished run is still refused
    with pytest.raises(BindkitError, match="holds a finished run"):
        train_triplets(config)


def test_a_changed_preserve_file_at_the_same_path_is_never_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path)
    first = train_triplets(config, reuse=True)
    Path(config.preserve or "").write_text("a green star\na golden ring\n")  # same path
    assert reusable_run(config) is None
    real = loop.load_trainable
    monkeypatch.setattr(loop, "load_trainable", _no_model)
    with pytest.raises(BindkitError, match=r"--preserve .*preserve\.txt: its content changed"):
        train_triplets(config, reuse=True)
    monkeypatch.setattr(loop, "load_trainable", real)
    again = train_triplets(dataclasses.replace(config, overwrite=True), reuse=True)
    assert again["identity"] != first["identity"]
    assert again["data"]["preserve"]["sha256"] != first["data"]["preserve"]["sha256"]
    assert reusable_run(config) == again


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"max_steps": 1}, r"--max-steps 2 then, 1 now"),
        ({"preserve": None}, r"--preserve: given then, not now"),
    ],
)
def test_a_changed_option_is_named(tmp_path: Path, change: dict[str, Any], message: str) -> None:
    config = _config(tmp_path)
    train_triplets(config, reuse=True)
    with pytest.raises(BindkitError, match=message):
        train_triplets(dataclasses.replace(config, **change), reuse=True)


def test_the_auxiliary_losses_identity_counts(tmp_path: Path) -> None:
    config = _config(tmp_path)
    train_triplets(config, reuse=True, extra_identity={"ensemble_sha256": "a"})
    assert reusable_run(config, extra_identity={"ensemble_sha256": "a"}) is not None
    assert reusable_run(config, extra_identity={"ensemble_sha256": "b"}) is None
    assert reusable_run(config) is None


def test_a_checkpoint_does_not_resume_after_its_preserve_file_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def killed(self: Any, *args: Any) -> Any:
        raise KeyboardInterrupt

    config = _config(tmp_path, save_every=1)
    monkeypatch.setattr(loop.Run, "finish", killed)
    with pytest.raises(KeyboardInterrupt):
        train_triplets(config)
    monkeypatch.undo()
    assert (tmp_path / "run" / "checkpoint" / "state.pt").is_file()
    Path(config.preserve or "").write_text("a green star\na golden ring\n")
    with pytest.raises(BindkitError, match=r"checkpoint of a run with other options or data "):
        train_triplets(config)
    with pytest.raises(BindkitError, match=r"--preserve .*: its content changed"):
        train_triplets(config, reuse=True)


def test_the_identity_hashes_content_not_paths(tmp_path: Path) -> None:
    config = _config(tmp_path)
    moved = tmp_path / "moved.txt"
    moved.write_bytes(Path(config.preserve or "").read_bytes())
    assert run_identity(dataclasses.replace(config, preserve=str(moved))) == run_identity(config)
    moved.write_text("other\n")
    assert run_identity(dataclasses.replace(config, preserve=str(moved))) != run_identity(config)


def _weights(record: dict[str, Any]) -> dict[str, str]:
    """The adapter weights' digests of a run record (its cards hold timings, which vary)."""
    return {k: v for k, v in record["files"].items() if k.endswith(".safetensors")}


def test_an_adapter_changed_after_the_run_finished_is_not_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review cell F99: a run's adapter corrupted in place was reused (and a soup built from it
    shipped). train.json records every adapter file's sha256; reuse re-checks them."""
    config = _config(tmp_path, lines=True, lines_alpha=0.5)
    first = train_triplets(config, reuse=True)
    assert {"adapter-raw/adapter_model.safetensors", "adapter-lines/adapter_model.safetensors"} <= (
        first["files"].keys()
    )
    weights = tmp_path / "run" / "adapter-raw" / "adapter_model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-8:] = bytes(8)  # the review's corruption: the last 8 bytes zeroed
    weights.write_bytes(bytes(data))
    assert reusable_run(config) is None
    real = loop.load_trainable
    monkeypatch.setattr(loop, "load_trainable", _no_model)
    with pytest.raises(BindkitError, match=r"adapter_model\.safetensors: changed since the run"):
        train_triplets(config, reuse=True)
    monkeypatch.setattr(loop, "load_trainable", real)
    again = train_triplets(dataclasses.replace(config, overwrite=True), reuse=True)
    assert _weights(again) == _weights(first)  # trained again: the bytes of the first time
    assert reusable_run(config) == again
    (tmp_path / "run" / "adapter-lines" / "adapter_config.json").unlink()  # review cell F100
    with pytest.raises(BindkitError, match=r"adapter-lines/adapter_config\.json: changed since"):
        train_triplets(config, reuse=True)


def test_base_weights_edited_in_place_are_another_model(tmp_path: Path) -> None:
    """Review cell F109: ``+weights=DIR`` with ``DIR/model.safetensors`` replaced reused the
    runs trained on the old weights (the identity held the spec string, not the weights)."""
    import shutil

    from safetensors.torch import load_file, save_file

    from bindkit.embed.backends.builtin import builtin_dir

    folder = tmp_path / "tcw"
    shutil.copytree(builtin_dir("tiny-clip"), folder)
    config = _config(tmp_path, model=f"builtin:tiny-clip+weights={folder}")
    first = train_triplets(config, reuse=True)
    tensors = load_file(folder / "model.safetensors")
    name = "text.embed.weight"  # what the text tower trains on (logit_scale would not move it)
    tensors[name] = tensors[name] * 1.5
    save_file(tensors, folder / "model.safetensors")
    assert reusable_run(config) is None
    with pytest.raises(BindkitError, match=r"--model builtin:tiny-clip\+weights=.*\(its weights\)"):
        train_triplets(config, reuse=True)
    again = train_triplets(dataclasses.replace(config, overwrite=True), reuse=True)
    assert again["identity"]["model"] != first["identity"]["model"]
    assert _weights(again) != _weights(first)
