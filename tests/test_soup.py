"""``bindkit soup``: the soup adapter's merged update is the weighted mean of its sources'."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from tests.test_lines import _bert, _merged  # noqa: E402


def _adapter(
    base: Path, out: Path, seed: int, rank: int, alpha: float, rslora: bool = False
) -> None:
    from transformers import BertModel

    from bindkit.adapters.lora import add_lora, lora_layers, save_adapter

    model = BertModel.from_pretrained(base)
    torch.manual_seed(seed)
    add_lora(model, rank=rank, alpha=alpha)
    # rsLoRA (peft's scale lora_alpha/√r): bindkit never trains it, but a soup may be given one
    model._bindkit_lora_config.use_rslora = rslora
    with torch.no_grad():  # a trained-looking update: B is zero at init
        for _, layer in lora_layers(model):
            layer.lora_B["default"].weight.normal_()
    save_adapter(model, out)


@pytest.mark.parametrize(
    ("weights", "rslora"),
    [(None, ""), ([0.25, 0.75], ""), (None, "ab"), ([0.25, 0.75], "b")],
    ids=["mean", "weighted", "rslora", "rslora-second-only"],
)
def test_soup_update_is_the_weighted_mean_of_the_updates(
    tmp_path: Path, weights: list[float] | None, rslora: str
) -> None:
    """Against peft's own merge of each adapter; with rsLoRA inputs (scale lora_alpha/√r) the
    soup's lora_alpha must make peft's scale of the rank-6 soup the first input's."""
    from transformers import BertModel

    base = _bert(tmp_path)
    _adapter(base, tmp_path / "a", seed=1, rank=2, alpha=4.0, rslora="a" in rslora)
    _adapter(base, tmp_path / "b", seed=2, rank=4, alpha=2.0, rslora="b" in rslora)
    extra = ["--weights", *map(str, weights)] if weights else []
    args = ["soup", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "s")]
    assert main([*args, *extra]) == 0
    w1, w2 = weights or (0.5, 0.5)
    record = json.loads((tmp_path / "s" / "soup.json").read_text())
    assert record["rank"] == 6 and record["weights"] == [w1, w2]
    config = json.loads((tmp_path / "s" / "adapter_config.json").read_text())
    assert config["use_rslora"] is ("a" in rslora)
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


def _tiny(out: Path, seed: int) -> None:
    """A tiny peft LoRA adapter of one module (no model needed), with a card and a note."""
    from safetensors.torch import save_file

    config = {"peft_type": "LORA", "r": 2, "lora_alpha": 2, "target_modules": ["query"]}
    key = "base_model.model.encoder.layer.0.attention.self.query"
    generator = torch.Generator().manual_seed(seed)
    out.mkdir(parents=True)
    (out / "adapter_config.json").write_text(json.dumps(config))
    tensors = {
        f"{key}.lora_A.weight": torch.randn(2, 4, generator=generator),
        f"{key}.lora_B.weight": torch.randn(4, 2, generator=generator),
    }
    save_file(tensors, str(out / "adapter_model.safetensors"))
    (out / "README.md").write_text(f"card of seed {seed}\n")


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_an_existing_out_needs_overwrite_and_is_then_replaced_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, seed in (("a", 1), ("b", 2), ("c", 3)):
        _tiny(tmp_path / name, seed)
    (tmp_path / "c" / "NOTES.txt").write_text("notes\n")
    before = _files(tmp_path / "c")
    args = ["soup", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "c")]
    assert main(args) == 2
    assert "holds an adapter; pass --overwrite" in capsys.readouterr().err
    assert _files(tmp_path / "c") == before
    assert main([*args, "--overwrite"]) == 0
    # the old card and note are gone with the old weights: nothing stale beside the soup
    assert sorted(_files(tmp_path / "c")) == [
        "adapter_config.json",
        "adapter_model.safetensors",
        "soup.json",
    ]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "c"]  # no staging left


@pytest.mark.parametrize("overwrite", [False, True])
def test_a_second_writer_of_the_same_out_never_mixes_two_soups(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    overwrite: bool,
) -> None:
    """Another soup finishes into OUT while this one is writing its weights (staged under its
    own name): without --overwrite this one refuses and OUT keeps the other's adapter whole;
    with it, OUT is this one's adapter whole."""
    import safetensors.torch

    from bindkit.adapters.soup import average_adapters

    for name, seed in (("a", 1), ("b", 2)):
        _tiny(tmp_path / name, seed)
    out = tmp_path / "o"
    original = safetensors.torch.save_file
    raced: list[dict[str, bytes]] = []

    def racing(tensors: Any, path: str, metadata: Any = None) -> None:
        if not raced:
            raced.append({})
            monkeypatch.setattr(safetensors.torch, "save_file", original)
            average_adapters([tmp_path / "a", tmp_path / "b"], out, [0.9, 0.1])
            monkeypatch.setattr(safetensors.torch, "save_file", racing)
            raced[0] = _files(out)
        original(tensors, path, metadata=metadata)

    monkeypatch.setattr(safetensors.torch, "save_file", racing)
    args = ["soup", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(out)]
    rc = main([*args, *(["--overwrite"] if overwrite else [])])
    theirs = raced[0]
    assert json.loads(theirs["soup.json"])["weights"] == [0.9, 0.1]
    if overwrite:
        assert rc == 0
        assert json.loads(_files(out)["soup.json"])["weights"] == [0.5, 0.5]
        assert _files(out)["adapter_model.safetensors"] != theirs["adapter_model.safetensors"]
    else:
        assert rc == 2
        assert "another writer created it meanwhile" in capsys.readouterr().err
        assert _files(out) == theirs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b", "o"]


def test_nan_in_an_input_is_refused_naming_the_file_and_tensor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from safetensors.torch import load_file, save_file

    for name, seed in (("a", 1), ("b", 2)):
        _tiny(tmp_path / name, seed)
    weights = tmp_path / "b" / "adapter_model.safetensors"
    tensors = load_file(str(weights))
    key = sorted(tensors)[1]
    tensors[key][0, 0] = float("nan")
    save_file(tensors, str(weights))
    args = ["soup", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "o")]
    assert main(args) == 2
    assert f"{weights}: tensor {key} holds NaN or inf" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()
