"""benchmarks/gpu_vlm_recipe.py: the real-weights recipe script, run on builtin:tiny-vlm on the
CPU (slow) and its input check."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

from script_module import load_script


def _module() -> ModuleType:
    return load_script("benchmarks/gpu_vlm_recipe.py")


def test_a_model_dir_without_config_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    script = _module()
    argv = ["--model-dir", str(tmp_path), "--out", str(tmp_path / "out"), "-q"]
    assert script.main(argv) == 2
    assert "no config.json" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.slow  # minutes on the loaded 2-core machine: the whole recipe at a tiny size
def test_runs_the_recipe_on_tiny_vlm(tmp_path: Path) -> None:
    script = _module()
    out = tmp_path / "out"
    argv = ["--spec", "builtin:tiny-vlm", "--out", str(out), "--saber-per-n", "2"]
    argv += ["--train-per-n", "4", "--steps", "2", "--lr", "1e-3", "--threads", "2"]
    argv += ["--throughput-items", "10", "-q"]
    assert script.main(argv) == 0
    result = json.loads((out / "gpu_recipe.json").read_text())
    assert set(result["saber"]) == {"base", "text-only LoRA", "text-only LoRA + LiNeS"}
    assert result["train"]["triplets"] == 2 * 32 and result["train"]["triplets_per_second"] > 0
    assert result["embed"]["images"] == 10 and result["embed"]["images_per_second"] > 0
    assert "| base |" in (out / "gpu_recipe.md").read_text()


def test_lines_sweep_recall_at_1_by_hand() -> None:
    import numpy as np

    path = Path(__file__).parents[1] / "benchmarks" / "vlm_lines_sweep.py"
    spec = importlib.util.spec_from_file_location("vlm_lines_sweep", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    images = np.eye(3)
    texts = np.array([[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 0.0, 1.0]])
    # every image's best caption is its own (image 1 = e1 sees 0.0, 0.1, 0.0);
    # caption 1's best image is 0 (0.9 > 0.1): one of three captions misses
    assert module.recall_at_1(images, texts) == {"image_to_text": 1.0, "text_to_image": 2 / 3}
