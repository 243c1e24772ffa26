"""LiNeS: λ(ℓ) = α + β·ℓ/(L−1); a LiNeS adapter's merged update is λ(ℓ) times the raw one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bindkit.adapters.lines import lines_factors
from bindkit.adapters.lora import layer_index
from bindkit.cli import main
from bindkit.errors import BindkitError

torch = pytest.importorskip("torch")
pytest.importorskip("peft")


def test_factors_by_hand() -> None:
    assert lines_factors(5, 0.2) == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert lines_factors(3, 0.1, 0.5) == pytest.approx([0.1, 0.35, 0.6])
    assert lines_factors(1, 0.3) == [1.0]
    with pytest.raises(BindkitError, match="--alpha"):
        lines_factors(4, 1.5)


def test_layer_index_is_anchored() -> None:
    assert layer_index("base_model.model.encoder.layer.11.attention.self.query.lora_B.weight") == 11
    assert layer_index("model.language_model.layers.3.self_attn.q_proj.lora_A.weight") == 3
    assert layer_index("model.visual.blocks.2.attn.qkv.lora_B.weight") is None
    assert layer_index("model.visual.merger.layers.1.weight") is None
    assert layer_index("embeddings.word_embeddings.weight") is None


def _bert(tmp_path: Path) -> Path:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30,
        hidden_size=16,
        num_hidden_layers=4,
        num_attention_heads=2,
        intermediate_size=20,
        max_position_embeddings=16,
    )
    BertModel(config).save_pretrained(tmp_path / "base")
    return tmp_path / "base"


def _raw_adapter(base: Path, out: Path, rslora: bool = False) -> None:
    from transformers import BertModel

    from bindkit.adapters.lora import add_lora, lora_layers, save_adapter

    model = BertModel.from_pretrained(base)
    add_lora(model, rank=2, alpha=4.0)
    model._bindkit_lora_config.use_rslora = rslora  # peft's scale lora_alpha/√r
    with torch.no_grad():  # a trained-looking update: B is zero at init
        for _, layer in lora_layers(model):
            layer.lora_B["default"].weight.normal_()
    save_adapter(model, out)


def _merged(base: Path, adapter: Path) -> dict[str, Any]:
    from peft import PeftModel
    from transformers import BertModel

    model = PeftModel.from_pretrained(BertModel.from_pretrained(base), adapter).merge_and_unload()
    return dict(model.state_dict())


def test_merged_minus_base_is_lambda_times_delta(tmp_path: Path) -> None:
    from transformers import BertModel

    base = _bert(tmp_path)
    _raw_adapter(base, tmp_path / "raw")
    assert (
        main(["lines", str(tmp_path / "raw"), "--alpha", "0.25", "--out", str(tmp_path / "lines")])
        == 0
    )
    record = json.loads((tmp_path / "lines" / "lines.json").read_text())
    assert record["num_layers"] == 4 and record["factors"] == pytest.approx([0.25, 0.5, 0.75, 1.0])
    original = dict(BertModel.from_pretrained(base).state_dict())
    raw, scaled = _merged(base, tmp_path / "raw"), _merged(base, tmp_path / "lines")
    checked = 0
    for name, weight in original.items():
        delta = raw[name] - weight
        layer = layer_index(name)
        if layer is None or float(delta.abs().max()) == 0:
            torch.testing.assert_close(scaled[name], weight)
            continue
        torch.testing.assert_close(
            scaled[name] - weight, record["factors"][layer] * delta, rtol=1e-5, atol=1e-6
        )
        checked += 1
    assert checked == 16  # q, k, v, output.dense in each of the 4 layers


@pytest.mark.parametrize("rslora", [False, True])
def test_live_scaling_matches_the_written_adapter(tmp_path: Path, rslora: bool) -> None:
    """The α sweep's live scaling equals the written LiNeS adapter, and None restores the raw
    update, for plain and rsLoRA adapters alike (scale lora_alpha/r or lora_alpha/√r)."""
    from peft import PeftModel
    from transformers import BertModel

    from bindkit.adapters.lines import apply_lines, scale_live

    base = _bert(tmp_path)
    _raw_adapter(base, tmp_path / "raw", rslora=rslora)
    apply_lines(tmp_path / "raw", tmp_path / "lines", alpha=0.4)
    ids = torch.tensor([[1, 5, 7, 9, 2]])
    live = PeftModel.from_pretrained(BertModel.from_pretrained(base), tmp_path / "raw")
    scale_live(live, lines_factors(4, 0.4), 0.4)
    written = PeftModel.from_pretrained(BertModel.from_pretrained(base), tmp_path / "lines")
    with torch.no_grad():
        torch.testing.assert_close(live(ids).last_hidden_state, written(ids).last_hidden_state)
        scale_live(live, None)
        raw = PeftModel.from_pretrained(BertModel.from_pretrained(base), tmp_path / "raw")
        torch.testing.assert_close(live(ids).last_hidden_state, raw(ids).last_hidden_state)


def test_bad_adapter_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lines", str(tmp_path), "--alpha", "0.1", "--out", str(tmp_path / "o")]) == 2
    assert "not a peft adapter directory" in capsys.readouterr().err


def test_an_existing_out_needs_overwrite_and_is_then_replaced_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _bert(tmp_path)
    _raw_adapter(base, tmp_path / "raw")
    _raw_adapter(base, tmp_path / "other")
    (tmp_path / "other" / "README.md").write_text("the other adapter's card\n")
    (tmp_path / "other" / "NOTES.txt").write_text("notes\n")
    before = {p.name: p.read_bytes() for p in (tmp_path / "other").iterdir()}
    args = ["lines", str(tmp_path / "raw"), "--alpha", "0.5", "--out", str(tmp_path / "other")]
    assert main(args) == 2
    assert "holds an adapter; pass --overwrite" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in (tmp_path / "other").iterdir()} == before
    assert main([*args, "--overwrite"]) == 0
    # the source's files and the LiNeS record; nothing of the replaced adapter is left
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == [
        "adapter_config.json",
        "adapter_model.safetensors",
        "lines.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["base", "other", "raw"]


def test_an_update_outside_the_numbered_layers_is_scaled_by_alpha(tmp_path: Path) -> None:
    """LiNeS scales a weight outside the layers (here BERT's pooler, a projection head) by α,
    the shallowest factor, in the written adapter and in the α sweep's live scaling alike."""
    from peft import LoraConfig, PeftModel, inject_adapter_in_model
    from transformers import BertModel

    from bindkit.adapters.lines import apply_lines, scale_live
    from bindkit.adapters.lora import TARGET_MODULES, lora_layers, save_adapter

    base = _bert(tmp_path)
    model = BertModel.from_pretrained(base)
    config = LoraConfig(r=2, lora_alpha=4.0, target_modules=TARGET_MODULES + r"|^pooler\.dense")
    inject_adapter_in_model(config, model)
    model._bindkit_lora_config = config
    with torch.no_grad():
        for _, layer in lora_layers(model):
            layer.lora_B["default"].weight.normal_()
    save_adapter(model, tmp_path / "raw")
    alpha = 0.25
    record = apply_lines(tmp_path / "raw", tmp_path / "lines", alpha=alpha)
    assert layer_index("pooler.dense.weight") is None and record["num_layers"] == 4
    original = dict(BertModel.from_pretrained(base).state_dict())
    raw, scaled = _merged(base, tmp_path / "raw"), _merged(base, tmp_path / "lines")
    delta = raw["pooler.dense.weight"] - original["pooler.dense.weight"]
    assert float(delta.abs().max()) > 0
    torch.testing.assert_close(
        scaled["pooler.dense.weight"] - original["pooler.dense.weight"],
        alpha * delta,
        rtol=1e-5,
        atol=1e-6,
    )
    ids = torch.tensor([[1, 5, 7, 9, 2]])
    live = PeftModel.from_pretrained(BertModel.from_pretrained(base), tmp_path / "raw")
    scale_live(live, record["factors"], alpha)
    written = PeftModel.from_pretrained(BertModel.from_pretrained(base), tmp_path / "lines")
    with torch.no_grad():
        torch.testing.assert_close(live(ids).pooler_output, written(ids).pooler_output)
        scale_live(live, None)
        assert not torch.allclose(live(ids).pooler_output, written(ids).pooler_output)


def test_attaching_an_adapter_passes_on_no_deprecation_peft_trips_over(tmp_path: Path) -> None:
    """peft reads ``model.is_gradient_checkpointing``, which transformers 5.25 deprecates: one
    FutureWarning per attached model (29 lines in a demo's log). bindkit attaches quietly."""
    import warnings

    from transformers import BertModel

    from bindkit.adapters.lora import attach_adapter

    base = _bert(tmp_path)
    _raw_adapter(base, tmp_path / "adapter")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        attach_adapter(BertModel.from_pretrained(base), tmp_path / "adapter")
    assert [str(w.message) for w in caught if "is_gradient_checkpointing" in str(w.message)] == []
