"""benchmarks/vlm_base_search.py: the table, the variant check and reuse of finished parts."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pytest

from script_module import load_script

ROOT = Path(__file__).resolve().parents[1]


def _bench() -> ModuleType:
    return load_script("benchmarks/vlm_base_search.py")


def _summary(base: float, lora: float, lines: float) -> dict[str, object]:
    row = {p: 0.25 for p in ("tt", "ti", "it", "ii")}
    return {
        "table": {
            "base": {**row, "ti": base},
            "text-only LoRA": {**row, "ti": lora},
            "text-only LoRA + LiNeS": {**row, "ti": lines},
        }
    }


def _finished(out: Path) -> None:
    """A search folder whose variant ``cap`` has its base and its plain demo done."""
    (out / "cap" / "base").mkdir(parents=True)
    (out / "cap" / "base" / "training.json").write_text("{}")
    (out / "cap" / "demo").mkdir()
    (out / "cap" / "demo" / "demo.json").write_text(json.dumps(_summary(0.3, 0.4, 0.35)))


def test_table_reads_base_then_lora_then_lines() -> None:
    bench = _bench()
    text = bench.table({"cap": _summary(0.289, 0.278, 0.283)})
    row = text.splitlines()[-1]
    assert row.startswith("| `cap`: + captioning")
    assert "| 28.9 → 27.8 → 28.3 |" in row
    assert row.count("25.0 → 25.0 → 25.0") == 3


def test_every_variant_is_a_training_option_of_the_script() -> None:
    bench = _bench()
    fields = set(bench.tiny_vlm.TrainConfig.__dataclass_fields__)
    for name, (_, options) in bench.VARIANTS.items():
        assert set(options) <= fields, name
        bench.tiny_vlm.TrainConfig(**options).check()


def test_unknown_variant_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench().main(["--out", str(tmp_path), "--only", "capp", "-q"]) == 2
    assert capsys.readouterr().err.strip().startswith("error: --only capp: not a variant")


def test_finished_variants_are_reused_not_retrained(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench()
    _finished(tmp_path)

    def refuse(*args: object, **kwargs: object) -> int:
        raise AssertionError("a finished variant was trained again")

    monkeypatch.setattr(bench.tiny_vlm, "main", refuse)
    assert bench.main(["--out", str(tmp_path), "--only", "cap", "-q"]) == 0
    assert "30.0 → 40.0 → 35.0" in (tmp_path / "search.md").read_text()
    record = json.loads((tmp_path / "search.json").read_text())
    assert record["cap"]["options"] == {"caption_weight": 1.0}


def test_another_lr_reuses_the_base_and_keeps_its_own_demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bench = _bench()
    _finished(tmp_path)
    (tmp_path / "cap" / "demo-lr0.0003").mkdir()
    (tmp_path / "cap" / "demo-lr0.0003" / "demo.json").write_text(
        json.dumps(_summary(0.3, 0.5, 0.45))
    )
    monkeypatch.setattr(bench.tiny_vlm, "main", lambda *a, **k: 1 / 0)
    assert bench.main(["--out", str(tmp_path), "--only", "cap", "--lr", "3e-4", "-q"]) == 0
    assert "30.0 → 50.0 → 45.0" in (tmp_path / "search-lr0.0003.md").read_text()
    assert not (tmp_path / "search.md").exists()


def test_every_demo_option_off_its_default_names_its_own_folder() -> None:
    bench = _bench()
    assert bench.suffix(bench.DEMO_DEFAULTS) == ""
    seen = set()
    for key, value in {"saber_per_n": 200, "steps": 600, "threads": 2, "lr": 3e-4}.items():
        tag = bench.suffix({**bench.DEMO_DEFAULTS, key: value})
        assert tag and tag not in seen, key
        seen.add(tag)
