"""What a small Qwen-VL checkpoint built from a config needs to load as a real one: Qwen's special
tokens in their ids, the Qwen3-VL chat template (and Qwen2-VL's, which injects a default system
turn) reduced to what an embedder renders, and a byte-level BPE trained on given texts.

Used by ``scripts/train_tiny_vlm.py`` (the shipped ``builtin:tiny-vlm``) and by the tests' tiny
random checkpoints, so both render prompts exactly as a downloaded Qwen-VL tokenizer does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

#: Qwen's special tokens, in the order that gives them ids 0..6 (pad, bos, eos, vision markers)
SPECIAL_TOKENS = (
    "<|endoftext|>",  # 0: pad
    "<|im_start|>",  # 1
    "<|im_end|>",  # 2: eos
    "<|vision_start|>",  # 3
    "<|vision_end|>",  # 4
    "<|image_pad|>",  # 5
    "<|video_pad|>",  # 6
)
#: Qwen3-VL's chat template, reduced to what an embedder renders: system/user/assistant turns
#: with text, image and video placeholders (no tool calls, no thinking blocks)
CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for c in message['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'video' %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
#: Qwen2-VL's and Qwen2.5-VL's line that injects a default system prompt before a conversation
#: that starts with a user turn (as in their chat_template)
QWEN2_VL_INJECTION = (
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\n"
    "You are a helpful assistant.<|im_end|>\n{% endif %}"
)
QWEN2_VL_CHAT_TEMPLATE = CHAT_TEMPLATE.replace(
    "{% for message in messages %}", "{% for message in messages %}" + QWEN2_VL_INJECTION
)


def build_tokenizer(
    out: Path, texts: Sequence[str], vocab_size: int, chat_template: str | None = CHAT_TEMPLATE
) -> None:
    """Train a byte-level BPE of ``vocab_size`` tokens on ``texts`` (Qwen's special tokens, eos
    ``<|im_end|>``, pad ``<|endoftext|>``) and save it with ``chat_template`` into ``out``.
    Deterministic: equal texts give identical files."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(list(texts), trainer)
    PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        chat_template=chat_template,
    ).save_pretrained(out)
