"""A published shape's folder scaled down (benchmarks' tiny and small runs of the same code)."""

from __future__ import annotations

import json
from pathlib import Path


def scale_config(folder: Path, hidden: int, layers: int) -> None:
    """Scale a Qwen3-VL shape folder's text layers to ``hidden`` and ``layers`` in the same
    proportions (intermediate 3x hidden, 128-wide heads, half as many kv heads; a 2,000-token
    vocabulary, the tokenizer's), and its vision tower to one small block."""
    config = json.loads((folder / "config.json").read_text())
    head_dim = min(128, hidden // 2)
    heads = max(2, hidden // head_dim)
    config["text_config"].update(
        hidden_size=hidden,
        intermediate_size=3 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=max(1, heads // 2),
        head_dim=head_dim,
        vocab_size=2000,
        rope_scaling={
            "mrope_interleaved": True,
            # the 2B's split of the rotary half (24:20:20 of 64), scaled to this head
            "mrope_section": [head_dim // 2 - 2 * (head_dim * 5 // 32), *[head_dim * 5 // 32] * 2],
            "rope_type": "default",
        },
    )
    config["vision_config"].update(
        depth=1,
        hidden_size=64,
        intermediate_size=128,
        num_heads=2,
        out_hidden_size=hidden,
        deepstack_visual_indexes=[0],
    )
    (folder / "config.json").write_text(json.dumps(config, indent=2))
