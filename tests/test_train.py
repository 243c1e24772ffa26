"""``bindkit train triplets`` on a tiny random Qwen2-VL: LoRA placement, a step, resume, errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("accelerate")

from bindkit.train.config import TrainConfig  # noqa: E402
from bindkit.train.trainer import train_triplets  # noqa: E402

ROWS = [
    {
        "query": f"a {a} cube and a {b} kite",
        "positive": f"A {a} cube sat beside a {b} kite.",
        "negative": f"A {b} cube sat beside a {a} kite.",
        "type": "double_bind",
        "negative_kind": "attribute",
    }
    for a, b in [("red", "blue"), ("striped", "gray"), ("white", "orange"), ("transparent", "red")]
    * 3
]


def write_rows(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def triplets(tmp_path: Path) -> Path:
    return write_rows(tmp_path / "train.jsonl", ROWS)


def config(model: Path, train: Path, out: Path, **options: Any) -> TrainConfig:
    defaults: dict[str, Any] = dict(
        lr=1e-2, batch_size=4, lines=False, progress=False, save_every=0
    )
    return TrainConfig(
        model=f"mllm:{model}", train=str(train), out=str(out), **{**defaults, **options}
    )


def test_lora_only_on_text_attention_and_a_step_trains(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path
) -> None:
    from bindkit.adapters.lora import add_lora
    from bindkit.train.model import load_trainable

    embedder = load_trainable(f"mllm:{tiny_qwen2_vl}", None)
    before = {n: p.detach().clone() for n, p in embedder.module.named_parameters()}
    add_lora(embedder.module)
    lora = sorted(
        {n.rsplit(".lora_", 1)[0] for n, _ in embedder.module.named_parameters() if ".lora_" in n}
    )
    expected = sorted(
        f"language_model.layers.{i}.self_attn.{p}_proj" for i in range(4) for p in "qkvo"
    )
    assert lora == expected  # every text layer, q/k/v/o, nothing in the vision tower or MLP
    trainable = {n for n, p in embedder.module.named_parameters() if p.requires_grad}
    assert trainable and all(".lora_" in n for n in trainable)

    record = train_triplets(config(tiny_qwen2_vl, triplets, tmp_path / "run", max_steps=2))
    assert record["optimizer_steps"] == 2
    loaded = _peft_model(tiny_qwen2_vl, tmp_path / "run" / "adapter-raw")
    after = {
        n.replace(".base_layer", ""): p
        for n, p in loaded.get_base_model().named_parameters()
        if ".lora_" not in n
    }
    for name, value in before.items():  # the base, vision tower included, is untouched
        assert torch.equal(after[name], value), name
    weights = {n: p for n, p in loaded.named_parameters() if "lora_B" in n}
    assert len(weights) == 16 and any(float(p.abs().sum()) > 0 for p in weights.values())
    assert not any("visual" in n for n in weights)
    card = (tmp_path / "run" / "model_card.md").read_text()
    assert "base model" in card and record["base_fingerprint"] in card


def _peft_model(base: Path, adapter: Path) -> Any:
    from peft import PeftModel
    from transformers import AutoModel

    return PeftModel.from_pretrained(AutoModel.from_pretrained(base), adapter)


def test_resumed_run_equals_uninterrupted(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from safetensors.torch import load_file

    from bindkit.train.losses import TripletHingeLoss

    full = tmp_path / "full"
    train_triplets(config(tiny_qwen2_vl, triplets, full, batch_size=2))
    assert not (full / "checkpoint" / "state.pt").exists()  # a finished run drops it

    interrupted = tmp_path / "interrupted"
    original = TripletHingeLoss.forward
    calls = {"n": 0}

    def dies_in_step_four(self: Any, *args: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 4:
            raise KeyboardInterrupt
        return original(self, *args)

    monkeypatch.setattr(TripletHingeLoss, "forward", dies_in_step_four)
    with pytest.raises(KeyboardInterrupt):
        train_triplets(config(tiny_qwen2_vl, triplets, interrupted, batch_size=2, save_every=2))
    monkeypatch.setattr(TripletHingeLoss, "forward", original)
    assert (interrupted / "checkpoint" / "state.pt").is_file()
    assert not (interrupted / "adapter-raw").exists()

    train_triplets(config(tiny_qwen2_vl, triplets, interrupted, batch_size=2))
    a = load_file(str(full / "adapter-raw" / "adapter_model.safetensors"))
    b = load_file(str(interrupted / "adapter-raw" / "adapter_model.safetensors"))
    assert a.keys() == b.keys()
    for key in a:
        torch.testing.assert_close(a[key], b[key], rtol=0, atol=1e-6)
    history = json.loads((interrupted / "train.json").read_text())["history"]
    assert [h["step"] for h in history] == list(range(1, len(ROWS) // 2 + 1))


def test_checkpoint_of_other_options_is_refused(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.train import loop

    def stop(self: Any, *args: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(loop.Run, "finish", stop)
    with pytest.raises(KeyboardInterrupt):
        train_triplets(config(tiny_qwen2_vl, triplets, tmp_path / "r", batch_size=2, save_every=1))
    monkeypatch.undo()
    with pytest.raises(BindkitError, match="checkpoint of a run with other options"):
        train_triplets(config(tiny_qwen2_vl, triplets, tmp_path / "r", batch_size=2, lr=1e-3))


def test_finished_run_is_not_overwritten(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path
) -> None:
    train_triplets(config(tiny_qwen2_vl, triplets, tmp_path / "r", max_steps=1))
    with pytest.raises(BindkitError, match="finished run"):
        train_triplets(config(tiny_qwen2_vl, triplets, tmp_path / "r", max_steps=1))
    train_triplets(config(tiny_qwen2_vl, triplets, tmp_path / "r", max_steps=1, overwrite=True))


def test_auxiliary_losses_are_added(tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path) -> None:
    seen: list[Any] = []

    def extra(step: Any) -> Any:
        seen.append(step)
        return 100.0 * step.embeddings["query"].pow(2).sum() * 0

    record = train_triplets(
        config(tiny_qwen2_vl, triplets, tmp_path / "r", max_steps=2), auxiliary_losses=[extra]
    )
    assert len(seen) == 2 and len(seen[0].rows) == 4
    assert set(seen[0].batches) == {"query", "documents"}
    assert record["optimizer_steps"] == 2


@pytest.mark.parametrize("dropout", [True, False])
def test_model_dropout_sets_the_training_mode(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, dropout: bool
) -> None:
    modes: list[bool] = []

    def spy(step: Any) -> Any:
        modes.append(step.embedder.module.training)
        return step.embeddings["query"].sum() * 0

    train_triplets(
        config(tiny_qwen2_vl, triplets, tmp_path / "r", max_steps=2, model_dropout=dropout),
        auxiliary_losses=[spy],
    )
    assert modes == [dropout, dropout]


def test_lines_sweep_and_adapters(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    record = train_triplets(
        config(
            tiny_qwen2_vl,
            triplets,
            tmp_path / "r",
            lines=True,
            val=str(triplets),
            max_steps=2,
            progress=True,
        )
    )
    err = capsys.readouterr().err
    assert err.count("LiNeS: alpha ") >= 10  # issue 21: the sweep reports each point
    lines = record["lines"]
    assert lines["num_layers"] == 4 and len(lines["sweep"]) == 11
    raw = next(p for p in lines["sweep"] if p["alpha"] == 1.0)["val_triplet_accuracy"]
    kept = [p["alpha"] for p in lines["sweep"] if p["val_triplet_accuracy"] >= raw - 0.01]
    assert lines["alpha"] == min(kept)
    assert (
        json.loads((tmp_path / "r" / "adapter-lines" / "lines.json").read_text())["alpha"]
        == lines["alpha"]
    )
    assert "LiNeS" in (tmp_path / "r" / "adapter-lines" / "README.md").read_text()


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([{"query": "a", "positive": "b"}], "field 'negative'"),
        ([], "no triplets"),
    ],
)
def test_bad_triplet_files(
    tiny_qwen2_vl: Path, tmp_path: Path, rows: list[dict[str, Any]], message: str
) -> None:
    path = write_rows(tmp_path / "bad.jsonl", rows)
    with pytest.raises(BindkitError, match=message):
        train_triplets(config(tiny_qwen2_vl, path, tmp_path / "r"))


def test_cli_errors_are_one_line(
    tiny_qwen2_vl: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = write_rows(tmp_path / "bad.jsonl", [{"query": "a", "positive": "b", "negative": ""}])
    argv = ["train", "triplets", "--model", f"mllm:{tiny_qwen2_vl}", "--train", str(bad)]
    assert main([*argv, "--out", str(tmp_path / "r"), "--no-lines"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "field 'negative'" in err
    assert (
        main(
            ["train", "triplets", "--model", "bow", "--train", str(bad), "--out", "x", "--lr", "0"]
        )
        == 2
    )
    assert "--lr 0" in capsys.readouterr().err


def test_lines_needs_val_or_alpha(tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match="--val"):
        train_triplets(config(tiny_qwen2_vl, triplets, tmp_path / "r", lines=True))


def test_model_without_attention_modules(tmp_path: Path, triplets: Path) -> None:
    from bindkit.adapters.lora import add_lora

    with pytest.raises(BindkitError, match="no attention modules"):
        add_lora(_mlp_model(tmp_path))
    with pytest.raises(BindkitError, match="no trainable torch path"):
        train_triplets(
            TrainConfig(model="bow", train=str(triplets), out=str(tmp_path / "b"), lines=False)
        )


def _mlp_model(tmp_path: Path) -> Any:
    from transformers import GPT2Config, GPT2Model

    # GPT-2 names its attention c_attn/c_proj: none of the known attention names
    return GPT2Model(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=10, n_positions=8))


def test_config_validates_and_cli_flags_follow_fields() -> None:
    import argparse
    import dataclasses

    from bindkit.train.config import add_arguments

    with pytest.raises(BindkitError, match="--batch-size 0"):
        TrainConfig(model="m", train=__file__, out="o", batch_size=0)
    with pytest.raises(BindkitError, match="--train nope"):
        TrainConfig(model="m", train="nope", out="o")
    with pytest.raises(BindkitError, match="--precision"):
        TrainConfig(model="m", train=__file__, out="o", precision="fp8")
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(
        ["--model", "m", "--train", __file__, "--out", "o", "--no-lines", "--lines-alpha", "0.3"]
    )
    assert args.lines is False and args.lines_alpha == 0.3 and args.lr == 5e-5
    flags = {a.dest for a in parser._actions} - {"help"}
    assert flags == {f.name for f in dataclasses.fields(TrainConfig)}


def test_trained_adapter_loads_through_the_spec(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path
) -> None:
    from bindkit.embed import load_embedder

    record = train_triplets(
        config(tiny_qwen2_vl, triplets, tmp_path / "r", max_steps=2, val=str(triplets))
    )
    adapter = tmp_path / "r" / "adapter-raw"
    tuned = load_embedder(f"mllm:{tiny_qwen2_vl}+adapter={adapter}", cache=False)
    base = load_embedder(f"mllm:{tiny_qwen2_vl}", cache=False)
    assert tuned.fingerprint != base.fingerprint
    from bindkit.train.evaluation import triplet_accuracy

    assert triplet_accuracy(tuned, ROWS) == pytest.approx(
        record["scores"]["raw"]["val_triplet_accuracy"]
    )
    with pytest.raises(BindkitError, match="made for another base model"):
        load_embedder(f"st:default+adapter={adapter}", cache=False)


def test_attention_loss_is_wired(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.train import losses

    calls: list[float] = []
    original = losses.attention_penalty

    def counted(margins: Any, tau: float) -> Any:
        calls.append(tau)
        return original(margins, tau)

    monkeypatch.setattr(losses, "attention_penalty", counted)
    record = train_triplets(
        config(tiny_qwen2_vl, triplets, tmp_path / "r", max_steps=2, attn_loss=True, attn_tau=0.3)
    )
    assert calls == [0.3, 0.3] and record["config"]["attn_loss"] is True


def test_plan_order_is_seeded_and_sharded() -> None:
    from bindkit.train.plan import Plan

    plan = Plan(rows=10, batch_size=2, world=2, epochs=2, seed=3)
    assert plan.order == Plan(rows=10, batch_size=2, world=2, epochs=2, seed=3).order
    assert len(plan.order) == 6  # 10 rows → batches of 4, 4, 2 per epoch
    assert sorted(i for batch in plan.order[:3] for i in batch) == list(range(10))
    assert plan.order[:3] != plan.order[3:]  # each epoch reshuffles
    assert plan.shard(0, 0) == plan.order[0][0::2] and plan.shard(0, 1) == plan.order[0][1::2]
    assert [len(b) for b in Plan(rows=9, batch_size=2, world=2, epochs=1, seed=0).order] == [4, 4]
    other = Plan(rows=10, batch_size=2, world=1, epochs=1, seed=5).order
    assert Plan(rows=10, batch_size=2, world=1, epochs=1, seed=4).order != other


def test_a_plan_builds_only_the_epochs_it_reaches() -> None:
    """--epochs 1e12 with --max-steps 2 used to build every epoch's permutation up front."""
    from bindkit.train.plan import Plan

    huge = Plan(rows=10, batch_size=2, world=2, epochs=10**12, seed=3)
    small = Plan(rows=10, batch_size=2, world=2, epochs=2, seed=3)
    assert huge.total == 3 * 10**12 and small.total == len(small.order) == 6
    assert [huge.batch(m) for m in range(6)] == small.order
    assert huge.shard(4, 1) == small.order[4][1::2]


def test_relational_preservation_alone_builds_the_preservation_term(
    tiny_qwen2_vl: Path, triplets: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--preserve-weight 0 with --preserve-relational > 0 still preserves, with both weights."""
    import bindkit.train.auxiliary as auxiliary

    built: list[tuple[float, float]] = []
    original = auxiliary.PreservationTerm.__init__

    def spy(self: Any, embedder: Any, sentences: Any, batch: int, weight: float, rel: float = 0.0):  # type: ignore[no-untyped-def]
        built.append((weight, rel))
        original(self, embedder, sentences, batch, weight, rel)

    monkeypatch.setattr(auxiliary.PreservationTerm, "__init__", spy)
    sentences = tmp_path / "preserve.txt"
    sentences.write_text("a man walks a dog\nthe sky is grey today\nsome people sit\n")
    train_triplets(
        config(
            tiny_qwen2_vl,
            triplets,
            tmp_path / "r",
            max_steps=1,
            preserve=str(sentences),
            preserve_weight=0.0,
            preserve_relational=3.0,
            preserve_batch=3,
        )
    )
    assert built == [(0.0, 3.0)]


@pytest.mark.parametrize("loss", ["hinge", "infonce"])
def test_the_triplet_objective_uses_the_chosen_loss(
    loss: str, triplets: Path, tmp_path: Path
) -> None:
    from bindkit.train.losses import triplet_hinge, triplet_infonce
    from bindkit.train.objectives import Batch, TripletObjective

    chosen = TrainConfig(
        model="bow",
        train=str(triplets),
        out=str(tmp_path / "o"),
        loss=loss,
        **({"temperature": 0.1} if loss == "infonce" else {"margin": 0.3}),
    )
    objective = TripletObjective(chosen)
    generator = torch.Generator().manual_seed(0)
    q, d = (
        torch.nn.functional.normalize(torch.randn(n, 8, generator=generator), dim=-1)
        for n in (3, 6)
    )
    got = objective.loss([q, d], Batch(ROWS[:3], []), 3)
    want = (
        triplet_infonce(q, d[:3], d[3:], 0.1)
        if loss == "infonce"
        else triplet_hinge(q, d[:3], d[3:], 0.3)
    )
    torch.testing.assert_close(got, want)
    assert float(objective.share(got)) == pytest.approx(float(want))
