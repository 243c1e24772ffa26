"""The model a run trains: the evaluation embedder itself, loaded uncached with its
differentiable path (:func:`load_trainable`), its token limit (:func:`limit_tokens`) and image
size (:func:`fix_image_size`) set before anything is embedded."""

from __future__ import annotations

from typing import Any

from bindkit.errors import BindkitError

__all__ = ["fix_image_size", "limit_tokens", "load_trainable"]


def load_trainable(spec: str, device: str | None) -> Any:
    """The spec's embedder, uncached, checked to expose the differentiable path."""
    from bindkit.embed.backends._torch import TorchEmbedder
    from bindkit.embed.registry import load_embedder

    options: dict[str, Any] = {"device": device} if device else {}
    embedder = load_embedder(spec, cache=False, progress=False, **options)
    if not isinstance(embedder, TorchEmbedder):
        raise BindkitError(
            f"--model {spec}: {type(embedder).__name__} has no trainable torch path; use an st: "
            "or mllm: model"
        )
    if getattr(embedder, "adapter", None):
        raise BindkitError(
            f"--model {spec}: already carries an adapter; train from the base model spec"
        )
    return embedder


def limit_tokens(embedder: Any, max_length: int | None) -> int | None:
    """Cut every input the run embeds at ``max_length`` tokens, or at the model's own limit
    when that is lower (``--max-length``); returns the limit in force (None: unchanged).

    Set before anything is embedded, so the model's description records it.

    Raises:
        BindkitError: the embedder has no token limit to set.
    """
    if max_length is None:
        return None
    if isinstance(getattr(embedder, "max_length", None), int):  # multimodal LLMs
        embedder.max_length = min(embedder.max_length, max_length)
        return int(embedder.max_length)
    model: Any = getattr(embedder, "model", None)
    if isinstance(getattr(model, "max_seq_length", None), int):  # sentence-transformers
        model.max_seq_length = min(model.max_seq_length, max_length)
        return int(model.max_seq_length)
    raise BindkitError(
        f"--max-length {max_length}: {embedder.spec} has no token limit to set; drop --max-length"
    )


def fix_image_size(embedder: Any, size: int) -> None:
    """Training images at ``size`` x ``size`` (``--image-size``): the model's
    ``fix_image_size`` squashes each image to that size and sets its resizes and image
    processor to keep it. A model without images has none to resize (text clusters train as
    they are); an image file in such a run fails where it is embedded."""
    fix = getattr(embedder, "fix_image_size", None)
    if fix is not None and "image" in embedder.modalities:
        fix(size)
