"""Attention binding margins: does an object attend to its own attributes more than to others'?

The seed's analysis (000, "we directly analyze text-side attention"): for each layer, the
attention between two words is measured from the later word to the earlier one (the causally
available direction; used for bidirectional encoders too, so numbers compare); a word spanning
several sub-tokens counts the *sum* of attention from each sub-token of the later word to all
sub-tokens of the earlier word, *averaged* over the later word's sub-tokens and over heads. An
object's binding margin is its mean attention to its own attribute words minus its mean
attention to the other objects' attribute words; a caption's margin is the mean over its objects.

Pure math (:func:`word_attention`, :func:`object_margins`) takes attention tensors; the model edge
(:func:`align`, :func:`capture_attentions`) renders each text exactly as the embedder's
``collate`` does, maps words to tokens through the tokenizer's offsets, and records each
attention layer's probabilities with forward hooks (the eager attention kernel is switched on
for the duration, since fused kernels do not return probabilities).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

# text attention layers: Qwen-style `…layers.N.self_attn`, BERT-style `…layer.N.attention.self`;
# never a vision tower's blocks
ATTENTION_MODULE = re.compile(r"^(?!.*visual).*\blayers?\.(\d+)\.(?:self_attn|attention\.self)$")


@dataclass(frozen=True)
class BoundText:
    """A text and its [attribute, object] bindings (each word must occur in the text)."""

    text: str
    bindings: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class WordGraph:
    """One text's words as token positions plus, per object, its own and the others' attributes.

    ``tokens[w]`` are the token positions of word ``w`` in the model's input row; ``order[w]`` is
    its character position (later words attend to earlier ones); ``objects`` holds
    ``(object word, own attribute words, other objects' attribute words)``.
    """

    tokens: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]
    objects: tuple[tuple[int, tuple[int, ...], tuple[int, ...]], ...]


def layer_band(n_layers: int, first: int = 18, last: int = 26, reference: int = 36) -> list[int]:
    """The seed's band of layers 18–26 of 36, scaled to a model with ``n_layers`` layers.

    >>> layer_band(36)
    [18, 19, 20, 21, 22, 23, 24, 25, 26]
    >>> layer_band(6)
    [3, 4]
    """
    lo = round(first * n_layers / reference)
    hi = round(last * n_layers / reference)
    return [layer for layer in range(lo, hi + 1) if 0 <= layer < n_layers]


def find_word(text: str, word: str, where: str = "text") -> tuple[int, int]:
    """Character span of the first whole-word, case-insensitive occurrence of ``word``."""
    match = re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", text, flags=re.IGNORECASE)
    if match is None:
        raise BindkitError(f"{where}: binding word {word!r} does not occur in {text!r}")
    return match.span()


def graph(
    item: BoundText, offsets: Sequence[tuple[int, int]], shift: int, where: str = "text"
) -> WordGraph:
    """Map each binding word of ``item`` to the tokens whose character offsets overlap it.

    ``offsets`` are the tokenizer's (start, end) per token of the model input; ``shift`` is where
    ``item.text`` starts inside that input (after a prompt).
    """
    words: dict[str, int] = {}
    spans: list[tuple[int, int]] = []
    for attribute, obj in item.bindings:
        for word in (attribute, obj):
            if word.lower() not in words:
                words[word.lower()] = len(spans)
                spans.append(find_word(item.text, word, where))
    tokens = []
    for start, end in spans:
        lo, hi = start + shift, end + shift
        hit = tuple(i for i, (a, b) in enumerate(offsets) if b > a and a < hi and b > lo)
        if not hit:
            raise BindkitError(f"{where}: no token covers {item.text[start:end]!r}")
        tokens.append(hit)
    own: dict[int, list[int]] = {}
    for attribute, obj in item.bindings:
        own.setdefault(words[obj.lower()], []).append(words[attribute.lower()])
    attributes = {a for values in own.values() for a in values}
    objects = tuple(
        (o, tuple(mine), tuple(sorted(attributes - set(mine)))) for o, mine in own.items()
    )
    return WordGraph(tuple(tokens), tuple(s for s, _ in spans), objects)


# -- pure math ---------------------------------------------------------------------------------
def word_attention(attention: Any, tokens: Sequence[Sequence[int]]) -> Any:
    """Head-averaged token attention → word attention.

    Args:
        attention: ``(layers, heads, T, T)`` probabilities, row = attending token.
        tokens: token positions of each word.

    Returns:
        ``(layers, W, W)``: entry ``[l, u, v]`` = mean over u's tokens of the summed attention to
        v's tokens, averaged over heads.
    """
    import torch

    length = attention.shape[-1]
    membership = torch.zeros(len(tokens), length, dtype=attention.dtype, device=attention.device)
    for w, positions in enumerate(tokens):
        membership[w, list(positions)] = 1.0
    mean_rows = membership / membership.sum(1, keepdim=True)
    heads = attention.mean(1)  # (layers, T, T)
    return mean_rows @ heads @ membership.T


def object_margins(attention: Any, graph_: WordGraph) -> Any:
    """Per layer and object: mean attention to own attributes − mean to others' attributes.

    Args:
        attention: ``(layers, heads, T, T)`` for one input row.
        graph_: its words.

    Returns:
        ``(layers, objects)``, only objects with both own and other attributes (an object alone
        in its text has no margin).
    """
    import torch

    words = word_attention(attention, graph_.tokens)
    order = graph_.order

    def between(o: int, a: int) -> Any:  # later word → earlier word
        return words[:, o, a] if order[o] > order[a] else words[:, a, o]

    columns = []
    for o, own, other in graph_.objects:
        if not own or not other:
            continue
        mine = torch.stack([between(o, a) for a in own], 1).mean(1)
        theirs = torch.stack([between(o, a) for a in other], 1).mean(1)
        columns.append(mine - theirs)
    if not columns:
        return attention.new_zeros((attention.shape[0], 0))
    return torch.stack(columns, 1)


def binding_penalty(margins: Any, tau: float = 0.1) -> Any:
    """The seed's attention loss: mean over (layer, object) of ``[tau − margin]+``."""
    import torch

    if margins.numel() == 0:
        return margins.sum()
    return torch.relu(tau - margins).mean()


# -- the model edge ----------------------------------------------------------------------------
def attention_modules(module: Any) -> list[tuple[int, Any]]:
    """The text attention modules of ``module`` in layer order, as (layer index, module)."""
    found = []
    for name, sub in module.named_modules():
        match = ATTENTION_MODULE.match(name)
        if match:
            found.append((int(match.group(1)), sub))
    if not found:
        raise BindkitError(
            "the model has no text attention layers named like '…layers.N.self_attn' or "
            "'…layer.N.attention.self'; attention analysis does not support it"
        )
    return sorted(found, key=lambda pair: pair[0])


@contextmanager
def capture_attentions(module: Any) -> Iterator[dict[int, Any]]:
    """Record each text attention layer's probabilities during the forward passes inside.

    Yields a dict ``layer index → (batch, heads, T, T)`` filled by the last forward pass.
    Attention switches to the eager kernel inside the block (fused kernels return no
    probabilities) and back afterwards; the embeddings are the same up to float rounding.
    """
    captured: dict[int, Any] = {}
    models = [m for m in module.modules() if hasattr(m, "set_attn_implementation")]
    roots = [m for m in models if not any(m is not o and _contains(o, m) for o in models)]
    previous = [getattr(m.config, "_attn_implementation", None) for m in roots]
    for model in roots:
        model.set_attn_implementation("eager")

    def hook(layer: int) -> Any:
        def record(_module: Any, _args: Any, output: Any) -> None:
            if isinstance(output, tuple) and len(output) > 1 and output[1] is not None:
                captured[layer] = output[1]

        return record

    handles = [sub.register_forward_hook(hook(i)) for i, sub in attention_modules(module)]
    try:
        yield captured
    finally:
        for handle in handles:
            handle.remove()
        for model, name in zip(roots, previous, strict=True):
            if name:
                model.set_attn_implementation(name)


def _contains(outer: Any, inner: Any) -> bool:
    return any(m is inner for m in outer.modules())


def alignable(embedder: Any) -> bool:
    """The embedder tokenises with a Hugging Face tokenizer this module can align words to: a
    multimodal-LLM (a rendered chat prompt) or a sentence-transformers model."""
    return hasattr(embedder, "render") or (
        hasattr(embedder, "_prompt") and hasattr(getattr(embedder, "model", None), "tokenizer")
    )


def render_for_alignment(
    embedder: Any, text: str, role: str, instruction: str | None
) -> tuple[str, int, Any, dict[str, Any]]:
    """The exact string the embedder tokenises for ``text``, where ``text`` starts in it, the
    tokenizer, and the tokenizer options ``collate`` uses."""
    if hasattr(embedder, "render"):  # multimodal-LLM family: a rendered chat prompt
        rendered = str(embedder.render(text, False, role, instruction))
        options: dict[str, Any] = {"add_special_tokens": False}
        return rendered, rendered.rfind(text), embedder.tokenizer, options
    if hasattr(embedder, "_prompt") and hasattr(embedder.model, "tokenizer"):  # st
        prompt = embedder._prompt(role, instruction) or ""
        options = {"truncation": True, "max_length": embedder.model.max_seq_length}
        return prompt + text, len(prompt), embedder.model.tokenizer, options
    raise BindkitError(
        f"{getattr(embedder, 'spec', embedder)}: attention analysis needs a sentence-transformers "
        "or multimodal-LLM embedder"
    )


def align(
    embedder: Any,
    items: Sequence[BoundText],
    batch: dict[str, Any],
    *,
    role: str = "query",
    instruction: str | None = None,
) -> list[WordGraph]:
    """Word graphs for a collated batch of ``items`` (row ``i`` of ``batch`` is ``items[i]``).

    The token ids from the tokenizer's offsets pass must equal the batch row's unpadded ids, so
    alignment can never silently drift from what the model saw.
    """
    ids = batch["input_ids"].tolist()
    mask = batch["attention_mask"].tolist()
    graphs = []
    for i, item in enumerate(items):
        string, shift, tokenizer, options = render_for_alignment(
            embedder, item.text, role, instruction
        )
        encoded = tokenizer(string, return_offsets_mapping=True, **options)
        row = [t for t, m in zip(ids[i], mask[i], strict=True) if m]
        if list(encoded["input_ids"]) != row:
            raise BindkitError(
                f"text #{i}: the tokenizer's offsets pass does not reproduce the model input; "
                "attention analysis needs a fast tokenizer"
            )
        start = next(j for j, m in enumerate(mask[i]) if m)  # left padding shifts the row
        offsets = [(0, 0)] * start + [tuple(o) for o in encoded["offset_mapping"]]
        graphs.append(graph(item, offsets, shift, where=f"text #{i}"))
    return graphs


def batch_margins(
    captured: dict[int, Any], graphs: Sequence[WordGraph], layers: Sequence[int] | None = None
) -> Any:
    """``(layers, objects)`` margins of a batch from :func:`capture_attentions`' record."""
    import torch

    if not captured:
        raise BindkitError("no attention was recorded; run the forward pass inside the capture")
    chosen = sorted(captured) if layers is None else list(layers)
    columns = []
    for i, g in enumerate(graphs):
        stacked = torch.stack([captured[layer][i] for layer in chosen])  # (L, H, T, T)
        columns.append(object_margins(stacked, g))
    return torch.cat(columns, 1)


def caption_margins(
    captured: dict[int, Any], graphs: Sequence[WordGraph]
) -> list[list[float] | None]:
    """Per caption, its margin per layer (mean over its objects), or None without a margin."""
    out: list[list[float] | None] = []
    layers = sorted(captured)
    for i, g in enumerate(graphs):
        import torch

        stacked = torch.stack([captured[layer][i] for layer in layers])
        margins = object_margins(stacked, g)
        out.append(None if margins.shape[1] == 0 else margins.mean(1).float().tolist())
    return out


def margin_curve(
    embedder: Any,
    items: Sequence[BoundText],
    *,
    role: str = "query",
    instruction: str | None = None,
    batch_size: int = 16,
) -> tuple[list[float], int]:
    """The per-layer mean binding margin over ``items`` and how many captions had a margin."""
    import torch

    sums: list[float] | None = None
    counted = 0
    module = embedder.module
    for start in range(0, len(items), batch_size):
        chunk = list(items[start : start + batch_size])
        batch = embedder.collate(
            [it.text for it in chunk], modality="text", role=role, instruction=instruction
        )
        graphs = align(embedder, chunk, batch, role=role, instruction=instruction)
        with capture_attentions(module) as captured, torch.inference_mode():
            embedder.forward(batch)
        for margins in caption_margins(captured, graphs):
            if margins is None:
                continue
            sums = margins if sums is None else [a + b for a, b in zip(sums, margins, strict=True)]
            counted += 1
    if sums is None:
        raise BindkitError("no text has two or more bound objects; nothing to measure")
    return [s / counted for s in sums], counted


def parse_query_bindings(query: str) -> tuple[tuple[str, str], ...]:
    """Bindings of a synthetic query ("a dated book and a neat lamp", "an old red cup"): the last
    word of each listed phrase is the object, the words before it its attributes."""
    phrases = re.split(r",\s*|\s+and\s+", query.strip().rstrip("."))
    bindings: list[tuple[str, str]] = []
    for phrase in phrases:
        words = phrase.split()
        if words and words[0].lower() in ("a", "an", "the"):
            words = words[1:]
        if len(words) < 2:
            raise BindkitError(f"query {query!r}: cannot read attribute-object phrases from it")
        bindings.extend((attribute, words[-1]) for attribute in words[:-1])
    return tuple(bindings)


# -- the command -------------------------------------------------------------------------------
def read_bound_texts(
    path: Path, field: str | None = None, limit: int | None = None
) -> list[BoundText]:
    """Texts with bindings from a SABER directory (its queries) or a JSONL file.

    JSONL rows need the text in ``field`` (default: ``text``, else ``query``) and either a
    ``bindings`` list of [attribute, object] or a synthetic query whose phrases give them.
    """
    from bindkit.saber.io import iter_lines, read_saber

    items: list[BoundText] = []
    if path.is_dir():
        for mcq in read_saber(path).mcqs:
            pairs = tuple((str(a), str(o)) for a, o in mcq.query.bindings)
            items.append(BoundText(mcq.query.text, pairs))
    elif path.is_file():
        for lineno, row in iter_lines(path):
            where = f"{path}:{lineno}"
            if not isinstance(row, dict):
                raise BindkitError(f"{where}: a line must be a JSON object")
            name = field or ("text" if "text" in row else "query")
            text = row.get(name)
            if not isinstance(text, str) or not text.strip():
                raise BindkitError(
                    f"{where}: field {name!r} must be a non-empty string; pick it with --field"
                )
            bindings = row.get("bindings")
            if bindings is None:
                pairs = parse_query_bindings(text)
            elif isinstance(bindings, list) and all(
                isinstance(b, list) and len(b) == 2 and all(isinstance(w, str) for w in b)
                for b in bindings
            ):
                pairs = tuple((a, o) for a, o in bindings)
            else:
                raise BindkitError(f"{where}: 'bindings' must be a list of [attribute, object]")
            for attribute, obj in pairs:
                find_word(text, attribute, where)
                find_word(text, obj, where)
            items.append(BoundText(text, pairs))
    else:
        raise BindkitError(
            f"{path}: not found; pass a SABER directory or a JSONL file with bindings"
        )
    if not items:
        raise BindkitError(f"{path}: no texts found")
    return items[:limit] if limit else items


def analyze_attention(
    models: Sequence[str],
    texts: str | Path,
    out: str | Path,
    *,
    field: str | None = None,
    role: str = "query",
    instruction: str | None = None,
    limit: int | None = None,
    batch_size: int = 16,
) -> dict[str, Any]:
    """Per-layer mean binding margin of each model on ``texts``; writes CSV, PNG and JSON.

    Returns the JSON record written to ``OUT/attention_margins.json``.
    """
    from bindkit import __version__
    from bindkit._io import atomic_write_text, canonical_json, sha256_file
    from bindkit.embed.registry import load_embedder

    if not models:
        raise BindkitError("--model: give at least one model spec")
    source = Path(texts)
    items = read_bound_texts(source, field, limit)
    out_dir = Path(out)
    curves: dict[str, dict[str, Any]] = {}
    for spec in dict.fromkeys(models):
        embedder: Any = load_embedder(spec, cache=False)
        if not hasattr(embedder, "collate"):
            raise BindkitError(f"{spec}: has no torch forward path; attention needs a torch model")
        if not alignable(embedder):  # e.g. builtin:tiny-clip: word-level ids, no offsets
            raise BindkitError(
                f"{spec}: attention analysis needs a sentence-transformers or multimodal-LLM "
                "model (a Hugging Face tokenizer to align words to); this one has none"
            )
        curve, counted = margin_curve(
            embedder, items, role=role, instruction=instruction, batch_size=batch_size
        )
        curves[spec] = {"fingerprint": embedder.fingerprint, "margins": curve, "texts": counted}
    digest = sha256_file(source / "saber.jsonl") if source.is_dir() else sha256_file(source)
    record = {
        "schema": "bindkit.attention/1",
        "bindkit_version": __version__,
        "data": {"source": str(source), "sha256": digest, "texts": len(items)},
        "options": {"field": field, "role": role, "instruction": instruction, "limit": limit},
        "models": curves,
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out_dir / "attention_margins.json", canonical_json(record) + "\n")
    depth = max(len(c["margins"]) for c in curves.values())
    rows = ["layer," + ",".join(_csv_cell(spec) for spec in curves)]
    for layer in range(depth):
        cells = [
            f"{c['margins'][layer]:.6f}" if layer < len(c["margins"]) else ""
            for c in curves.values()
        ]
        rows.append(f"{layer}," + ",".join(cells))
    atomic_write_text(out_dir / "attention_margins.csv", "\n".join(rows) + "\n")
    _plot(curves, out_dir / "attention_margins.png")
    return record


def _csv_cell(text: str) -> str:
    return '"' + text.replace('"', '""') + '"' if any(c in text for c in ',"\n') else text


def _plot(curves: dict[str, dict[str, Any]], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover - plots are optional
        return
    from bindkit._io import atomic_write_figure

    figure, axis = plt.subplots(figsize=(6, 3.5))
    for spec, curve in curves.items():
        margins = curve["margins"]
        axis.plot(range(len(margins)), margins, marker="o", markersize=3, label=spec)
    axis.axhline(0, color="gray", linewidth=0.8)
    axis.set_xlabel("layer")
    axis.set_ylabel("binding margin (own − other attributes)")
    axis.legend(fontsize=7)
    figure.tight_layout()
    atomic_write_figure(figure, path)
