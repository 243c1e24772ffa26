"""Prompt formats of multimodal-LLM embedders, as pure functions of (role, instruction, input).

Each family turns one input into chat messages (rendered with the model's own chat template) or
into a hand-built prompt string. ``<|image_pad|>`` stands for one image; the backend expands it
to the image's patch count.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

from bindkit.embed.protocol import Role
from bindkit.errors import BindkitError

IMAGE_PLACEHOLDER = "<|vision_start|><|image_pad|><|vision_end|>"
VIDEO_PAD = "<|video_pad|>"
#: VLM2Vec's video candidate prompt when there is no instruction (its Qwen2-VL video demos)
VLM2VEC_VIDEO_DEFAULT = "Represent the given video."
#: VLM2Vec's ``VLM_IMAGE_TOKENS[QWEN2_VL]``: no vision_start/end around it
BARE_IMAGE_PLACEHOLDER = "<|image_pad|>"
QWEN3_VL_EMBEDDING_DEFAULT = "Represent the user's input."
GME_DEFAULT = "You are a helpful assistant."
REPRESENTATION_PROMPT = "Represent the given text/image in one word."
Message = dict[str, Any]


class Composed(str):
    """An instruction a benchmark's reference composed around the model's image or video token.

    As a ``str`` it is the plain instruction (what every other prompt format uses); ``exact`` is
    what follows the token in the reference's prompt, whitespace included, which the ``vlm2vec``
    format uses verbatim (``"<|image_pad|>" + exact``): with last-token pooling a space or a
    newline changes the embedding. MMEB-V2's readers pass their inputs this way.
    """

    exact: str

    def __new__(cls, plain: str, exact: str) -> Composed:
        made = super().__new__(cls, plain)
        made.exact = exact
        return made


def qwen3_vl_embedding_messages(
    text: str | None, has_image: bool, instruction: str | None, *, video: bool = False
) -> list[Message]:
    """Qwen3-VL-Embedding: the instruction is the system message; user content is images, then
    text.

    As the reference's ``format_instruction``: the caller's instruction is stripped, a period is
    appended unless it ends in a Unicode punctuation character (category ``P*``, so ``:``, ``)``
    and ``…`` count), and a blank one falls back to "Represent the user's input." A video
    (``video=True``) comes first in the user content, as the reference orders videos, images, texts.
    """
    system = (instruction or "").strip()
    if system and not unicodedata.category(system[-1]).startswith("P"):
        system += "."
    system = system or QWEN3_VL_EMBEDDING_DEFAULT
    content: list[dict[str, str]] = []
    if video:
        content.append({"type": "video"})
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


def vlm2vec_prompt(
    text: str | None,
    has_image: bool,
    role: Role,
    instruction: str | None,
    *,
    trailing_newline: bool = True,
    video: bool = False,
) -> str:
    """VLM2Vec (Qwen2-VL backbone), MMEB eval format: no chat template, a bare ``<|image_pad|>``
    first, then the instruction and the text.

    Image query ``"<|image_pad|>\\n{inst} {text}\\n"``, image candidate
    ``"<|image_pad|>\\nRepresent the given image.\\n"``, text query ``"{inst} {text}\\n"``,
    text candidate the raw text. With ``trailing_newline`` (the MMEB default) the pooled token
    is that final newline; without it, the last content token (VLM2Vec's demo scripts).

    A video (MMEB-V2 ``process_input_text``): ``"<|video_pad|> {inst} {text}"``, no newline; a
    video candidate without instruction ``"<|video_pad|> Represent the given video."``.

    A :class:`Composed` instruction is the reference's own composition: the token (for an image
    or a video), then ``instruction.exact`` and the text, unchanged.
    """
    if isinstance(instruction, Composed):
        token = VIDEO_PAD if video else BARE_IMAGE_PLACEHOLDER if has_image else ""
        return token + instruction.exact + (text or "")
    if video:
        words = " ".join(w for w in ((instruction or "").rstrip(), text or "") if w)
        return f"{VIDEO_PAD} {words or VLM2VEC_VIDEO_DEFAULT}"
    parts = []
    if has_image:
        parts.append(BARE_IMAGE_PLACEHOLDER + "\n")
    if instruction:
        parts.append(instruction.rstrip() + (" " if text else ""))
    elif has_image and not text:
        parts.append("Represent the given image.")
    if text:
        parts.append(text)
    if trailing_newline and (has_image or instruction):
        parts.append("\n")
    return "".join(parts)


@dataclass(frozen=True)
class Layout:
    """Where the generic ``mllm:`` backend puts the task constraint and the user instruction.

    Attributes:
        system: roles whose input is preceded by the system prompt ``system_prompt``.
        user: roles whose user message starts with an instruction: the caller's, else
            ``user_prompt`` (the seed's query-side reinforcement, "+ Q-Rein.").

    The user instruction comes before the input, as in the seed's I_query = [I_sys; I_user; x]:
    ``"I_user\\nx"`` for a text, and ``I_user``, a newline, then the image for an image. What the
    seed leaves open (its missing template, I_user without an instruction):
    docs/seed-choices.md#seed-002s-prompt.
    """

    system: frozenset[Role]
    user: frozenset[Role]
    system_prompt: str = REPRESENTATION_PROMPT
    user_prompt: str = REPRESENTATION_PROMPT

    def messages(
        self,
        text: str | None,
        has_image: bool,
        role: Role,
        instruction: str | None,
        *,
        video: bool = False,
    ) -> list[Message]:
        messages: list[Message] = []
        if role in self.system:
            messages.append(
                {"role": "system", "content": [{"type": "text", "text": self.system_prompt}]}
            )
        content: list[dict[str, str]] = []
        user_instruction = (instruction or self.user_prompt) if role in self.user else None
        if has_image or video:
            if user_instruction:
                content.append({"type": "text", "text": user_instruction + "\n"})
            content.append({"type": "video" if video else "image"})
            if text:
                content.append({"type": "text", "text": text})
        else:
            words = [w for w in (user_instruction, text) if w]
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
    user_prompt: str | None = None,
) -> Layout:
    """A named layout, optionally with ``system``/``user`` sides overridden (none|q|d|qd)."""
    if name not in LAYOUTS:
        raise BindkitError(f"layout={name!r}: use one of {', '.join(LAYOUTS)}")
    default_system, default_user = LAYOUTS[name]
    return Layout(
        system=_sides(system or default_system, "system"),
        user=_sides(user or default_user, "user"),
        system_prompt=system_prompt or REPRESENTATION_PROMPT,
        user_prompt=user_prompt or REPRESENTATION_PROMPT,
    )
