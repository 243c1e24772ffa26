"""The seed's attention binding loss at the model edge, added to any objective with ``--attn-loss``.

The math is :class:`bindkit.train.losses.AttentionMarginLoss`; this module captures the
attention of a forward pass and measures the margins it needs.

penalty = λ · mean over (object, layer in band) of [τ − margin]+, where an object's margin is its
mean attention to its own attribute words minus its mean attention to the other objects'
attribute words (see :mod:`bindkit.analysis.attention` for the measurement). Defaults: τ = 0.1,
λ = 0.1, layers 18–26 of 36 scaled to the model's depth.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bindkit.analysis.attention import (
    BoundText,
    align,
    attention_modules,
    batch_margins,
    capture_attentions,
    layer_band,
    parse_query_bindings,
)
from bindkit.errors import BindkitError


def bound_text(row: Mapping[str, Any], field: str = "query") -> BoundText:
    """The text of ``row[field]`` with its bindings: the row's ``bindings`` if it has them, else
    read from a synthetic query ("a dated book and a neat lamp")."""
    text = row[field]
    bindings = row.get("bindings")
    if bindings is None:
        if field != "query":
            raise BindkitError(f"field {field!r} has no 'bindings' to measure attention with")
        return BoundText(text, parse_query_bindings(text))
    return BoundText(text, tuple((str(a), str(o)) for a, o in bindings))


class AttentionBindingLoss:
    """Embeds a batch through ``embedder.forward`` and returns the weighted attention penalty.

    Args:
        embedder: a torch embedder (``collate``/``forward``/``module``) with text attention
            layers named like ``…layers.N.self_attn`` or ``…layer.N.attention.self``.
        tau: target binding margin.
        weight: λ, the penalty's weight in the total loss.
        layers: 0-based layer indices (default: the seed's band scaled to the model's depth).
    """

    def __init__(
        self,
        embedder: Any,
        *,
        tau: float = 0.1,
        weight: float = 0.1,
        layers: Sequence[int] | None = None,
    ) -> None:
        if tau < 0 or weight < 0:
            raise BindkitError(f"attention loss: tau {tau} and weight {weight} must be >= 0")
        self.embedder = embedder
        depth = len(attention_modules(embedder.module))
        self.layers = list(layers) if layers is not None else layer_band(depth)
        if not self.layers or not all(0 <= layer < depth for layer in self.layers):
            raise BindkitError(f"attention loss: layers {self.layers} outside 0..{depth - 1}")
        self.tau, self.weight = tau, weight

    def __call__(
        self,
        items: Sequence[BoundText],
        batch: dict[str, Any],
        *,
        role: str = "query",
        instruction: str | None = None,
        rows: int = 1,
        global_rows: int = 1,
    ) -> tuple[Any, Any]:
        """(embeddings of ``batch``, weighted penalty); both carry gradients.

        ``rows``/``global_rows`` scale the penalty to this rank's share of a global batch.
        """
        graphs = align(self.embedder, items, batch, role=role, instruction=instruction)
        with capture_attentions(self.embedder.module) as captured:
            embeddings = self.embedder.forward(batch)
        from bindkit.train.losses import AttentionMarginLoss

        margins = batch_margins(captured, graphs, self.layers)
        penalty = AttentionMarginLoss(self.tau, self.weight)(margins, rows, global_rows)
        return embeddings, penalty
