"""``bindkit train triplets --model builtin:tiny-clip``: LoRA on the text tower only, the image
tower untouched, the adapter loads back with ``builtin:tiny-clip+adapter=DIR``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from bindkit.cli import main
from bindkit.embed.registry import load_embedder

torch = pytest.importorskip("torch")
pytest.importorskip("peft")
pytest.importorskip("accelerate")
from PIL import Image  # noqa: E402

ROWS = [
    {
        "query": f"a {a} cube and a {b} heart",
        "positive": f"a {b} heart and a {a} cube",
        "negative": f"a {b} cube and a {a} heart",
    }
    for a, b in [("red", "blue"), ("striped", "green"), ("white", "orange")] * 4
]


def test_lora_goes_on_the_text_attention_only() -> None:
    from bindkit.adapters.lora import add_lora
    from bindkit.train.model import load_trainable

    embedder = load_trainable("builtin:tiny-clip", None)
    add_lora(embedder.module)
    adapted = sorted(
        {n.rsplit(".lora_", 1)[0] for n, _ in embedder.module.named_parameters() if ".lora_" in n}
    )
    assert adapted == [f"text.layers.{i}.{p}" for i in range(2) for p in ("out", "qkv")]
    trainable = [n for n, p in embedder.module.named_parameters() if p.requires_grad]
    assert trainable and all(".lora_" in n for n in trainable)


def test_cli_trains_and_the_adapter_loads_through_the_spec(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    out = tmp_path / "run"
    code = main(
        ["train", "triplets", "--model", "builtin:tiny-clip", "--train", str(train), "--out",
         str(out), "--lr", "1e-2", "--batch-size", "4", "--lines-alpha", "0.5", "--save-every",
         "0", "--no-progress"]
    )  # fmt: skip
    assert code == 0, capsys.readouterr().err
    base = load_embedder("builtin:tiny-clip", cache=False, progress=False)
    for variant in ("adapter-raw", "adapter-lines"):
        tuned = load_embedder(f"builtin:tiny-clip+adapter={out / variant}", cache=False)
        assert tuned.fingerprint != base.fingerprint
        texts = ["a red cube and a blue heart"]
        assert not np.allclose(tuned.embed_texts(texts), base.embed_texts(texts), atol=1e-4)
        image = Image.new("RGB", (96, 96), (200, 40, 40))
        np.testing.assert_array_equal(tuned.embed_images([image]), base.embed_images([image]))
    record = json.loads((out / "train.json").read_text())
    assert record["lines"]["num_layers"] == 2
    assert record["optimizer_steps"] == 3
