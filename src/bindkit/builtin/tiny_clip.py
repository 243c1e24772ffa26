"""Train ``builtin:tiny-clip``: a small image–text dual encoder on procedurally rendered scenes.

Reproducible on the CPU: every random choice comes from ``--seed`` (scene draw, layouts, batch
order, caption order and form, flips, initial weights), torch runs deterministic algorithms on
one thread, and equal options give byte-identical weights.

Data: SABER-style MCQs of the shapes vocabulary drawn with ``--seed`` (the evaluation set uses
seed 0; the default here is 1, a different draw), each item rendered by the procedural renderer
at 256 px and box-downsampled to the model's input size. A batch holds whole MCQs, so the
attribute-, object- and joint-swapped captions of every scene are in-batch hard negatives.

Loss: symmetric InfoNCE between images and captions, plus the same loss within each modality
(text↔text, image↔image), with multiple positives: items with the same bindings (the query and
its binding-preserving candidate) are positives of each other.

Usage (the packaged weights; ``scripts/train_tiny_clip.py`` runs :func:`main`)::

    python scripts/train_tiny_clip.py --out src/bindkit/embed/backends/data/tiny_clip \\
        --eval /tmp/saber-shapes   # a rendered `saber generate --vocab shapes` directory
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

from bindkit.builtin import build
from bindkit.builtin.build import multi_positive_nce, optimizer_step, warmup_cosine
from bindkit.builtin.cards import tiny_clip_card
from bindkit.errors import BindkitError


@dataclass(frozen=True)
class TrainConfig:
    """Options of :func:`train` (each is a ``--flag`` of the script)."""

    seed: int = 1  # seed of the scene draw, layouts and training; the eval SABER uses 0
    per_n: int = 200  # training MCQs per N (5 scenes each)
    n_min: int = 2
    n_max: int = 10
    render_size: int = 256  # rendered like the evaluation set, then downsampled
    image_size: int = 96
    steps: int = 1200
    batch_mcqs: int = 16  # MCQs per batch: 5x as many images and captions
    lr: float = 2e-3
    weight_decay: float = 0.05
    warmup: int = 100
    within_weight: float = 0.5  # weight of the text-text and image-image terms
    generation_share: float = 0.25  # captions in the generation form ("a red and blue striped")
    widths: tuple[int, int, int] = (32, 64, 128)
    width: int = 128
    layers: int = 2
    heads: int = 4
    embed_dim: int = 128
    threads: int = 1

    def check(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("lr", "weight_decay", "within_weight", "generation_share"):
                if value < 0:
                    raise BindkitError(f"--{f.name.replace('_', '-')} {value}: must be >= 0")
            elif f.name not in ("widths", "seed", "warmup") and value < 1:
                raise BindkitError(f"--{f.name.replace('_', '-')} {value}: must be at least 1")
        if self.generation_share > 1:
            raise BindkitError(f"--generation-share {self.generation_share}: at most 1")


@dataclass
class Scenes:
    """Rendered training items: pixels, bindings and both caption forms' ingredients."""

    pixels: np.ndarray  # (items, S, S, 3) uint8
    bindings: list[tuple[tuple[str, str], ...]]  # (attribute, object) pairs per item
    realized: list[dict[str, str]]  # attribute → realisation text, per item
    mcq_of: np.ndarray  # item index → MCQ index
    keys: list[frozenset[tuple[str, str, str]]]  # what the scene shows, for positives


def vocabulary_words() -> list[str]:
    """Every word the shapes vocabulary and the caption templates can produce."""
    from bindkit.embed.backends.tiny_clip import PAD, UNK, words
    from bindkit.saber.vocab import load_vocabulary

    vocab = load_vocabulary("shapes")
    found = {"a", "an", "and"}
    for attribute in vocab.attributes:
        found.update(words(attribute.name))
        found.update(words(attribute.template.replace("{", " ").replace("}", " ")))
        for variant in attribute.variants:
            found.update(words(variant))
    for text in (*vocab.objects, *vocab.palette):
        found.update(words(text))
    found -= {"color", "color1", "color2", "variant"}  # template slot names
    return [PAD, UNK, *sorted(found)]


def render_scenes(config: TrainConfig, progress: bool = True) -> Scenes:
    """Draw the training MCQs and render every item (query and four candidates)."""
    from bindkit.embed.backends.tiny_clip import image_array
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.render.procedural import ProceduralBackend
    from bindkit.saber.vocab import load_vocabulary

    options = SaberOptions(
        seed=config.seed,
        per_n=config.per_n,
        n_min=config.n_min,
        n_max=config.n_max,
        avoid_color_collisions=True,
    )
    mcqs = build_saber(options, load_vocabulary("shapes"))
    backend = ProceduralBackend(size=config.render_size, seed=config.seed)
    count = sum(len(m.items) for m in mcqs)
    pixels = np.zeros((count, config.image_size, config.image_size, 3), dtype=np.uint8)
    bindings: list[tuple[tuple[str, str], ...]] = []
    realized: list[dict[str, str]] = []
    mcq_of: list[int] = []
    keys: list[frozenset[tuple[str, str, str]]] = []
    started = time.perf_counter()
    for index, mcq in enumerate(mcqs):
        for item in mcq.items:
            pixels[len(bindings)] = image_array(backend.render(item, mcq), config.image_size)
            bindings.append(item.bindings)
            texts = {a: mcq.realizations[a].text for a, _ in item.bindings}
            realized.append(texts)
            mcq_of.append(index)
            keys.append(frozenset((a, texts[a], o) for a, o in item.bindings))
        if progress and (index + 1) % 300 == 0:
            print(
                f"rendered {len(bindings):,}/{count:,} scenes "
                f"({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
            )
    return Scenes(pixels, bindings, realized, np.asarray(mcq_of), keys)


def caption(
    bindings: Sequence[tuple[str, str]], realized: dict[str, str], rng: random.Random, share: float
) -> str:
    """The item's caption with its pairs in a random order, in the SABER text form (attribute
    names) or, with probability ``share``, the generation form (realisations)."""
    from bindkit.saber import language

    pairs = list(bindings)
    rng.shuffle(pairs)
    if rng.random() < share:
        pairs = [(realized[a], o) for a, o in pairs]
    return language.render(pairs)


def contrastive_loss(images: Any, texts: Any, same: Any, scale: Any, within_weight: float) -> Any:
    """Symmetric image↔text InfoNCE plus ``within_weight`` × the text↔text and image↔image
    losses (self-similarity masked out). ``same[i, j]``: items i and j show the same scene."""
    import torch

    cross = scale * images @ texts.T
    loss = (multi_positive_nce(cross, same) + multi_positive_nce(cross.T, same.T)) / 2
    if within_weight:
        eye = torch.eye(len(same), dtype=torch.bool, device=same.device)
        within = same & ~eye
        terms = []
        for x in (texts, images):
            logits = (scale * x @ x.T).masked_fill(eye, float("-inf"))
            terms.append(multi_positive_nce(logits, within))
        loss = loss + within_weight * (terms[0] + terms[1]) / 2
    return loss


def train(
    config: TrainConfig, out: Path, *, scenes: Scenes | None = None, progress: bool = True
) -> dict[str, Any]:
    """Train and write ``out/config.json`` and ``out/model.safetensors``; returns a summary."""
    import torch

    from bindkit.embed.backends.builtin import save_checkpoint, sha256_file
    from bindkit.embed.backends.tiny_clip import (
        TinyClip,
        TinyClipConfig,
        Tokenizer,
        parameter_count,
        pixels,
    )

    config.check()
    try:
        model_config = TinyClipConfig(
            vocabulary=tuple(vocabulary_words()),
            image_size=config.image_size,
            widths=config.widths,
            width=config.width,
            layers=config.layers,
            heads=config.heads,
            embed_dim=config.embed_dim,
        )
    except ValueError as exc:
        raise BindkitError(f"architecture options: {exc}") from exc
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(config.seed)
    started, cpu_started = time.perf_counter(), time.process_time()
    if scenes is None:
        scenes = render_scenes(config, progress)
    rendered = time.perf_counter() - started

    model = TinyClip(model_config)
    tokenizer = Tokenizer(model_config)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "position" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "position" not in n)]
    optimizer = torch.optim.AdamW(
        [{"params": decay, "weight_decay": config.weight_decay}, {"params": rest}],
        lr=config.lr,
        weight_decay=0.0,
    )

    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: warmup_cosine(step, config.warmup, config.steps)
    )
    rng = random.Random(f"tiny-clip/{config.seed}")
    n_mcqs = int(scenes.mcq_of.max()) + 1
    items_of: list[list[int]] = [[] for _ in range(n_mcqs)]
    for item, mcq in enumerate(scenes.mcq_of.tolist()):
        items_of[mcq].append(item)
    order: list[int] = []
    losses: list[float] = []
    model.train()
    for step in range(config.steps):
        if len(order) < config.batch_mcqs:
            fresh = list(range(n_mcqs))
            rng.shuffle(fresh)
            order += fresh
        batch_mcqs, order = order[: config.batch_mcqs], order[config.batch_mcqs :]
        items = [i for m in batch_mcqs for i in items_of[m]]
        texts = [
            caption(scenes.bindings[i], scenes.realized[i], rng, config.generation_share)
            for i in items
        ]
        arrays = scenes.pixels[items]
        flips = [rng.random() < 0.5 for _ in items]
        arrays = np.stack([a[:, ::-1] if f else a for a, f in zip(arrays, flips, strict=True)])
        keys = [scenes.keys[i] for i in items]
        same = torch.tensor([[a == b for b in keys] for a in keys], dtype=torch.bool)

        image_vectors = torch.nn.functional.normalize(
            model.encode_image(pixels(np.ascontiguousarray(arrays), model_config)), dim=-1
        )
        text_vectors = torch.nn.functional.normalize(model.encode_text(tokenizer(texts)), dim=-1)
        scale = model.logit_scale.exp().clamp(max=100.0)
        loss = contrastive_loss(image_vectors, text_vectors, same, scale, config.within_weight)
        optimizer_step(
            loss, optimizer, scheduler, losses, step=step, steps=config.steps, every=50,
            scale=scale, started=started, progress=progress,
        )  # fmt: skip
    model.eval()
    save_checkpoint(model, out)
    return {
        "config": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(config).items()},
        "parameters": parameter_count(model),
        "scenes": len(scenes.bindings),
        "mcqs": n_mcqs,
        "final_loss": sum(losses[-50:]) / max(1, len(losses[-50:])),
        "temperature": 1 / float(model.logit_scale.detach().exp().clamp(max=100.0)),
        "render_seconds": round(rendered, 1),
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu_started, 1),
        "weights_sha256": sha256_file(out / "model.safetensors"),
        "torch": torch.__version__,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """``scripts/train_tiny_clip.py``: train, score on ``--eval``, write the card."""
    return build.main(
        argv,
        description=__doc__.splitlines()[0],
        config_type=TrainConfig,
        train=train,
        card=tiny_clip_card,
        model="tiny-clip",
    )
