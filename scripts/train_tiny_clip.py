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

Usage (the packaged weights)::

    python scripts/train_tiny_clip.py --out src/bindkit/embed/backends/data/tiny_clip \\
        --eval /tmp/saber-shapes   # a rendered `saber generate --vocab shapes` directory
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np

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
    bindings, realized, mcq_of, keys = [], [], [], []
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


def multi_positive_nce(logits: Any, positives: Any) -> Any:
    """Cross-entropy of each row against the uniform distribution over its positives; rows
    without a positive are left out. Pure: tested on hand-computed cases."""
    import torch

    has = positives.any(dim=1)
    target = positives.float() / positives.float().sum(dim=1, keepdim=True).clamp(min=1.0)
    log_p = torch.log_softmax(logits, dim=1)
    per_row = -(target * log_p.masked_fill(~positives, 0.0)).sum(dim=1)
    if not bool(has.any()):
        return torch.zeros((), dtype=logits.dtype, device=logits.device)
    return per_row[has].mean()


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

    def lr_at(step: int) -> float:
        if step < config.warmup:
            return (step + 1) / config.warmup
        done = (step - config.warmup) / max(1, config.steps - config.warmup)
        return 0.5 * (1 + math.cos(math.pi * min(done, 1.0)))

    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_at)
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
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(float(loss.detach()))
        if progress and ((step + 1) % 50 == 0 or step + 1 == config.steps):
            recent = sum(losses[-50:]) / len(losses[-50:])
            print(
                f"step {step + 1}/{config.steps} loss {recent:.3f} "
                f"T {1 / float(scale.detach()):.4f} ({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
            )
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


SCORES = ("mcq_accuracy", "mcq_accuracy_by_n", "map_independent", "map_nested")


def evaluate_checkpoint(
    out: Path,
    saber_dir: Path,
    results: Path,
    model: str = "tiny-clip",
    scores: Sequence[str] = SCORES,
) -> dict[str, Any]:
    """``scores`` (MCQ accuracy overall and by N, mAP) of the checkpoint in ``out`` of built-in
    ``model`` on a rendered SABER directory, in all four pairings, through bindkit's own
    evaluation."""
    from bindkit.evaluation import evaluate

    records = evaluate(
        [f"builtin:{model}+weights={out}"],
        data=saber_dir,
        out=results,
        overwrite="always",
        cache=False,
        report=False,
        verbose=False,
    )
    return {r["pairing"]: {key: r["scores"][key] for key in scores} for r in records}


def evaluate_bow(saber_dir: Path, results: Path) -> dict[str, Any]:
    """The bag-of-words baseline on the same set (text→text only: it embeds no images)."""
    from bindkit.evaluation import evaluate

    records = evaluate(
        ["bow"], data=saber_dir, out=results, cache=False, report=False, verbose=False
    )
    return {
        r["pairing"]: {k: r["scores"][k] for k in ("mcq_accuracy", "mcq_accuracy_by_n")}
        for r in records
    }


_PAIRINGS = {"tt": "text→text", "ti": "text→image", "it": "image→text", "ii": "image→image"}


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def card(summary: dict[str, Any]) -> str:
    """The model card (Markdown) for a training summary; with scores when it has them."""
    cfg = summary["config"]
    cpu = f", {summary['cpu_seconds'] / 60:.1f} min CPU" if "cpu_seconds" in summary else ""
    lines = [
        "# builtin:tiny-clip — model card",
        "",
        "**What it is.** A small image–text dual encoder (pure torch: a conv net on "
        f"{cfg['image_size']}×{cfg['image_size']} images and a {cfg['layers']}-layer word-level "
        f"transformer; {summary['parameters']:,} parameters, fp16 safetensors) that ships inside "
        "bindkit so that all four SABER pairings (text→text, text→image, image→text, "
        "image→image) run offline on a CPU with no download. It is a **fixture for offline use on "
        "the procedural shapes scenes** (`bindkit saber generate --vocab shapes` + `bindkit saber "
        "render --backend procedural`), for demos and tests.",
        "",
        "**What it is not.** Not a general image or text model: it has seen only rendered scenes "
        "of 15 shapes with 20 attributes on a gray floor, and captions built from the shapes "
        "vocabulary (any other word is `<unk>`). Its scores on photographs, other vocabularies or "
        "other benchmarks mean nothing, and it says nothing about how large pretrained models "
        "bind. Roles and instructions are ignored.",
        "",
        "## Training data",
        "",
        f"- SABER-shapes MCQs drawn with **seed {cfg['seed']}** (the evaluation set below uses the "
        f"default seed 0, a different draw; layouts also use seed {cfg['seed']}): "
        f"{summary['mcqs']:,} MCQs (N = {cfg['n_min']}..{cfg['n_max']}, {cfg['per_n']} per N, "
        f"colour collisions avoided), {summary['scenes']:,} scenes (query and four candidates "
        f"each), rendered at {cfg['render_size']} px and box-downsampled to "
        f"{cfg['image_size']} px.",
        "- Captions: each scene's pairs in a fresh random order per step, in SABER's text form "
        f"(attribute names, as evaluated) or, with probability {cfg['generation_share']}, the "
        'generation form (realisations such as "green and orange striped"); images are '
        "mirrored with probability 0.5.",
        "- Individual binding sets can recur between the training and evaluation draws (the "
        "space of N = 2 scenes is small); scenes, layouts and MCQs are different draws.",
        "",
        "## Training",
        "",
        f"- {cfg['steps']:,} AdamW steps (lr {cfg['lr']}, weight decay {cfg['weight_decay']}, "
        f"{cfg['warmup']} warm-up steps, cosine decay), {cfg['batch_mcqs']} whole MCQs per batch "
        f"({5 * cfg['batch_mcqs']} images and captions): the attribute-, object- and joint-swapped "
        "captions of each scene are in-batch hard negatives.",
        "- Loss: symmetric image↔text InfoNCE with a learned temperature (final "
        f"{summary['temperature']:.4f}), plus {cfg['within_weight']} × the same loss within text "
        "and within images; scenes with the same bindings (a query and its binding-preserving "
        "candidate) are positives of each other.",
        f"- One CPU thread, deterministic algorithms, torch {summary['torch']}: "
        f"{summary['seconds'] / 60:.1f} min wall{cpu} (rendering {summary['render_seconds']:.0f} s"
        ") on a 2-core machine shared with other jobs. Equal options give byte-identical weights "
        "(tested on a tiny configuration); these weights' sha256 is "
        f"`{summary['weights_sha256'][:16]}…`.",
    ]
    scores = summary.get("eval")
    if scores:
        bow = summary.get("bow", {})
        lines += [
            "",
            "## SABER-shapes scores",
            "",
            f"`{summary['eval_data']}`: the default shapes set (seed 0, 1,800 MCQs, N = 2..10, "
            "rendered at 256 px with layout seed 0). MCQ accuracy in % (chance 25); bow = the "
            "order-blind bag-of-words baseline (`bow`), which embeds no images.",
            "",
            "| pairing | tiny-clip | bow |",
            "|---|---:|---:|",
        ]
        for pairing, name in _PAIRINGS.items():
            ours = scores.get(pairing, {}).get("mcq_accuracy")
            theirs = bow.get(pairing, {}).get("mcq_accuracy")
            lines.append(f"| {name} | {_pct(ours)} | {_pct(theirs)} |")
        ns = sorted({int(n) for s in scores.values() for n in s["mcq_accuracy_by_n"]})
        lines += [
            "",
            "By N (tiny-clip MCQ accuracy, %):",
            "",
            "| pairing | " + " | ".join(f"N={n}" for n in ns) + " |",
            "|---|" + "---:|" * len(ns),
        ]
        for pairing, name in _PAIRINGS.items():
            if pairing in scores:
                by_n = scores[pairing]["mcq_accuracy_by_n"]
                cells = " | ".join(_pct(by_n.get(str(n))) for n in ns)
                lines.append(f"| {name} | {cells} |")
    lines += [
        "",
        "## Reproduce",
        "",
        "```bash",
        "bindkit saber generate --vocab shapes --out saber-shapes",
        "bindkit saber render saber-shapes --backend procedural",
        "python scripts/train_tiny_clip.py --out src/bindkit/embed/backends/data/tiny_clip "
        "--eval saber-shapes",
        "```",
        "",
        "Files: `config.json` (architecture, vocabulary, preprocessing), `model.safetensors` "
        "(fp16), `training.json` (options and summary), this card.",
        "",
    ]
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="checkpoint folder to write")
    parser.add_argument(
        "--eval", type=Path, help="rendered SABER directory to score the result on (optional)"
    )
    parser.add_argument("-q", "--quiet", action="store_true")
    for f in fields(TrainConfig):
        flag = "--" + f.name.replace("_", "-")
        default = f.default
        if f.name == "widths":
            parser.add_argument(flag, type=int, nargs=3, default=list(default))
        else:
            parser.add_argument(flag, type=type(default), default=default)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    values = {f.name: getattr(args, f.name) for f in fields(TrainConfig)}
    values["widths"] = tuple(values["widths"])
    config = TrainConfig(**values)
    try:
        summary = train(config, args.out, progress=not args.quiet)
        if args.eval is not None:
            import tempfile

            with tempfile.TemporaryDirectory() as results:
                summary["eval"] = evaluate_checkpoint(args.out, args.eval, Path(results) / "a")
                summary["bow"] = evaluate_bow(args.eval, Path(results) / "b")
            summary["eval_data"] = args.eval.name
    except BindkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from bindkit._io import atomic_write_text

    atomic_write_text(args.out / "training.json", json.dumps(summary, indent=1) + "\n")
    atomic_write_text(args.out / "README.md", card(summary))
    if not args.quiet:
        print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
