"""Multimodal-LLM embedders (``mllm:``, ``qwen3-vl-embedding:``, ``gme:``, ``vlm2vec:``), split by
concern: ``families`` (each reference's behaviour as one table row), ``prompts``, ``images``,
``video`` and ``model`` (loading, identity, batches, pooling); see :mod:`.model`. ``tokenizer``
builds the tokenizer of a checkpoint made from a config (Qwen's special tokens, chat templates).
"""

from __future__ import annotations

from bindkit.embed.backends.mllm.families import (
    FAMILY_DEFAULTS,
    VIDEO_SETTINGS,
    VLM2VEC_MIN_SIDE,
    Family,
    FamilyDefaults,
    Positions,
    vlm2vec_min_side,
)
from bindkit.embed.backends.mllm.model import MLLMEmbedder, last_token_pool
from bindkit.embed.backends.mllm.prompts import IMAGE_PAD, VIDEO_PAD
from bindkit.embed.backends.mllm.video import VIDEO_MODEL_TYPES

__all__ = [
    "FAMILY_DEFAULTS",
    "IMAGE_PAD",
    "VIDEO_MODEL_TYPES",
    "VIDEO_PAD",
    "VIDEO_SETTINGS",
    "VLM2VEC_MIN_SIDE",
    "Family",
    "FamilyDefaults",
    "MLLMEmbedder",
    "Positions",
    "last_token_pool",
    "vlm2vec_min_side",
]
