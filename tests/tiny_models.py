"""Tiny, randomly initialised Qwen2-VL / Qwen2.5-VL / Qwen3-VL checkpoints and a locally trained
tokenizer.

Everything is built from configs in a few seconds, with no download, and saved as a normal
checkpoint directory so the real loading code runs.
"""

from __future__ import annotations

from pathlib import Path

from bindkit.embed.backends.mllm.tokenizer import (
    CHAT_TEMPLATE,
    QWEN2_VL_CHAT_TEMPLATE,
)
from bindkit.embed.backends.mllm.tokenizer import build_tokenizer as build_bpe

CORPUS = [
    "A striped cube and a transparent kite.",
    "A white and orange striped cube and an iridescent soap-bubble kite.",
    "Represent the user's input. Represent the given text/image in one word.",
    "You are a helpful assistant. Find an image that matches the given caption.",
]


def build_tokenizer(out: Path, chat_template: str | None = CHAT_TEMPLATE) -> None:
    build_bpe(out, CORPUS * 20, 400, chat_template)


def build_qwen2_vl(out: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessorPil,
    )

    config = Qwen2VLConfig(
        text_config=dict(
            vocab_size=400,
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            rope_scaling={"type": "mrope", "mrope_section": [2, 1, 1]},
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        ),
        vision_config=dict(
            depth=2,
            embed_dim=32,
            hidden_size=32,
            num_heads=4,
            mlp_ratio=4,
            hidden_act="quick_gelu",
            patch_size=14,
            spatial_merge_size=1,
            temporal_patch_size=2,
        ),
        vision_start_token_id=3,
        image_token_id=5,
        video_token_id=6,
    )
    torch.manual_seed(seed)
    Qwen2VLForConditionalGeneration(config).save_pretrained(out)
    build_tokenizer(out, QWEN2_VL_CHAT_TEMPLATE)
    Qwen2VLImageProcessorPil(
        patch_size=14, merge_size=1, temporal_patch_size=2, min_pixels=28 * 28, max_pixels=56 * 56
    ).save_pretrained(out)
    return out


def build_qwen2_5_vl(out: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        Qwen2_5_VLConfig,
        Qwen2_5_VLForConditionalGeneration,
        Qwen2VLImageProcessorPil,
    )

    config = Qwen2_5_VLConfig(
        text_config=dict(
            vocab_size=400,
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            rope_scaling={"type": "mrope", "mrope_section": [2, 1, 1]},
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=37,
            num_heads=4,
            out_hidden_size=32,
            patch_size=14,
            spatial_merge_size=2,
            temporal_patch_size=2,
            window_size=56,
            fullatt_block_indexes=[1],
            tokens_per_second=2,
        ),
        vision_start_token_id=3,
        image_token_id=5,
        video_token_id=6,
    )
    torch.manual_seed(seed)
    Qwen2_5_VLForConditionalGeneration(config).save_pretrained(out)
    build_tokenizer(out, QWEN2_VL_CHAT_TEMPLATE)
    Qwen2VLImageProcessorPil(
        patch_size=14, merge_size=2, temporal_patch_size=2, min_pixels=28 * 28, max_pixels=56 * 56
    ).save_pretrained(out)
    return out


def build_qwen3_vl(out: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        Qwen2VLImageProcessorPil,
        Qwen3VLConfig,
        Qwen3VLForConditionalGeneration,
    )

    config = Qwen3VLConfig(
        text_config=dict(
            vocab_size=400,
            hidden_size=32,
            intermediate_size=37,
            num_hidden_layers=4,
            num_attention_heads=4,
            num_key_value_heads=2,
            head_dim=8,
            rope_scaling={
                "rope_type": "default",
                "mrope_section": [2, 1, 1],
                "mrope_interleaved": True,
            },
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
        ),
        vision_config=dict(
            depth=2,
            hidden_size=32,
            intermediate_size=37,
            num_heads=4,
            out_hidden_size=32,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            num_position_embeddings=16,
            deepstack_visual_indexes=[1],
        ),
        vision_start_token_id=3,
        image_token_id=5,
        video_token_id=6,
    )
    torch.manual_seed(seed)
    Qwen3VLForConditionalGeneration(config).save_pretrained(out)
    build_tokenizer(out)
    Qwen2VLImageProcessorPil(
        patch_size=16, merge_size=2, temporal_patch_size=2, min_pixels=32 * 32, max_pixels=64 * 64
    ).save_pretrained(out)
    return out
