"""The one training loop for both objectives on a tiny random Qwen2-VL: accuracy rises, cluster
runs resume byte-identically, GradCache is an option for triplets too, a non-finite loss stops the
run, and every bad input is refused in one line before the model loads."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("accelerate")

from bindkit.train.config import ClusterTrainConfig, TrainConfig  # noqa: E402
from bindkit.train.trainer import train  # noqa: E402

COLORS = [("red", "blue"), ("striped", "gray"), ("white", "orange"), ("transparent", "red")]


def positive(a: str, b: str) -> str:
    return f"A {a} cube sat beside a {b} kite."


TRIPLETS = [
    {
        "query": f"a {a} cube and a {b} kite",
        "positive": f"A {a} cube sat beside a {b} kite.",
        "negative": f"A {b} cube sat beside a {a} kite.",
    }
    for a, b in COLORS
]
# each cluster: a query and its binding swap, so InfoNCE in the cluster pushes each query away
# from exactly the negative its validation triplet holds
CLUSTERS = [
    {
        "anchor": f"a {a} cube and a {b} kite",
        "pairs": [
            {"query": f"a {x} cube and a {y} kite", "positive": positive(x, y)}
            for x, y in ((a, b), (b, a))
        ],
    }
    for a, b in COLORS
]


def jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    data = tmp_path / "data"
    data.mkdir()
    return {
        "triplets": jsonl(data / "triplets.jsonl", TRIPLETS),
        "clusters": jsonl(data / "clusters.jsonl", CLUSTERS),
    }


def make(kind: str, model: Path, files: dict[str, Path], out: Path, **options: Any) -> Any:
    common: dict[str, Any] = dict(
        model=f"mllm:{model}", out=str(out), lr=1e-2, lines=False, progress=False, save_every=0
    )
    if kind == "triplets":
        return TrainConfig(train=str(files["triplets"]), **{"batch_size": 2, **common, **options})
    defaults = dict(clusters_per_step=2, warmup_steps=0, temperature=0.05, chunk_size=3)
    return ClusterTrainConfig(clusters=str(files["clusters"]), **{**common, **defaults, **options})


@pytest.mark.parametrize("kind", ["triplets", "clusters"])
def test_validation_accuracy_rises_for_each_objective(
    kind: str, tiny_qwen2_vl: Path, files: dict[str, Path], tmp_path: Path
) -> None:
    config = make(kind, tiny_qwen2_vl, files, tmp_path / kind, val=str(files["triplets"]), epochs=3)
    record = train(config)
    scores = record["scores"]
    assert scores["raw"]["val_triplet_accuracy"] > scores["base"]["val_triplet_accuracy"]
    assert record["objective"] == kind and record["schema"] == "bindkit.train/2"
    assert (tmp_path / kind / "adapter-raw" / "adapter_model.safetensors").is_file()
    assert kind in (tmp_path / kind / "model_card.md").read_text()


def test_cluster_run_resumes_byte_identically(
    tiny_qwen2_vl: Path, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.train.losses import ClusterInfoNCELoss

    # a warm-up and a linear decay: the schedule's state must come back too
    options = dict(epochs=2, clusters_per_step=1, warmup_steps=2, schedule="linear")
    full = tmp_path / "full"
    train(make("clusters", tiny_qwen2_vl, files, full, **options))

    original = ClusterInfoNCELoss.forward
    calls = {"n": 0}

    def dies_in_step_five(self: Any, *args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return original(self, *args)

    interrupted = tmp_path / "interrupted"
    monkeypatch.setattr(ClusterInfoNCELoss, "forward", dies_in_step_five)
    with pytest.raises(KeyboardInterrupt):
        train(make("clusters", tiny_qwen2_vl, files, interrupted, save_every=1, **options))
    monkeypatch.setattr(ClusterInfoNCELoss, "forward", original)
    assert (interrupted / "checkpoint" / "state.pt").is_file()
    assert not (interrupted / "adapter-raw").exists()

    record = train(make("clusters", tiny_qwen2_vl, files, interrupted, **options))
    weights = "adapter-raw/adapter_model.safetensors"
    assert (interrupted / weights).read_bytes() == (full / weights).read_bytes()
    assert [h["step"] for h in record["history"]] == list(range(1, 9))


def test_gradcache_is_an_option_for_triplets(
    tiny_qwen2_vl: Path, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.train import loop

    grads: dict[int, list[Any]] = {}
    chunk = {"size": 0}

    def record(self: Any, trainable: list[Any]) -> None:  # runs just before optimizer.step
        grads.setdefault(chunk["size"], []).append([p.grad.clone() for p in trainable])

    monkeypatch.setattr(loop.Run, "all_reduce", record)
    for size in (0, 1):
        chunk["size"] = size
        options = dict(chunk_size=size, model_dropout=False, max_steps=1, batch_size=4)
        train(make("triplets", tiny_qwen2_vl, files, tmp_path / f"chunk{size}", **options))
    # one step: after it, Adam's sign-like first update amplifies float noise in tiny gradients
    assert len(grads[0]) == len(grads[1]) == 1
    for full, cached in zip(grads[0], grads[1], strict=True):
        assert any(float(g.abs().max()) > 0 for g in full)
        for a, b in zip(full, cached, strict=True):
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-7)


def test_a_non_finite_loss_stops_the_run_without_an_adapter(
    tiny_qwen2_vl: Path, files: dict[str, Path], tmp_path: Path
) -> None:
    def poisoned(step: Any) -> Any:
        return step.embeddings["query"].sum() * float("nan")

    out = tmp_path / "r"
    with pytest.raises(BindkitError, match=r"the loss became nan at step 1.*no adapter written"):
        train(make("triplets", tiny_qwen2_vl, files, out), auxiliary_losses=[poisoned])
    assert not (out / "adapter-raw").exists() and not (out / "model_card.md").exists()


def test_non_finite_weights_stop_the_run() -> None:
    from types import SimpleNamespace

    from bindkit.train.loop import Run

    run = SimpleNamespace(out=Path("r"), config=SimpleNamespace(lr=1.0))
    Run.check_finite(run, [torch.ones(2)], 3)  # type: ignore[arg-type]
    with pytest.raises(BindkitError, match=r"non-finite at step 3; lower --lr \(now 1\)"):
        Run.check_finite(run, [torch.ones(2), torch.tensor([1.0, float("inf")])], 3)  # type: ignore[arg-type]


def _split_set_without_manifest(tmp_path: Path) -> Path:
    folder = tmp_path / "split"
    folder.mkdir()
    jsonl(folder / "examples.jsonl", [{"id": 1}])
    return jsonl(folder / "train.jsonl", TRIPLETS)


def _truncated_adapter(tmp_path: Path) -> Path:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({"peft_type": "LORA"}))
    (adapter / "adapter_model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{")
    return adapter


CELLS = {
    # issue #21's cells, then issue #19's inputs that were found only after the model loaded
    "lr_inf": (["--lr", "inf"], r"--lr inf: give a finite number in \(0, 1\]"),
    "margin_nan": (["--margin", "nan"], r"--margin nan: give a finite number in \[0, 2\]"),
    "preserve_weight_inf": (["--preserve-weight", "inf"], "--preserve-weight inf: give a finite"),
    "weight_decay_nan": (["--weight-decay", "nan"], "--weight-decay nan: give a finite number"),
    "missing_splits_json": (["--train", "{split}"], "splits.json: missing"),
    "out_under_a_file": (["--out", "{bad}/run"], "a parent of it is a regular file"),
    "out_inside_the_input": (["--out", "{triplets}/run"], "is inside the input"),
    "out_holds_the_input": (["--out", "{data}"], "holds the input"),
    "out_is_the_input": (["--out", "{triplets}"], "is the input"),
    "corrupt_sts": (["--sts", "{bad}"], "bad.tsv"),
    "model_with_adapter": (["--model", "{model}+adapter=x"], "already carries an adapter"),
}
CLUSTER_CELLS = {
    "temperature_nan": (["--temperature", "nan"], r"--temperature nan: give a finite number"),
    "clusters_missing": (["--clusters", "{data}/nope.jsonl"], "file not found"),
    "clusters_empty": (["--clusters", "{empty}"], "no clusters"),
    "clusters_torn": (["--clusters", "{torn}"], "torn.jsonl:2: not valid JSON"),
    "clusters_binary": (["--clusters", "{bad}"], "not UTF-8 text"),
    "clusters_are_triplets": (["--clusters", "{triplets}"], "the output of `bindkit mine`"),
}
LINES_CELLS = {
    "beta_inf": (["--beta", "inf"], r"--beta inf: give a finite number in \[-1, 1\]"),
    "num_layers_0": (["--num-layers", "0"], "--num-layers 0: give a whole number from 1 to 1000"),
    "truncated_adapter": ([], "not a readable safetensors file"),
}


def _argv(argv: list[str], paths: dict[str, Path]) -> list[str]:
    return [a.format(**{k: str(v) for k, v in paths.items()}) for a in argv]


@pytest.fixture
def cell_paths(
    tiny_qwen2_vl: Path, files: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Path]:
    from bindkit.train import loop

    def no_model(*args: Any) -> Any:
        raise AssertionError("the model was loaded before the inputs were checked")

    monkeypatch.setattr(loop, "load_trainable", no_model)
    bad = tmp_path / "bad.tsv"
    bad.write_bytes(b"\x00\xff\x00garbage")
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    torn = tmp_path / "torn.jsonl"
    torn.write_text(json.dumps(CLUSTERS[0]) + "\n" + json.dumps(CLUSTERS[1])[:30] + "\n")
    return {
        "torn": torn,
        **files,
        "data": files["triplets"].parent,
        "model": tiny_qwen2_vl,
        "split": _split_set_without_manifest(tmp_path),
        "bad": bad,
        "empty": empty,
        "adapter": _truncated_adapter(tmp_path),
        "out": tmp_path / "out",
    }


def _refused(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    started = time.perf_counter()
    assert main(argv) == 2
    elapsed = time.perf_counter() - started
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0, err
    assert re.search(message, err), err
    assert elapsed < 2.0, f"{elapsed:.1f} s"


@pytest.mark.parametrize("cell", sorted(CELLS))
def test_triplet_inputs_are_refused_before_the_model_loads(
    cell: str, cell_paths: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    extra, message = CELLS[cell]
    base = ["--model", "{model}", "--train", "{triplets}", "--out", "{out}", "--no-lines"]
    argv = ["train", "triplets", *_argv(base + extra, cell_paths)]
    _refused(argv, message, capsys)


@pytest.mark.parametrize("cell", sorted(CLUSTER_CELLS))
def test_cluster_inputs_are_refused_before_the_model_loads(
    cell: str, cell_paths: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    extra, message = CLUSTER_CELLS[cell]
    base = ["--model", "{model}", "--clusters", "{clusters}", "--out", "{out}"]
    _refused(["train", "clusters", *_argv(base + extra, cell_paths)], message, capsys)


@pytest.mark.parametrize("cell", sorted(LINES_CELLS))
def test_lines_inputs_are_refused(
    cell: str, cell_paths: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from safetensors.torch import save_file

    extra, message = LINES_CELLS[cell]
    adapter = cell_paths["adapter"]
    if cell != "truncated_adapter":
        tensor = torch.ones(2, 2)
        save_file({"base_model.model.layers.0.q_proj.lora_B.weight": tensor}, str(adapter / "w"))
        (adapter / "w").replace(adapter / "adapter_model.safetensors")
    argv = ["lines", str(adapter), "--alpha", "0.5", "--out", str(tmp_path / "o"), *extra]
    _refused(argv, message, capsys)
    assert not (tmp_path / "o").exists()


def test_help_shows_each_default_once_and_says_what_no_flags_do(
    capsys: pytest.CaptureFixture[str],
) -> None:
    for kind in ("triplets", "clusters"):
        with pytest.raises(SystemExit):
            main(["train", kind, "--help"])
        text = " ".join(capsys.readouterr().out.split())
        assert text.count("(default: 5e-05)") == 1, kind  # --lr
        assert "(default: 5e-05) (default" not in text
        lines = {
            "triplets": "--no-lines write only the raw LoRA update",
            "clusters": "--lines "
            "apply LiNeS to the final adapter [bindkit's choice: seed 002 applies no LiNeS",
        }
        assert lines[kind] in text
        assert "--no-progress print no progress bar" in text
        for flag in ("--lora-r", "--lora-alpha", "--warmup-steps", "--chunk-size", "--seed"):
            assert flag in text
    with pytest.raises(SystemExit):
        main(["train", "clusters", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    # each number's allowed range is documented beside its default
    assert (
        "--temperature TEMPERATURE InfoNCE temperature tau [seed 002 §IV-A1]; in [0.001, 10] "
        "(default: 0.02)" in text
    )
    assert "--lora-r LORA_R LoRA rank [seed 002 §IV-A1]; in [1, 1024] (default: 8)" in text
    assert (
        "--epochs EPOCHS passes over the training file; a fraction ends the last pass early "
        "(1.5: ceil(1.5 x an epoch's batches) batches) [seed 002 §IV-A1]; in (0, 1000] "
        "(default: 1.5)"
    ) in text


@pytest.mark.slow
def test_cluster_run_killed_with_sigkill_resumes_byte_identically(
    tiny_qwen2_vl: Path, files: dict[str, Path], tmp_path: Path
) -> None:
    base = ["--model", f"mllm:{tiny_qwen2_vl}", "--clusters", str(files["clusters"])]
    options = ["--lr", "1e-2", "--epochs", "12", "--clusters-per-step", "1",
               "--warmup-steps", "3", "--chunk-size", "3", "--no-progress"]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}

    def command(out: Path, *extra: str) -> list[str]:
        return [sys.executable, "-m", "bindkit", "train", "clusters", *base, "--out", str(out),
                *options, *extra]  # fmt: skip

    full, killed = tmp_path / "full", tmp_path / "killed"
    subprocess.run(command(full), env=env, check=True, capture_output=True)
    process = subprocess.Popen(command(killed, "--save-every", "1"), env=env)
    state = killed / "checkpoint" / "state.pt"
    deadline = time.monotonic() + 300
    while not state.is_file() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
    time.sleep(0.5)  # a few more steps: killed between two checkpoints
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    assert state.is_file() and not (killed / "train.json").exists()
    subprocess.run(command(killed), env=env, check=True, capture_output=True)
    weights = "adapter-raw/adapter_model.safetensors"
    assert (killed / weights).read_bytes() == (full / weights).read_bytes()
    history = json.loads((killed / "train.json").read_text())["history"]
    assert [h["step"] for h in history] == list(range(1, 49))
