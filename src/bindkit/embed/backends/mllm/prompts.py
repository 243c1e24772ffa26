"""The prompt of one input: each family's reference format, or a chat template and a layout.

:class:`PromptedMLLM` is the first layer of :class:`~bindkit.embed.backends.mllm.MLLMEmbedder`
(prompts → images → videos → model): it holds the attributes every later layer reads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bindkit.embed import prompts
from bindkit.embed.backends._torch import TorchEmbedder
from bindkit.embed.backends.mllm.families import FamilyDefaults
from bindkit.embed.protocol import Modality, Role
from bindkit.errors import BindkitError

IMAGE_PAD = "<|image_pad|>"
VIDEO_PAD = prompts.VIDEO_PAD
_SENTINEL = "\x00INPUT\x00"


class PromptedMLLM(TorchEmbedder):
    """Prompt rendering and the prompt part of the cache key."""

    name: str
    family: str
    defaults: FamilyDefaults
    tokenizer: Any
    layout: prompts.Layout | None
    trailing_newline: bool
    _injected: str | None

    def render(
        self,
        text: str | None,
        has_image: bool,
        role: Role,
        instruction: str | None,
        *,
        video: bool = False,
    ) -> str:
        """The full prompt string for one input, with one ``<|image_pad|>`` per image (one
        ``<|video_pad|>`` for a video)."""
        form = self.defaults.prompt
        if form == "gme":
            return prompts.gme_prompt(text, has_image, role, instruction)
        if form == "vlm2vec":
            return prompts.vlm2vec_prompt(
                text,
                has_image,
                role,
                instruction,
                trailing_newline=self.trailing_newline,
                video=video,
            )
        if form == "qwen3-vl-embedding":
            messages = prompts.qwen3_vl_embedding_messages(
                text, has_image, instruction, video=video
            )
        else:
            assert self.layout is not None
            messages = self.layout.messages(text, has_image, role, instruction, video=video)
        rendered = str(
            self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        )
        if messages[0]["role"] != "system":
            # Qwen2/2.5-VL templates inject "You are a helpful assistant." before a first
            # non-system turn; a layout without a system prompt means none (the seed's "-" row)
            injected = self._injected_system()
            if injected and rendered.startswith(injected):
                rendered = rendered[len(injected) :]
        return rendered

    def _injected_system(self) -> str:
        """What the chat template puts before a conversation that starts with a user turn."""
        if self._injected is None:
            probe = str(
                self.tokenizer.apply_chat_template(
                    [{"role": "user", "content": [{"type": "text", "text": _SENTINEL}]}],
                    tokenize=False,
                    add_generation_prompt=False,
                )
            )
            turn = probe.find("<|im_start|>user")
            self._injected = probe[:turn] if turn > 0 else ""
        return self._injected

    def prompt_key(self, modality: Modality, role: Role, instruction: str | None) -> str:
        if modality == "video":
            return self.render(None, False, role, instruction, video=True)
        return self.render(
            _SENTINEL if modality == "text" else None, modality == "image", role, instruction
        )


def stored_chat_template(name: str) -> str | None:
    """A chat template kept beside the tokenizer: ``chat_template.jinja`` or the legacy
    ``chat_template.json`` (which processors read and tokenizers do not)."""
    for filename in ("chat_template.jinja", "chat_template.json"):
        path = Path(name) / filename
        if not path.is_file():
            try:
                from huggingface_hub import try_to_load_from_cache

                cached = try_to_load_from_cache(name, filename)
            except Exception:  # not a hub id
                cached = None
            if not isinstance(cached, str):
                continue
            path = Path(cached)
        text = path.read_text(encoding="utf-8")
        if filename.endswith(".json"):
            try:
                template = json.loads(text).get("chat_template")
            except (json.JSONDecodeError, AttributeError) as exc:
                raise BindkitError(f"{path}: not a chat template JSON ({exc}); fix it") from exc
            return str(template) if template else None
        return text
    return None
