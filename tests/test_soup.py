"""``bindkit soup``: the soup adapter's merged update is the weighted mean of its sources'."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bindkit.cli import main

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from tests.test_lines import _bert, _merged  # noqa: E402


def _adapter(base: Path, out: Path, seed: int, rank: int, alpha: float) -> None:
    from transformers import BertModel

    from bindkit.train.lora import add_lora, lora_layers, save_adapter

    model = BertModel.from_pretrained(base)
    torch.manual_seed(seed)
    add_lora(model, rank=rank, alpha=alpha)
    with torch.no_grad():  # a trained-looking update: B is zero at init
        for _, layer in lora_layers(model):
            layer.lora_B["default"].weight.normal_()
    save_adapter(model, out)


@pytest.mark.parametrize("weights", [None, [0.25, 0.75]])
def test_soup_update_is_the_weighted_mean_of_the_updates(
    tmp_path: Path, weights: list[float] | None
) -> None:
    from transformers import BertModel

    base = _bert(tmp_path)
    _adapter(base, tmp_path / "a", seed=1, rank=2, alpha=4.0)  # scale 2
    _adapter(base, tmp_path / "b", seed=2, rank=4, alpha=2.0)  # scale 0.5: scales differ
    extra = ["--weights", *map(str, weights)] if weights else []
    args = ["soup", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "s")]
    assert main([*args, *extra]) == 0
    w1, w2 = weights or (0.5, 0.5)
    record = json.loads((tmp_path / "s" / "soup.json").read_text())
    assert record["rank"] == 6 and record["weights"] == [w1, w2]
    original = dict(BertModel.from_pretrained(base).state_dict())
    a, b = _merged(base, tmp_path / "a"), _merged(base, tmp_path / "b")
    soup = _merged(base, tmp_path / "s")
    checked = 0
    for name, weight in original.items():
        want = w1 * (a[name] - weight) + w2 * (b[name] - weight)
        torch.testing.assert_close(soup[name] - weight, want, rtol=1e-5, atol=1e-6)
        checked += float(want.abs().max()) > 0
    assert checked == 16  # q, k, v, output.dense in each of the 4 layers


def test_soup_refuses_mismatched_or_single_adapters(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _bert(tmp_path)
    _adapter(base, tmp_path / "a", seed=1, rank=2, alpha=4.0)
    assert main(["soup", str(tmp_path / "a"), "--out", str(tmp_path / "s")]) == 2
    assert "two or more" in capsys.readouterr().err
    assert main(["soup", str(tmp_path / "a"), str(tmp_path), "--out", str(tmp_path / "s")]) == 2
    assert "not a peft adapter directory" in capsys.readouterr().err
    _adapter(base, tmp_path / "b", seed=2, rank=2, alpha=4.0)
    config = json.loads((tmp_path / "b" / "adapter_config.json").read_text())
    config["target_modules"] = ["query"]
    (tmp_path / "b" / "adapter_config.json").write_text(json.dumps(config))
    assert (
        main(["soup", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "s")]) == 2
    )
    assert "target_modules" in capsys.readouterr().err
    from safetensors.torch import load_file, save_file

    _adapter(base, tmp_path / "c", seed=3, rank=2, alpha=4.0)
    weights = tmp_path / "c" / "adapter_model.safetensors"
    tensors = load_file(str(weights))
    save_file({k: v for k, v in tensors.items() if ".layer.3." not in k}, str(weights))
    assert (
        main(["soup", str(tmp_path / "a"), str(tmp_path / "c"), "--out", str(tmp_path / "s")]) == 2
    )
    assert "adapts other modules" in capsys.readouterr().err
    args = ["soup", str(tmp_path / "a"), str(tmp_path / "a"), "--weights", "1", "--out", "x"]
    assert main(args) == 2
    assert "one per adapter" in capsys.readouterr().err
    assert not (tmp_path / "s").exists()
