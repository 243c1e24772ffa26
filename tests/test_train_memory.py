"""Training memory on a tiny random Qwen2-VL: gradient checkpointing gives the plain loss and
gradients (and really recomputes), an out-of-memory error becomes one line naming the knobs, and
the peak estimate against hand-computed sizes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bindkit.errors import BindkitError

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("accelerate")

from bindkit.train import memory  # noqa: E402
from bindkit.train.config import TrainConfig  # noqa: E402
from bindkit.train.trainer import train  # noqa: E402

TRIPLETS = [
    {
        "query": f"a {a} cube and a {b} kite",
        "positive": f"A {a} cube sat beside a {b} kite.",
        "negative": f"A {b} cube sat beside a {a} kite.",
    }
    for a, b in [("red", "blue"), ("striped", "gray"), ("white", "orange"), ("transparent", "red")]
]


@pytest.fixture
def triplets(tmp_path: Path) -> Path:
    path = tmp_path / "triplets.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in TRIPLETS))
    return path


def make(model: Path, train_file: Path, out: Path, **options: Any) -> TrainConfig:
    return TrainConfig(
        model=options.pop("spec", f"mllm:{model}"),
        train=str(train_file),
        out=str(out),
        **{"lr": 1e-2, "lines": False, "progress": False, "save_every": 0, **options},
    )


def test_gradient_checkpointing_gives_the_plain_loss_and_gradients(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.train import loop

    grads: dict[bool, list[Any]] = {}
    mode = {"on": False}
    layer_calls = {"count": 0}

    def record(self: Any, trainable: list[Any]) -> None:  # runs just before optimizer.step
        grads[mode["on"]] = [p.grad.clone() for p in trainable]

    def counted(module: Any) -> list[Any]:
        layers = memory.enable_checkpointing(module)
        for layer in layers:  # the layer's hooks stay outside the checkpoint; its MLP's do not
            layer.mlp.register_forward_pre_hook(lambda *_: count())
        return layers

    def count() -> None:
        layer_calls["count"] += 1

    monkeypatch.setattr(loop.Run, "all_reduce", record)
    monkeypatch.setattr(loop, "enable_checkpointing", counted)
    records = {}
    for on in (False, True):
        mode["on"] = on
        options = dict(gradient_checkpointing=on, model_dropout=False, max_steps=1, batch_size=4)
        records[on] = train(make(tiny_qwen2_vl, triplets, tmp_path / f"gc{on}", **options))
    # 4 text layers x 2 sides (queries; positives and negatives): each layer runs forward, then
    # again in the backward pass
    assert layer_calls["count"] == 2 * 4 * 2
    assert records[True]["history"][0]["loss"] == records[False]["history"][0]["loss"]
    assert any(float(g.abs().max()) > 0 for g in grads[False])  # LoRA B's, A's are 0 at step 1
    for plain, recomputed in zip(grads[False], grads[True], strict=True):
        torch.testing.assert_close(recomputed, plain, rtol=0, atol=1e-7)


def test_gradient_checkpointing_does_not_change_the_run_identity(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path
) -> None:
    from bindkit.train.reuse import run_identity

    plain = make(tiny_qwen2_vl, triplets, tmp_path / "r")
    checkpointed = make(tiny_qwen2_vl, triplets, tmp_path / "r", gradient_checkpointing=True)
    # a run that ran out of memory resumes with checkpointing on
    assert run_identity(plain) == run_identity(checkpointed)


def test_out_of_memory_names_the_knobs(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.train import loop

    def out_of_memory(self: Any) -> None:
        raise RuntimeError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(loop.Run, "run", out_of_memory)
    out = tmp_path / "r"
    with pytest.raises(BindkitError) as caught:
        train(make(tiny_qwen2_vl, triplets, out, batch_size=8, grad_accum=2))
    assert str(caught.value) == (
        f"{out}: out of memory at batch size 8; lower the peak with --gradient-checkpointing, "
        "or --chunk-size 4 (GradCache), or --batch-size 4 with --grad-accum 4; `bindkit memory` "
        "estimates a setting's peak before a run"
    )


def test_other_errors_pass_through(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.train import loop

    def broken(self: Any) -> None:
        raise RuntimeError("shape mismatch")

    monkeypatch.setattr(loop.Run, "run", broken)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        train(make(tiny_qwen2_vl, triplets, tmp_path / "r"))


def test_advice_leaves_out_the_knobs_already_set(triplets: Path) -> None:
    config = TrainConfig(
        model="m",
        train=str(triplets),
        out="o",
        batch_size=2,
        chunk_size=1,
        gradient_checkpointing=True,
    )
    assert memory.out_of_memory_advice("x", config, prefix="train.") == (
        "x: out of memory at batch size 2; lower the peak with train.batch_size = 1 with "
        "train.grad_accum = 2; `bindkit memory` estimates a setting's peak before a run"
    )


def test_estimate_by_hand() -> None:
    # 2 layers, hidden 4, intermediate 8, 2 heads of 2 (q 4), 1 kv head (kv 2), Qwen3 q/k norms
    sizes = memory.ModelSizes(
        1000, layers=2, hidden=4, intermediate=8, heads=2, kv_heads=1, head_dim=2, norm_qk=True
    )
    plain = memory.estimate_peak(sizes, sequences=3, tokens=5, weight_bytes=2, lora_r=1)
    # per token and layer, bf16: attention's q, k, v, output and the MLP's three tensors
    # (2·4 + 2·2 + 3·8 = 36 values of 2 bytes), the q/k norms' fp32 inputs (4 + 2 values of 4),
    # and fp32 copies of the two norm inputs, q/k/v's LoRA input (3x) and o's (5·4 + 4 of 4)
    assert memory.layer_bytes_per_token(sizes, 2) == 36 * 2 + 6 * 4 + 24 * 4 == 192
    # in fp32 the copies are the tensors: 3 hidden vectors (two norm inputs, one LoRA input)
    assert memory.layer_bytes_per_token(sizes, 4) == 36 * 4 + 6 * 4 + 12 * 4 == 216
    # 15 tokens: two layers, the final norm's fp32 input (4 values of 4) and cos/sin (2·2 of 2)
    assert plain.activations == 2 * 192 * 15 + (16 + 8) * 15
    assert plain.weights == 2000
    # LoRA r=1 on q (4+4), k (4+2), v (4+2), o (4+4) = 28 per layer: 56 parameters of 16 bytes,
    # plus LoRA-B's fp32 1-wide inputs (4 per token and layer)
    assert plain.lora == 56 * 16 + 2 * 4 * 15 * 4
    # the backward's gradients of one layer, and the runtime's fixed part
    assert plain.workspace == 192 * 15 + memory.RUNTIME_BYTES
    assert plain.peak == plain.weights + plain.lora + plain.activations + plain.workspace
    kept = memory.estimate_peak(
        sizes, sequences=3, tokens=5, weight_bytes=2, lora_r=1, gradient_checkpointing=True
    )
    # one bf16 hidden vector per layer and token, one layer recomputed, the final norm, cos/sin
    assert kept.activations == 2 * 4 * 15 * 2 + 192 * 15 + (16 + 8) * 15
    assert kept.workspace == memory.RUNTIME_BYTES


def test_text_sizes_read_nested_and_flat_configs() -> None:
    from bindkit.embed.shapes import SHAPES

    qwen3 = memory.text_sizes(SHAPES["qwen3-vl-embedding-2b"].read_config(), 1)
    assert (qwen3.layers, qwen3.hidden, qwen3.heads, qwen3.kv_heads, qwen3.head_dim) == (
        28,
        2048,
        16,
        8,
        128,
    )
    assert qwen3.norm_qk
    bert = memory.text_sizes(SHAPES["all-minilm-l6-v2"].read_config(), 1)
    assert (bert.layers, bert.hidden, bert.kv_heads, bert.head_dim, bert.norm_qk) == (
        6,
        384,
        12,
        32,
        False,
    )


def test_lora_on_a_bf16_base_trains_in_fp32(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path
) -> None:
    from bindkit.adapters.lora import add_lora
    from bindkit.train.model import load_trainable

    embedder = load_trainable(f"mllm:{tiny_qwen2_vl}+dtype=bfloat16", None)
    add_lora(embedder.module)
    lora = {n: p for n, p in embedder.module.named_parameters() if ".lora_" in n}
    assert lora and {p.dtype for p in lora.values()} == {torch.float32}
    base = [p for n, p in embedder.module.named_parameters() if ".lora_" not in n]
    assert {p.dtype for p in base} == {torch.bfloat16}
    # a step as small as 1e-5 on a weight of about 0.1 still moves it (in bf16 it rounds away)
    record = train(
        make(
            tiny_qwen2_vl,
            triplets,
            tmp_path / "bf16",
            spec=f"mllm:{tiny_qwen2_vl}+dtype=bfloat16",
            lr=1e-5,
            max_steps=2,
            batch_size=2,
            model_dropout=False,
        )
    )
    from safetensors.torch import load_file

    after = load_file(str(tmp_path / "bf16" / "adapter-raw" / "adapter_model.safetensors"))
    a = next(k for k in after if "lora_A" in k)
    assert after[a].dtype == torch.float32
    start = lora[a.replace("base_model.model.", "").replace(".weight", ".default.weight")]
    assert record["optimizer_steps"] == 2
    assert float((after[a] - start.detach()).abs().max()) > 0
