"""``train clusters``: the shared loop on the real MiniLM (st:default), clusters file validation."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bindkit.errors import BindkitError, DataFormatError
from bindkit.train.config import ClusterTrainConfig
from bindkit.train.objectives import read_clusters

COLORS = ["red", "blue", "green", "yellow"]
OBJECTS = ["cube", "ball", "kite", "cup"]


def write_clusters(path: Path) -> Path:
    lines = []
    for color in COLORS:
        pairs = [
            {"query": f"a {color} {o}", "positive": f"one {color} {o}", "instruction": "Find it."}
            for o in OBJECTS
        ]
        lines.append(json.dumps({"anchor": pairs[0]["query"], "pairs": pairs}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_cluster_file_and_options_are_validated(tmp_path: Path) -> None:
    assert len(read_clusters(write_clusters(tmp_path / "c.jsonl"))) == 4
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"anchor": "x", "pairs": [{"query": "x"}]}\n')
    with pytest.raises(DataFormatError, match="the output of `bindkit mine`"):
        read_clusters(bad)
    with pytest.raises(BindkitError, match=r"--chunk-size -1: give a finite number in \[0, 6"):
        ClusterTrainConfig(model="st:default", clusters=str(bad), out="o", chunk_size=-1)


@pytest.mark.slow
def test_train_clusters_writes_a_trained_lora_adapter(tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("peft")
    from bindkit.train.trainer import train_clusters

    clusters = write_clusters(tmp_path / "c.jsonl")
    run = tmp_path / "run"
    config = ClusterTrainConfig(
        model="st:default",
        clusters=str(clusters),
        out=str(run),
        lines=False,
        progress=False,
        clusters_per_step=2,
        epochs=2,
        max_steps=3,
        warmup_steps=1,
        lr=1e-3,
        chunk_size=3,
        temperature=0.05,
    )
    record = train_clusters(config)
    assert record["optimizer_steps"] == 3 and len(record["history"]) == 3
    assert all(np.isfinite([h["loss"] for h in record["history"]]))
    saved = json.loads((run / "train.json").read_text())
    assert saved["config"]["chunk_size"] == 3 and saved["objective"] == "clusters"
    out = run / "adapter-raw"
    assert json.loads((out / "adapter_config.json").read_text())["r"] == 8
    from safetensors.numpy import load_file

    state = load_file(str(out / "adapter_model.safetensors"))
    b_weights = [v for k, v in state.items() if "lora_B" in k]
    assert len(b_weights) == 6 * 4  # 6 layers x query/key/value/output.dense
    assert all(np.abs(v).max() > 0 for v in b_weights)  # B starts at zero: it was trained
    # the adapter loads back through the embedder spec and changes vectors and fingerprint
    from bindkit.embed import load_embedder

    tuned = load_embedder(f"st:default+adapter={out}", cache=False, progress=False)
    base = load_embedder("st:default", cache=False, progress=False)
    assert tuned.fingerprint != base.fingerprint
    text = ["a red cube and a blue kite"]
    assert not np.allclose(tuned.embed_texts(text), base.embed_texts(text), atol=1e-6)


def test_train_clusters_parser_builds_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import argparse

    import bindkit.train.trainer as trainer
    from bindkit.cli.train import add_clusters_parser as add_parser

    seen = {}

    def fake(config: ClusterTrainConfig) -> dict[str, object]:
        seen.update(config=config)
        return {"optimizer_steps": 1, "scores": {"base": {}}}

    monkeypatch.setattr(trainer, "train", fake)
    clusters = write_clusters(tmp_path / "c.jsonl")
    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    args = parser.parse_args(
        ["clusters", "--model", "st:default", "--clusters", str(clusters), "--out",
         str(tmp_path / "r"), "--clusters-per-step", "4", "--in-batch", "--chunk-size", "16",
         "--lora-r", "2"]
    )  # fmt: skip
    assert args.handler(args) == 0
    config = seen["config"]
    assert isinstance(config, ClusterTrainConfig)
    assert (config.clusters_per_step, config.in_batch, config.chunk_size) == (4, True, 16)
    assert (config.lora_r, config.lora_alpha, config.lines) == (2, 16.0, False)  # no LiNeS
    assert (config.lr, config.warmup_steps, config.schedule, config.temperature) == (
        5e-5,
        100,
        "linear",
        0.02,
    )


@pytest.mark.slow
def test_a_killed_train_clusters_run_leaves_no_finished_looking_adapter(tmp_path: Path) -> None:
    """Issue 21: kill -9 mid-run, then rerun: the result equals an uninterrupted run,
    and a killed run never left a ``train.json`` beside a partial adapter."""
    import signal
    import subprocess
    import sys
    import time

    pytest.importorskip("sentence_transformers")
    pytest.importorskip("peft")
    from safetensors.numpy import load_file

    clusters = write_clusters(tmp_path / "c.jsonl")

    def command(out: Path) -> list[str]:
        return [
            *(sys.executable, "-m", "bindkit", "train", "clusters", "--model", "st:default"),
            *("--clusters", str(clusters), "--out", str(out), "--max-steps", "2"),
            *("--clusters-per-step", "2", "--chunk-size", "3", "--warmup-steps", "1"),
            *("--epochs", "2", "--lr", "1e-3"),
        ]

    start = time.perf_counter()
    subprocess.run(command(tmp_path / "ref"), check=True, capture_output=True)
    full = time.perf_counter() - start
    reference = load_file(str(tmp_path / "ref" / "adapter-raw" / "adapter_model.safetensors"))
    losses = [
        e["loss"] for e in json.loads((tmp_path / "ref" / "train.json").read_text())["history"]
    ]
    for fraction in (0.6,):
        out = tmp_path / f"k{fraction}"
        process = subprocess.Popen(
            command(out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(fraction * full)
        process.send_signal(signal.SIGKILL)
        process.wait()
        if (out / "train.json").exists():  # finished before the kill (a loaded machine): whole
            load_file(str(out / "adapter-raw" / "adapter_model.safetensors"))
        else:  # killed mid-run: the rerun resumes (a finished run would be refused, by design)
            subprocess.run(command(out), check=True, capture_output=True)
        again = load_file(str(out / "adapter-raw" / "adapter_model.safetensors"))
        assert again.keys() == reference.keys()
        assert all(np.allclose(again[k], reference[k], atol=1e-6) for k in reference)
        saved = [e["loss"] for e in json.loads((out / "train.json").read_text())["history"]]
        assert np.allclose(saved, losses, atol=1e-6)
        assert not any(p.name.endswith(".tmp") for p in out.iterdir())
