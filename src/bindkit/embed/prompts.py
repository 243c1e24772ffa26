"""Prompt formats of multimodal-LLM embedders, as pure functions of (role, instruction, input).

Each family turns one input into chat messages (rendered with the model's own chat template) or
into a hand-built prompt string. ``<|image_pad|>`` stands for one image; the backend expands it
to the image's patch count.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bindkit.embed.protocol import Role
from bindkit.errors import BindkitError

IMAGE_PLACEHOLDER = "<|vision_start|><|image_pad|><|vision_end|>"
QWEN3_VL_EMBEDDING_DEFAULT = "Represent the user's input."
GME_DEFAULT = "You are a helpful assistant."
REPRESENTATION_PROMPT = "Represent the given text/image in one word."
Message = dict[str, Any]


def qwen3_vl_embedding_messages(
    text: str | None, has_image: bool, instruction: str | None
) -> list[Message]:
    """Qwen3-VL-Embedding: the instruction is the system message (default "Represent the user's
    input."; a period is appended when it lacks final punctuation); user content is images,
    then text."""
    system = (instruction or QWEN3_VL_EMBEDDING_DEFAULT).strip()
    if system and system[-1] not in ".?!。？！":
        system += "."
    content: list[dict[str, str]] = []
    if has_image:
        content.append({"type": "image"})
    if text:
        content.append({"type": "text", "text": text})
    return [
        {"role": "system", "content": [{"type": "text", "text": system}]},
        {"role": "user", "content": content},
    ]


def gme_prompt(text: str | None, has_image: bool, role: Role, instruction: str | None) -> str:
    """GME-Qwen2-VL's hand-built prompt; documents always get the default instruction."""
    system = instruction if role == "query" and instruction else GME_DEFAULT
    body = (IMAGE_PLACEHOLDER if has_image else "") + (text or "")
    return (
        f"<|im_start|>system\n{system}<|im_end|>\n"
        f"<|im_start|>user\n{body}<|im_end|>\n"
        "<|im_start|>assistant\n<|endoftext|>"
    )


def vlm2vec_prompt(text: str | None, has_image: bool, role: Role, instruction: str | None) -> str:
    """VLM2Vec (Qwen2-VL backbone), MMEB style: no chat template; the image token first, then the
    instruction and the text ("<image>\\nRepresent the given image with the following question:
    ..."). Without an instruction, images get "Represent the given image." and texts stand alone."""
    parts = []
    if has_image:
        parts.append(IMAGE_PLACEHOLDER + "\n")
    if instruction:
        parts.append(instruction.rstrip() + (" " if text else ""))
    elif has_image and not text:
        parts.append("Represent the given image.")
    if text:
        parts.append(text)
    return "".join(parts)


@dataclass(frozen=True)
class Layout:
    """Where the generic ``mllm:`` backend puts the task constraint and the user instruction.

    Attributes:
        system: roles whose input is preceded by the system prompt ``system_prompt``.
        user: roles whose user message starts with an instruction (the caller's, or the
            representation prompt when the caller gives none and no system prompt carries it).
    """

    system: frozenset[Role]
    user: frozenset[Role]
    system_prompt: str = REPRESENTATION_PROMPT

    def messages(
        self, text: str | None, has_image: bool, role: Role, instruction: str | None
    ) -> list[Message]:
        messages: list[Message] = []
        if role in self.system:
            messages.append(
                {"role": "system", "content": [{"type": "text", "text": self.system_prompt}]}
            )
        content: list[dict[str, str]] = []
        if has_image:
            content.append({"type": "image"})
        words = []
        if role in self.user:
            user_instruction = instruction or (None if role in self.system else self.system_prompt)
            if user_instruction:
                words.append(user_instruction)
        if text:
            words.append(text)
        if words:
            content.append({"type": "text", "text": "\n".join(words)})
        messages.append({"role": "user", "content": content})
        return messages


def _sides(value: str, option: str) -> frozenset[Role]:
    table: dict[str, frozenset[Role]] = {
        "none": frozenset(),
        "q": frozenset({"query"}),
        "d": frozenset({"document"}),
        "qd": frozenset({"query", "document"}),
    }
    if value not in table:
        raise BindkitError(f"{option}={value!r}: use one of {', '.join(table)}")
    return table[value]


#: Named layouts: the seed's prompt ablations (Tables I, II, VI) by one flag.
LAYOUTS: dict[str, tuple[str, str]] = {
    "none": ("none", "none"),  # the input alone
    "user": ("none", "qd"),  # REP: the instruction as a user directive on both sides
    "system": ("qd", "none"),  # SYS-T: the task constraint as the system prompt on both sides
    "hierarchical": ("qd", "q"),  # I_doc = [I_sys; x], I_query = [I_sys; I_user; x]
}


def make_layout(
    name: str = "hierarchical",
    *,
    system: str | None = None,
    user: str | None = None,
    system_prompt: str | None = None,
) -> Layout:
    """A named layout, optionally with ``system``/``user`` sides overridden (none|q|d|qd)."""
    if name not in LAYOUTS:
        raise BindkitError(f"layout={name!r}: use one of {', '.join(LAYOUTS)}")
    default_system, default_user = LAYOUTS[name]
    return Layout(
        system=_sides(system or default_system, "system"),
        user=_sides(user or default_user, "user"),
        system_prompt=system_prompt or REPRESENTATION_PROMPT,
    )
