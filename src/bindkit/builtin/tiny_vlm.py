"""Train ``builtin:tiny-vlm``: a few-MB Qwen3-VL embedder on procedurally rendered scenes.

The model is transformers' own ``Qwen3VLModel`` (vision tower with a patch merger and DeepStack,
M-RoPE language model) at a tiny size, with a byte-level BPE tokenizer trained here on the
shapes vocabulary's captions and the Qwen3-VL-Embedding prompt strings, Qwen's special tokens and
the Qwen3-VL chat template. Training runs through bindkit's own ``qwen3-vl-embedding`` backend
(:class:`~bindkit.embed.backends.mllm.MLLMEmbedder`: the system instruction "Represent the user's
input.", the chat template, ``smart_resize`` with factor 32, M-RoPE positions, last-token
pooling), so the shipped model is trained on exactly the inputs it is evaluated on.

Recipe (as web-scale embedders are trained, so it binds weakly): every batch holds scenes of
different MCQs (no swapped captions, no hard negatives); loss = symmetric image↔caption InfoNCE
with a learned temperature, plus ``--text-weight`` × a caption↔caption InfoNCE between two random
orderings of each scene's pairs (a paraphrase term: a caption's meaning does not depend on the
order of its pairs).

Reproducible on the CPU: every random choice comes from ``--seed`` (scene draw, layouts, batch
order, caption orders, initial weights, tokenizer corpus), torch runs deterministic algorithms on
``--threads`` threads, and equal options give byte-identical files.

Usage (the packaged weights; ``scripts/train_tiny_vlm.py`` runs :func:`main`)::

    python scripts/train_tiny_vlm.py --out src/bindkit/embed/backends/data/tiny_vlm \\
        --eval /tmp/saber-shapes   # a rendered `saber generate --vocab shapes` directory
"""

from __future__ import annotations

import json
import math
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from bindkit.builtin import build
from bindkit.builtin.build import multi_positive_nce, optimizer_step, warmup_cosine
from bindkit.builtin.cards import tiny_vlm_card
from bindkit.embed.backends.mllm.tokenizer import build_tokenizer
from bindkit.errors import BindkitError

FAMILY = "qwen3-vl-embedding"


@dataclass(frozen=True)
class TrainConfig:
    """Options of :func:`train` (each is a ``--flag`` of the script)."""

    seed: int = 1  # seed of the scene draw, layouts and training; the eval SABER uses 0
    per_n: int = 100  # training MCQs per N (5 scenes each)
    n_min: int = 2
    n_max: int = 10
    render_size: int = 256  # rendered like the evaluation set, then smart_resized
    max_pixels: int = 128 * 128  # the smart_resize bound the model is trained and used with
    steps: int = 200
    batch: int = 48  # scenes per batch, each of another MCQ
    lr: float = 1e-3
    weight_decay: float = 0.05
    warmup: int = 20
    text_weight: float = 0.5  # weight of the caption-ordering term
    caption_weight: float = 0.0  # weight of the captioning term (next-token loss after the image)
    image_weight: float = 0.0  # weight of the image↔image term over whole MCQs (layouts, swaps)
    image_mcqs: int = 8  # MCQs (all their scenes) in the image↔image term's batch
    hidden: int = 96
    layers: int = 3
    heads: int = 4
    vision_hidden: int = 64
    vision_depth: int = 2
    vocab_size: int = 512
    threads: int = 1

    def check(self) -> None:
        """Every option in range (finite, bounded: a typo never starts an hour of training);
        one line naming the first bad one."""
        from bindkit._checks import check_range

        def option(name: str) -> str:
            return "--" + name.replace("_", "-")

        # (name, low, high): the bounds keep a run under a few hours on a CPU
        bounds: list[tuple[str, float, float]] = [
            ("seed", 0, 2**31 - 1),
            ("per_n", 2, 10_000),
            ("n_min", 2, 10),
            ("n_max", 2, 10),  # the evaluation set's range (N = 2..10)
            ("render_size", 32, 2048),
            ("max_pixels", 64 * 64, 1024 * 1024),  # the processor's floor is 64 x 64
            ("steps", 1, 1_000_000),
            ("batch", 2, 4096),  # InfoNCE needs another scene in the batch
            ("weight_decay", 0, 1),
            ("warmup", 0, 1_000_000),
            ("text_weight", 0, 1000),
            ("caption_weight", 0, 1000),
            ("image_weight", 0, 1000),
            ("image_mcqs", 1, 4096),
            ("hidden", 12, 4096),
            ("layers", 1, 64),
            ("heads", 1, 64),
            ("vision_hidden", 1, 4096),
            ("vision_depth", 1, 64),
            ("vocab_size", 64, 1_000_000),  # room for Qwen's special tokens and the bytes
            ("threads", 1, 1024),
        ]
        for name, low, high in bounds:
            check_range(option(name), getattr(self, name), low, high)
        check_range("--lr", self.lr, 0, 1, low_open=True)
        from bindkit.saber.build import SaberOptions

        # the scene draw's own checks (even --per-n, --n-min <= --n-max, its size caps)
        SaberOptions(seed=self.seed, per_n=self.per_n, n_min=self.n_min, n_max=self.n_max).check()
        if self.hidden % (2 * self.heads) or self.hidden // self.heads < 6:
            raise BindkitError(
                f"--hidden {self.hidden} / --heads {self.heads}: the head size must be even and "
                "at least 6 (M-RoPE splits half of it three ways)"
            )
        if self.vision_hidden % self.heads:
            raise BindkitError(f"--vision-hidden {self.vision_hidden}: a multiple of --heads")


def check_paths(out: Path, evaluate: Path | None) -> None:
    """``--out`` can be written (a new folder, or a tiny-vlm checkpoint to replace: other files
    there are left alone) and ``--eval`` is a rendered SABER directory; one line each.
    Called before any work, so a wrong path does not cost a training run."""
    from bindkit._io import check_can_create, check_not_input
    from bindkit._outputs import check_own_output
    from bindkit.embed.backends.builtin import EMBEDDER_FILE

    if out.exists() and not out.is_dir():
        raise BindkitError(f"--out {out}: is a file; give a folder for the checkpoint")
    check_can_create(out)
    check_own_output(out, "tiny-vlm")
    if out.is_dir() and any(out.iterdir()) and not (out / EMBEDDER_FILE).is_file():
        raise BindkitError(
            f"--out {out}: not empty and not a tiny-vlm checkpoint (no {EMBEDDER_FILE}); "
            "choose a new or empty folder"
        )
    if evaluate is None:
        return
    check_not_input(out, [evaluate])
    from bindkit.saber.io import read_saber

    saber = read_saber(evaluate)  # one line when it is not a SABER directory
    missing = [
        item
        for mcq in saber.mcqs
        for item in mcq.items
        if (path := saber.image_path(item)) is None or not path.is_file()
    ]
    if missing:
        raise BindkitError(
            f"--eval {evaluate}: not rendered ({len(missing):,} items without an image); run "
            f"`bindkit saber render {evaluate} --backend procedural` first"
        )


def corpus(mcqs: Sequence[Any], seed: int) -> list[str]:
    """The tokenizer's training text: every caption of the draw in SABER's text form and in the
    generation form, and the prompt strings of the family (pure: same draw, same list)."""
    from bindkit.embed.prompts import QWEN3_VL_EMBEDDING_DEFAULT
    from bindkit.saber import language

    rng = random.Random(f"tiny-vlm-corpus/{seed}")
    texts = [QWEN3_VL_EMBEDDING_DEFAULT, "system", "user", "assistant"] * 50
    for mcq in mcqs:
        for item in mcq.items:
            pairs = list(item.bindings)
            texts.append(language.render(pairs))
            realized = [(mcq.realizations[a].text, o) for a, o in pairs]
            rng.shuffle(realized)
            texts.append(language.render(realized))
    return texts


def model_config(config: TrainConfig) -> Any:
    """The Qwen3-VL configuration: patch 16 and merge 2 (smart_resize factor 32, as the real
    model), DeepStack from the first vision block, M-RoPE over (time, height, width)."""
    from transformers import Qwen3VLConfig

    head_dim = config.hidden // config.heads
    half = head_dim // 2  # the rotary half, split about equally over t, h, w
    side = math.isqrt(config.max_pixels) // 16
    return Qwen3VLConfig(
        text_config=dict(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden,
            intermediate_size=2 * config.hidden,
            num_hidden_layers=config.layers,
            num_attention_heads=config.heads,
            num_key_value_heads=config.heads // 2,
            head_dim=head_dim,
            max_position_embeddings=4096,
            rope_scaling={
                "rope_type": "default",
                "mrope_section": [half - 2 * (half // 3), half // 3, half // 3],
                "mrope_interleaved": True,
            },
            bos_token_id=1,
            eos_token_id=2,
            pad_token_id=0,
            tie_word_embeddings=True,
        ),
        vision_config=dict(
            depth=config.vision_depth,
            hidden_size=config.vision_hidden,
            intermediate_size=2 * config.vision_hidden,
            num_heads=config.heads,
            out_hidden_size=config.hidden,
            patch_size=16,
            spatial_merge_size=2,
            temporal_patch_size=2,
            num_position_embeddings=side * side,
            deepstack_visual_indexes=[0],
        ),
        vision_start_token_id=3,
        vision_end_token_id=4,
        image_token_id=5,
        video_token_id=6,
        tie_word_embeddings=True,
    )


def write_initial(config: TrainConfig, out: Path, texts: Sequence[str]) -> None:
    """A randomly initialised checkpoint folder (fp32) with tokenizer, image processor and
    ``embedder.json``: what :func:`train` loads through the backend and trains."""
    import torch
    from transformers import Qwen2VLImageProcessorPil, Qwen3VLModel

    from bindkit._io import atomic_write_text
    from bindkit.embed.backends.builtin import EMBEDDER_FILE

    torch.manual_seed(config.seed)
    Qwen3VLModel(model_config(config)).save_pretrained(out)
    build_tokenizer(out, texts, config.vocab_size)
    Qwen2VLImageProcessorPil(
        patch_size=16,
        merge_size=2,
        temporal_patch_size=2,
        min_pixels=64 * 64,
        max_pixels=config.max_pixels,
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
    ).save_pretrained(out)
    embedder = {"family": FAMILY, "options": {"max_pixels": config.max_pixels}}
    atomic_write_text(out / EMBEDDER_FILE, json.dumps(embedder, indent=1, sort_keys=True) + "\n")


@dataclass
class Scenes:
    """Training scenes, already resized as the backend resizes them."""

    images: list[Any]  # PIL images after the family's smart_resize
    bindings: list[tuple[tuple[str, str], ...]]
    mcq_of: list[int]
    keys: list[frozenset[tuple[str, str, str]]]  # what the scene shows, for positives


def draw(config: TrainConfig) -> list[Any]:
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.vocab import load_vocabulary

    options = SaberOptions(
        seed=config.seed,
        per_n=config.per_n,
        n_min=config.n_min,
        n_max=config.n_max,
        avoid_color_collisions=True,
    )
    return list(build_saber(options, load_vocabulary("shapes")))


def render_scenes(
    config: TrainConfig, mcqs: Sequence[Any], embedder: Any, progress: bool
) -> Scenes:
    """Render every item of the draw at ``render_size`` and resize it with the backend's own
    resize stages (the evaluation images take the same path)."""
    from bindkit.saber.render.procedural import ProceduralBackend

    backend = ProceduralBackend(size=config.render_size, seed=config.seed)
    scenes = Scenes([], [], [], [])
    started = time.perf_counter()
    for index, mcq in enumerate(mcqs):
        for item in mcq.items:
            scenes.images.append(embedder.prepare_image(backend.render(item, mcq)))
            scenes.bindings.append(item.bindings)
            scenes.mcq_of.append(index)
            texts = {a: mcq.realizations[a].text for a, _ in item.bindings}
            scenes.keys.append(frozenset((a, texts[a], o) for a, o in item.bindings))
        if progress and (index + 1) % 300 == 0:
            print(
                f"rendered {len(scenes.images):,} scenes ({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
            )
    return scenes


def ordered_caption(bindings: Sequence[tuple[str, str]], rng: random.Random) -> str:
    """The scene's caption in SABER's text form with its pairs in a random order."""
    from bindkit.saber import language

    pairs = list(bindings)
    rng.shuffle(pairs)
    return language.render(pairs)


def caption_loss(embedder: Any, batch: dict[str, Any], captions: Sequence[str]) -> Any:
    """Mean next-token cross-entropy of each caption (then ``<|im_end|>``) written after its
    image's prompt, with the output head tied to the token embeddings: the generative
    image-to-text training the multimodal LLMs that embedders start from get. ``batch`` is the
    backend's right-padded image batch; the captions are appended after each row's real tokens."""
    import torch

    model, tokenizer = embedder.model, embedder.tokenizer
    ids, mask = batch["input_ids"], batch["attention_mask"]
    end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    rows, targets = [], []
    for i, caption in enumerate(captions):
        real = ids[i, : int(mask[i].sum())]
        written = torch.tensor(
            tokenizer(caption, add_special_tokens=False)["input_ids"] + [end], dtype=ids.dtype
        )
        rows.append(torch.cat([real, written]))
        targets.append(torch.cat([torch.full_like(real, -100), written]))
    width = max(len(r) for r in rows)
    pad = tokenizer.pad_token_id
    input_ids = torch.full((len(rows), width), pad, dtype=ids.dtype)
    labels = torch.full((len(rows), width), -100, dtype=ids.dtype)
    attention = torch.zeros((len(rows), width), dtype=mask.dtype)
    for i, (row, target) in enumerate(zip(rows, targets, strict=True)):
        input_ids[i, : len(row)], labels[i, : len(row)], attention[i, : len(row)] = row, target, 1
    extra = {k: v for k, v in batch.items() if k not in ("input_ids", "attention_mask")}
    if "mm_token_type_ids" in extra:
        extra["mm_token_type_ids"] = (input_ids == embedder.image_token_id).long()
    hidden = model(input_ids=input_ids, attention_mask=attention, **extra).last_hidden_state
    logits = hidden[:, :-1] @ model.get_input_embeddings().weight.T
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100
    )


def load_backend(directory: Path, dtype: str = "float32") -> Any:
    """The folder through bindkit's ``builtin:`` loader (the family's backend and options)."""
    from bindkit.embed.registry import load_embedder

    return load_embedder(
        f"builtin:tiny-vlm+weights={directory}+dtype={dtype}+device=cpu",
        cache=False,
        progress=False,
    )


def train(
    config: TrainConfig, out: Path, *, progress: bool = True, scenes: Scenes | None = None
) -> dict[str, Any]:
    """Train and write the checkpoint folder ``out``; returns a summary."""
    import torch

    from bindkit.embed.backends.builtin import sha256_file

    config.check()
    nce = multi_positive_nce
    torch.set_num_threads(config.threads)
    torch.use_deterministic_algorithms(True)
    started, cpu_started = time.perf_counter(), time.process_time()
    mcqs = draw(config)
    with tempfile.TemporaryDirectory() as tmp:
        initial = Path(tmp)
        write_initial(config, initial, corpus(mcqs, config.seed))
        embedder = load_backend(initial)
        if scenes is None:
            scenes = render_scenes(config, mcqs, embedder, progress)
        rendered = time.perf_counter() - started
        model = embedder.model
        torch.manual_seed(config.seed)
        log_scale = torch.nn.Parameter(torch.tensor(math.log(1 / 0.07)))
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
        rest = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "embed" not in n)]
        optimizer = torch.optim.AdamW(
            [
                {"params": decay, "weight_decay": config.weight_decay},
                {"params": [*rest, log_scale]},
            ],
            lr=config.lr,
            weight_decay=0.0,
        )

        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda step: warmup_cosine(step, config.warmup, config.steps)
        )
        rng = random.Random(f"tiny-vlm/{config.seed}")
        items_of: list[list[int]] = [[] for _ in mcqs]
        for item, mcq in enumerate(scenes.mcq_of):
            items_of[mcq].append(item)
        order: list[int] = []
        losses: list[float] = []
        collate = embedder.collate
        for step in range(config.steps):
            if len(order) < config.batch:
                fresh = list(range(len(mcqs)))
                rng.shuffle(fresh)
                order += fresh
            batch_mcqs, order = order[: config.batch], order[config.batch :]
            items = [rng.choice(items_of[m]) for m in batch_mcqs]  # one scene per MCQ
            first = [ordered_caption(scenes.bindings[i], rng) for i in items]
            second = [ordered_caption(scenes.bindings[i], rng) for i in items]
            keys = [scenes.keys[i] for i in items]
            same = torch.tensor([[a == b for b in keys] for a in keys], dtype=torch.bool)
            image_batch = collate(
                [scenes.images[i] for i in items],
                modality="image",
                role="document",
                instruction=None,
            )
            images = embedder.forward(image_batch)
            texts = embedder.forward(
                collate(first + second, modality="text", role="query", instruction=None)
            )
            one, two = texts[: len(items)], texts[len(items) :]
            scale = log_scale.exp().clamp(max=100.0)
            cross = scale * one @ images.T
            loss = (nce(cross, same) + nce(cross.T, same.T)) / 2
            if config.text_weight:
                within = scale * one @ two.T
                loss = loss + config.text_weight * (nce(within, same) + nce(within.T, same)) / 2
            if config.caption_weight:
                written = [ordered_caption(scenes.bindings[i], rng) for i in items]
                loss = loss + config.caption_weight * caption_loss(embedder, image_batch, written)
            if config.image_weight:
                group = rng.sample(range(len(mcqs)), config.image_mcqs)
                members = [i for m in group for i in items_of[m]]
                pictures = embedder.forward(
                    collate(
                        [scenes.images[i] for i in members],
                        modality="image",
                        role="document",
                        instruction=None,
                    )
                )
                shown = [scenes.keys[i] for i in members]
                eye = torch.eye(len(members), dtype=torch.bool)
                mates = torch.tensor([[a == b for b in shown] for a in shown]) & ~eye
                logits = (scale * pictures @ pictures.T).masked_fill(eye, float("-inf"))
                loss = loss + config.image_weight * nce(logits, mates)
            optimizer_step(
                loss, optimizer, scheduler, losses, step=step, steps=config.steps, every=25,
                scale=scale, started=started, progress=progress,
            )  # fmt: skip
        save(embedder, initial, out)
        parameters = sum(int(p.numel()) for p in model.parameters())
    return {
        "config": asdict(config),
        "parameters": parameters,
        "scenes": len(scenes.images),
        "mcqs": len(mcqs),
        "final_loss": sum(losses[-25:]) / max(1, len(losses[-25:])),
        "temperature": 1 / float(log_scale.detach().exp().clamp(max=100.0)),
        "render_seconds": round(rendered, 1),
        "seconds": round(time.perf_counter() - started, 1),
        "cpu_seconds": round(time.process_time() - cpu_started, 1),
        "weights_sha256": sha256_file(out / "model.safetensors"),
        "torch": torch.__version__,
    }


SHIPPED = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "chat_template.jinja",
    "preprocessor_config.json",
    "embedder.json",
)


def save(embedder: Any, initial: Path, out: Path) -> None:
    """The trained weights in fp16 and the initial folder's tokenizer, processor and
    ``embedder.json`` into ``out`` (other files there are left alone)."""
    import shutil

    import torch
    from safetensors.torch import save as save_tensors

    from bindkit._io import atomic_write_bytes, atomic_write_text

    out.mkdir(parents=True, exist_ok=True)
    state = {
        k: v.detach().to("cpu", torch.float16).contiguous()
        for k, v in embedder.model.state_dict().items()
    }
    atomic_write_bytes(out / "model.safetensors", save_tensors(state, metadata={"format": "pt"}))
    config = json.loads((initial / "config.json").read_text("utf-8"))
    config["dtype"] = "float16"
    config.pop("transformers_version", None)
    atomic_write_text(out / "config.json", json.dumps(config, indent=1, sort_keys=True) + "\n")
    for name in SHIPPED[2:]:
        shutil.copyfile(initial / name, out / name)


def main(argv: Sequence[str] | None = None) -> int:
    """``scripts/train_tiny_vlm.py``: check every option and path, train, score on ``--eval``,
    write the card."""
    return build.main(
        argv,
        description=__doc__.splitlines()[0],
        config_type=TrainConfig,
        train=train,
        card=tiny_vlm_card,
        model="tiny-vlm",
        scores=("mcq_accuracy", "mcq_accuracy_by_n"),
        check_paths=check_paths,
        count_eval_mcqs=True,
    )
