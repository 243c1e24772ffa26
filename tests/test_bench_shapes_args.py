"""The real-shapes benchmarks refuse bad arguments in one line, before loading a model."""

from __future__ import annotations

import sys
from types import ModuleType

import pytest

from script_module import ROOT, load_script


def _module(name: str) -> ModuleType:
    folder = str(ROOT / "benchmarks")
    if folder not in sys.path:  # the scripts import their siblings (_alternate, _shapes)
        sys.path.insert(0, folder)
    return load_script(f"benchmarks/{name}.py")


@pytest.mark.parametrize(
    ("script", "argv", "message"),
    [
        ("bench_real_shapes", ["all", "--rounds", "0"], "argument --rounds: 0: use 1 or more"),
        ("bench_real_shapes", ["embed", "--side", "100"], "--side 100: use a multiple of 32"),
        ("bench_real_shapes", ["train", "--images", "-1"], "--images -1: use 0 or more"),
        ("bench_memory_estimate", ["--dtypes", "float16"], "'float16' is not one of"),
        ("bench_memory_estimate", ["--batches", "8,x"], "--batches 8,x: give integers"),
        ("bench_memory_estimate", ["--hidden", "100"], "--hidden 100: use a multiple of 64"),
        ("gpu_real_shapes", ["--scale", "64"], "--scale 64: give HIDDEN,LAYERS"),
        ("gpu_real_shapes", ["--steps", "0"], "argument --steps: 0: use 1 or more"),
    ],
)
def test_a_bad_argument_is_one_line(
    script: str, argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _module(script).main(argv)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
