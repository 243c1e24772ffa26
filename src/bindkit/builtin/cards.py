"""The model cards (``README.md``) of the shipped models, from their training summaries.

A card is a pure function of ``training.json``: the shipped card is the card of the shipped
summary, byte for byte (``tests/test_builtin_clip.py``, ``tests/test_builtin_vlm.py``).
"""

from __future__ import annotations

import math
from typing import Any

PAIRINGS = {"tt": "text→text", "ti": "text→image", "it": "image→text", "ii": "image→image"}


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}"


def tiny_clip_card(summary: dict[str, Any]) -> str:
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
        for pairing, name in PAIRINGS.items():
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
        for pairing, name in PAIRINGS.items():
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


def _extra_terms(cfg: dict[str, Any]) -> list[str]:
    """Card lines for the optional terms (none for the shipped recipe, whose card they would
    change); the heading's "in-batch negatives only" no longer holds for the image term."""
    lines = []
    if cfg.get("caption_weight"):
        lines.append(
            f"- Plus {cfg['caption_weight']} × captioning: next-token cross-entropy of the "
            "scene's caption written after the image's prompt (output head tied to the token "
            "embeddings), the generative image-to-text training of the LLMs embedders start from."
        )
    if cfg.get("image_weight"):
        # 8: tiny_vlm.TrainConfig's default (a summary edited by hand may lack the field; this
        # module imports no model module, the models import their cards)
        mcqs = cfg.get("image_mcqs", 8)
        lines.append(
            f"- Plus {cfg['image_weight']} × image↔image InfoNCE over all five scenes of {mcqs} "
            "MCQs per step: the other layout of the same binding set is the "
            "positive, **the swapped scenes are in-batch hard negatives for images** (so images "
            "bind); captions still see only other MCQs' captions."
        )
    return lines


def tiny_vlm_card(summary: dict[str, Any]) -> str:
    """The model card (Markdown) for a training summary; with scores when it has them."""
    cfg = summary["config"]
    side = math.isqrt(cfg["max_pixels"])
    tokens = (side // 32) ** 2
    lines = [
        "# builtin:tiny-vlm — model card",
        "",
        "**What it is.** A tiny Qwen3-VL embedder — transformers' own `Qwen3VLModel` (a "
        f"{cfg['vision_depth']}-block vision tower of width {cfg['vision_hidden']} with patch 16, "
        "a 2×2 patch merger and DeepStack, and a "
        f"{cfg['layers']}-layer M-RoPE language model of width {cfg['hidden']}; "
        f"{summary['parameters']:,} parameters, fp16 safetensors) with a byte-level BPE tokenizer "
        f"of {cfg['vocab_size']} tokens trained on the shapes captions and the prompt strings. "
        "It loads through the same backend code as a user's Qwen3-VL-Embedding "
        '(`qwen3-vl-embedding` family: the instruction as system message, default "Represent '
        "the user's input.\", the chat template, `smart_resize` with factor 32, M-RoPE, "
        f"last-token pooling), with `max_pixels` {cfg['max_pixels']:,} (`embedder.json`): a "
        f"{cfg['render_size']}-px scene becomes {side}×{side} pixels, {tokens} visual tokens. "
        "It is a **fixture** that lets bindkit's multimodal-LLM path (text-only LoRA on the "
        "language layers, images at evaluation) run and learn offline on a CPU.",
        "",
        "**What it is not.** Not a general model: it has seen only rendered scenes of 15 shapes "
        "with 20 attributes on a gray floor and captions of the shapes vocabulary (other words "
        "fall apart into bytes it never trained on). Its scores elsewhere mean nothing, and it "
        "says nothing about how large pretrained models bind.",
        "",
        "## Training data",
        "",
        f"- SABER-shapes MCQs drawn with **seed {cfg['seed']}** (the evaluation set below uses "
        f"seed 0, a different draw; layouts also use seed {cfg['seed']}): {summary['mcqs']:,} "
        f"MCQs (N = {cfg['n_min']}..{cfg['n_max']}, {cfg['per_n']} per N, colour collisions "
        f"avoided), {summary['scenes']:,} scenes, rendered at {cfg['render_size']} px and resized "
        "by the backend's own `smart_resize`.",
        "- Captions in SABER's text form (attribute names, as evaluated), the scene's pairs in a "
        "fresh random order each time.",
        "",
        "## Training"
        + ("" if cfg.get("image_weight") else " (as web-scale embedders: in-batch negatives only)"),
        "",
        f"- {cfg['steps']:,} AdamW steps (lr {cfg['lr']}, weight decay {cfg['weight_decay']}, "
        f"{cfg['warmup']} warm-up steps, cosine decay), {cfg['batch']} scenes per batch, each "
        "from a different MCQ: **no swapped captions and no hard negatives**, so nothing forces "
        "the model to bind — like web-scale embedders, it mostly learns which attributes and "
        "objects are present.",
        "- Loss: symmetric image↔caption InfoNCE with a learned temperature (final "
        f"{summary['temperature']:.4f}) plus {cfg['text_weight']} × caption↔caption InfoNCE "
        "between two orderings of each scene's pairs; scenes with the same bindings are "
        "positives of each other. Every input goes through the backend's own prompts, image "
        "pipeline and pooling.",
        *_extra_terms(cfg),
        f"- {cfg['threads']} CPU thread(s), deterministic algorithms, torch {summary['torch']}: "
        f"{summary['seconds'] / 60:.1f} min wall, {summary['cpu_seconds'] / 60:.1f} min CPU "
        f"(rendering {summary['render_seconds']:.0f} s) on a 2-core machine shared with other "
        "jobs. Equal options give byte-identical files (tested on a tiny configuration); these "
        f"weights' sha256 is `{summary['weights_sha256'][:16]}…`.",
    ]
    scores = summary.get("eval")
    if scores:
        bow = summary.get("bow", {})
        lines += [
            "",
            "## SABER-shapes scores",
            "",
            f"`{summary['eval_data']}`: SABER-shapes seed 0 ({summary['eval_mcqs']:,} MCQs, "
            f"{summary['eval_mcqs'] // 9} per N = 2..10, rendered at 256 px with layout seed 0; "
            "the default set has 200 per N). MCQ accuracy in % (chance 25); "
            "bow = the order-blind bag-of-words baseline (`bow`), which embeds no images.",
            "",
            "| pairing | tiny-vlm | bow |",
            "|---|---:|---:|",
        ]
        for pairing, name in PAIRINGS.items():
            ours = scores.get(pairing, {}).get("mcq_accuracy")
            theirs = bow.get(pairing, {}).get("mcq_accuracy")
            lines.append(f"| {name} | {_pct(ours)} | {_pct(theirs)} |")
    per_n = summary.get("eval_mcqs", 1800) // 9
    subset = "" if per_n == 200 else f" --per-n {per_n}"
    lines += [
        "",
        "## Reproduce",
        "",
        "```bash",
        f"bindkit saber generate --vocab shapes --out saber-shapes{subset}",
        "bindkit saber render saber-shapes --backend procedural",
        "python scripts/train_tiny_vlm.py --out src/bindkit/embed/backends/data/tiny_vlm "
        "--eval saber-shapes",
        "```",
        "",
        "Files: `config.json`, `model.safetensors` (fp16), `tokenizer.json`, "
        "`tokenizer_config.json`, `chat_template.jinja`, `preprocessor_config.json`, "
        "`embedder.json` (backend family and options), `training.json` (options and summary), "
        "this card.",
        "",
    ]
    return "\n".join(lines)
