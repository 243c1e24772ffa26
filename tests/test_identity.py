"""``bindkit.identity``: every config field is either in a run's identity or declared output-only
with a reason; folder digests count file names; the base model's weights count; the output lock
and the staging rename guard one folder however it is spelled (review, architecture Part 3:
mutants 3, 10, 14, 38, 40)."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from bindkit.errors import BindkitError
from bindkit.identity import (
    changed_output,
    content_digest,
    identity_change,
    model_weights,
    output_digests,
)
from bindkit.train.config import OUTPUT_ONLY_FIELDS, ClusterTrainConfig, TrainConfig
from bindkit.train.reuse import run_identity

# the reviewed decision: these fields alone change nothing a run computes. Adding a field here
# is a decision to be made in review, with its reason in OUTPUT_ONLY_FIELDS.
REVIEWED_OUTPUT_ONLY = {
    "out",
    "progress",
    "overwrite",
    "save_every",
    "eval_every",
    "gradient_checkpointing",  # same loss and gradients (tests/test_train_memory.py)
}


def _configs(tmp: Path) -> list[Any]:
    triplets = tmp / "train.jsonl"
    triplets.write_text('{"query": "a red cube", "positive": "a red cube", "negative": "x"}\n')
    clusters = tmp / "clusters.jsonl"
    clusters.write_text('{"anchor": "a red cube", "positives": ["a red cube"]}\n')
    common = {"model": "bow", "out": str(tmp / "out")}
    return [
        TrainConfig(train=str(triplets), **common),
        ClusterTrainConfig(clusters=str(clusters), **common),
    ]


def _changed(config: Any, name: str, tmp: Path) -> Any:
    """``config`` with field ``name`` set to a value it never holds by default (an input field:
    another file). Set past the dataclass checks: only the identity is computed from it."""
    other = dataclasses.replace(config)
    if name in config.DATA_FIELDS:
        value: Any = tmp / f"other-{name}.txt"
        value.write_text(f"other content of {name}\n")
        value = str(value)
    elif name == "model":
        value = "builtin:tiny-clip"
    else:
        value = f"changed {name}"
    object.__setattr__(other, name, value)
    return other


def test_every_config_field_is_in_the_identity_or_declared_output_only(tmp_path: Path) -> None:
    assert set(OUTPUT_ONLY_FIELDS) == REVIEWED_OUTPUT_ONLY
    assert all(len(reason) > 10 for reason in OUTPUT_ONLY_FIELDS.values())
    for config in _configs(tmp_path):
        before = run_identity(config)
        for field in dataclasses.fields(config):
            after = run_identity(_changed(config, field.name, tmp_path))
            kind = type(config).__name__
            if field.name in OUTPUT_ONLY_FIELDS:
                assert after == before, f"{kind}.{field.name}: output-only, yet in the identity"
            else:
                assert after != before, (
                    f"{kind}.{field.name}: changes no run identity; put it in the identity, or "
                    "in OUTPUT_ONLY_FIELDS with the reason it cannot change a result"
                )


def test_a_changed_option_is_named_by_its_flag(tmp_path: Path) -> None:
    from bindkit.train.reuse import identity_change as run_change

    config = _configs(tmp_path)[0]
    changed = dataclasses.replace(config, lr=config.lr * 2)
    message = run_change(config, run_identity(config), run_identity(changed))
    assert message == f"--lr {config.lr!r} then, {config.lr * 2!r} now"


def _folder(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_folder_digests_count_file_names(tmp_path: Path) -> None:
    from bindkit.embed.weights import directory_fingerprint

    files = {"colors.txt": "red\nblue\n", "objects.txt": "cube\nheart\n", "config.json": "{}"}
    one = _folder(tmp_path / "one", files)
    colors, objects = files["colors.txt"], files["objects.txt"]
    swapped = _folder(tmp_path / "swapped", {**files, "colors.txt": objects, "objects.txt": colors})
    renamed = {("colours.txt" if k == "colors.txt" else k): v for k, v in files.items()}
    renamed_folder = _folder(tmp_path / "renamed", renamed)
    for digest in (content_digest, directory_fingerprint):
        assert digest(one) == digest(_folder(tmp_path / "copy", files))  # content, not place
        assert digest(one) != digest(swapped), digest.__name__
        assert digest(one) != digest(renamed_folder), digest.__name__


def test_the_base_models_weights_count(tmp_path: Path) -> None:
    import shutil

    from bindkit.embed.backends.builtin import builtin_dir

    folder = tmp_path / "tcw"
    shutil.copytree(builtin_dir("tiny-clip"), folder)
    spec = f"builtin:tiny-clip+weights={folder}"
    before = model_weights(spec)
    assert before == model_weights("builtin:tiny-clip") | {"model": "tcw"}  # the same files
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1
    weights.write_bytes(bytes(data))
    assert model_weights(spec) != before
    old, new = {"model": before}, {"model": model_weights(spec)}
    assert identity_change(old, new) == "model.weights: its content changed"


def test_identity_change_names_the_first_difference() -> None:
    old = {"options": {"lr": 0.1, "seed": 1}, "inputs": {"train": "a"}}
    assert identity_change(old, json.loads(json.dumps(old))) is None
    assert identity_change(old, {**old, "options": {"lr": 0.1, "seed": 2}}) == (
        "options.seed 1 then, 2 now"
    )
    assert identity_change(old, {**old, "inputs": {}}) == "inputs.train: given then, not now"
    assert identity_change(old, {**old, "inputs": {"train": "a", "val": "b"}}) == (
        "inputs.val: not given then"
    )
    assert identity_change(None, old) is not None


def test_changed_output_names_the_first_file_that_differs(tmp_path: Path) -> None:
    _folder(tmp_path / "adapter", {"a.safetensors": "w", "adapter_config.json": "{}"})
    recorded = output_digests(tmp_path, ["adapter", "absent"])
    assert sorted(recorded) == ["adapter/a.safetensors", "adapter/adapter_config.json"]
    assert changed_output(tmp_path, recorded) is None
    (tmp_path / "adapter" / "a.safetensors").write_text("v")
    assert changed_output(tmp_path, recorded) == str(tmp_path / "adapter" / "a.safetensors")
    (tmp_path / "adapter" / "adapter_config.json").unlink()
    assert changed_output(tmp_path, recorded) == str(tmp_path / "adapter" / "a.safetensors")
    assert changed_output(tmp_path, {}) is not None  # nothing recorded: nothing can be trusted


_HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from bindkit._lock import directory_lock

    with directory_lock(Path(sys.argv[1]), "holder"):
        print("held", flush=True)
        time.sleep(60)
    """
)


def test_one_folder_spelled_two_ways_takes_one_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--out results`` and ``--out ./results`` are one folder: the second writer is refused."""
    from bindkit._lock import LockedError, directory_lock

    monkeypatch.chdir(tmp_path)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD, "results"],
        cwd=tmp_path,
        env={**os.environ},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(LockedError), directory_lock(Path("./results"), "second"):
            pass
        os.symlink(tmp_path / "results", tmp_path / "link")
        with pytest.raises(LockedError), directory_lock(Path("link"), "third"):
            pass
    finally:
        holder.kill()
        holder.wait()


def test_the_staging_rename_never_replaces_a_folder_without_overwrite(tmp_path: Path) -> None:
    """A folder that appeared at ``out`` after the pre-check (another writer) is refused and
    left as it is, unless ``replace``."""
    from bindkit._staging import new_staging, swap_into_place

    out = tmp_path / "export"
    staging = new_staging(out, "test")
    (staging / "mine.txt").write_text("mine")
    _folder(out, {"theirs.txt": "theirs"})  # written meanwhile
    with pytest.raises(BindkitError, match=r"--out .*export: another run wrote it meanwhile"):
        swap_into_place(staging, out, replace=False)
    assert sorted(p.name for p in out.iterdir()) == ["theirs.txt"]
    swap_into_place(staging, out, replace=True)
    assert sorted(p.name for p in out.iterdir()) == ["mine.txt"]


def test_the_recipes_model_size_cache_is_keyed_by_the_weights(tmp_path: Path) -> None:
    """``OUT/model-size.json`` (the lr size rule's parameter count) is reused for the same
    weights only: a ``+weights`` folder edited in place is counted again."""
    pytest.importorskip("torch")
    from bindkit.identity import as_stored
    from bindkit.recipes.scale import SIZE_FILE, model_parameters

    spec = "builtin:tiny-clip"
    weights = as_stored(model_weights(spec))
    (tmp_path / SIZE_FILE).write_text(
        json.dumps({"model": spec, "weights": weights, "parameters": 7})
    )
    assert model_parameters(spec, tmp_path) == 7  # the record is used
    stale = {**weights, "weights": "0" * 24}
    (tmp_path / SIZE_FILE).write_text(
        json.dumps({"model": spec, "weights": stale, "parameters": 7})
    )
    counted = model_parameters(spec, tmp_path)
    assert counted > 1000
    assert json.loads((tmp_path / SIZE_FILE).read_text())["weights"] == weights
