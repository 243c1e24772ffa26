"""The models users bring, at their published shapes, with random weights and no download.

Each :data:`SHAPES` entry is a public checkpoint's own ``config.json`` (copied into
``bindkit/embed/data/shapes/``, the source named in :attr:`Shape.source`): the same layers,
widths, heads, vocabulary and vision tower, so memory, speed and every code path (prompts, image
resizing, pooling, LoRA, checkpointing) are those of the real model; only the numbers in the
weights are random. Used by the benchmarks and by the tests that run a 2B-shape batch on the CPU.

:func:`write_shape` writes a checkpoint folder that loads like a downloaded one:

- multimodal LLMs (``qwen3-vl-embedding-2b`` ...): ``config.json``, a tokenizer with Qwen's special
  tokens and chat template, ``preprocessor_config.json`` and :data:`RANDOM_WEIGHTS_FILE` instead
  of weights; :class:`~bindkit.embed.backends.mllm.MLLMEmbedder` builds such a model from its
  config with seeded random weights (:func:`build_random_model`), so a 2B/8B folder takes
  kilobytes of disk;
- sentence-transformers encoders (``all-minilm-l6-v2``): the config, a WordPiece tokenizer and
  the random weights themselves (90 MB), since sentence-transformers only loads weights from disk.

What differs from the real checkpoint, and why it does not change the shape: the tokenizer is
a small one trained on bindkit's own vocabulary (about one token per English word, as Qwen's
and BERT's tokenizers give on these captions), so the special token ids in the config are
remapped to its ids; the vocabulary size of the embedding matrix stays the published one.

Example:
    >>> from bindkit.embed.shapes import SHAPES
    >>> SHAPES["qwen3-vl-embedding-2b"].family
    'qwen3-vl-embedding'
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

#: in a shape's folder: ``{"shape": name, "seed": seed, "source": url}``; its presence tells the
#: multimodal backend to build the model from ``config.json`` with random weights
RANDOM_WEIGHTS_FILE = "random_weights.json"
#: the tokenizer's vocabulary (the published embedding matrix keeps its size)
TOKENIZER_VOCABULARY = 2000
_CLIP_MEAN = [0.48145466, 0.4578275, 0.40821073]
_CLIP_STD = [0.26862954, 0.26130258, 0.27577711]


@dataclass(frozen=True)
class Shape:
    """One published checkpoint's architecture.

    Attributes:
        family: The backend that loads it (``qwen3-vl-embedding``, ``gme``, ``vlm2vec``, ``st``).
        config: The file under ``bindkit/embed/data/shapes/`` (the published ``config.json``).
        source: Where the config was published.
        processor: The image processor's settings (None: a text encoder).
    """

    family: str
    config: str
    source: str
    processor: dict[str, Any] | None = None

    def read_config(self) -> dict[str, Any]:
        text = files("bindkit.embed").joinpath(f"data/shapes/{self.config}").read_text("utf-8")
        config: dict[str, Any] = json.loads(text)
        return config


_QWEN3_VL_PROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessor",
    "patch_size": 16,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "image_mean": [0.5, 0.5, 0.5],
    "image_std": [0.5, 0.5, 0.5],
    "size": {"shortest_edge": 65536, "longest_edge": 16777216},
}
_QWEN2_VL_PROCESSOR = {
    "image_processor_type": "Qwen2VLImageProcessor",
    "patch_size": 14,
    "merge_size": 2,
    "temporal_patch_size": 2,
    "image_mean": _CLIP_MEAN,
    "image_std": _CLIP_STD,
    "size": {"shortest_edge": 3136, "longest_edge": 12845056},
}

SHAPES: dict[str, Shape] = {
    "qwen3-vl-embedding-2b": Shape(
        "qwen3-vl-embedding",
        "qwen3-vl-embedding-2b.json",
        "https://huggingface.co/Qwen/Qwen3-VL-Embedding-2B/blob/main/config.json",
        _QWEN3_VL_PROCESSOR,
    ),
    "qwen3-vl-embedding-8b": Shape(
        "qwen3-vl-embedding",
        "qwen3-vl-embedding-8b.json",
        "https://huggingface.co/Qwen/Qwen3-VL-Embedding-8B/blob/main/config.json",
        _QWEN3_VL_PROCESSOR,
    ),
    # VLM2Vec's Qwen2-VL checkpoints are LoRA adapters on this model (REFERENCE.md)
    "qwen2-vl-2b": Shape(
        "vlm2vec",
        "qwen2-vl-2b.json",
        "https://huggingface.co/Qwen/Qwen2-VL-2B-Instruct/blob/main/config.json",
        _QWEN2_VL_PROCESSOR,
    ),
    "gme-qwen2-vl-2b": Shape(
        "gme",
        "gme-qwen2-vl-2b.json",
        "https://huggingface.co/Alibaba-NLP/gme-Qwen2-VL-2B-Instruct/blob/main/config.json",
        _QWEN2_VL_PROCESSOR,
    ),
    "all-minilm-l6-v2": Shape(
        "st",
        "all-minilm-l6-v2.json",
        "https://huggingface.co/sentence-transformers/all-MiniLM-L6-v2/blob/main/config.json",
    ),
}


def get_shape(name: str) -> Shape:
    """The shape called ``name``, or a one-line error with the closest names."""
    if name not in SHAPES:
        import difflib

        close = difflib.get_close_matches(name, list(SHAPES), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise BindkitError(f"unknown model shape {name!r}; {hint}known: {', '.join(SHAPES)}")
    return SHAPES[name]


def _corpus() -> list[str]:
    """Texts the tokenizer learns from: bindkit's vocabulary and its prompt words."""
    data = files("bindkit.saber").joinpath("data/vocab")
    words = [
        line.strip()
        for name in ("objects.txt", "colors.txt")
        for line in data.joinpath(name).read_text("utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]
    sentences = [
        "Represent the user's input.",
        "You are a helpful assistant.",
        "Find an image that matches the given caption.",
        "Represent the given image.",
        "a photo of a red cube and a blue sphere on a wooden table next to the striped kite",
    ]
    return [" ".join(words)] * 4 + sentences * 20 + [f"a {w} and the {w}" for w in words]


def _remap_token_ids(config: dict[str, Any]) -> dict[str, Any]:
    """The config with its special token ids set to the small tokenizer's (same shape)."""
    from bindkit.embed.backends.mllm.tokenizer import SPECIAL_TOKENS

    ids = {token: index for index, token in enumerate(SPECIAL_TOKENS)}
    remap = {
        "bos_token_id": ids["<|im_start|>"],
        "eos_token_id": ids["<|im_end|>"],
        "pad_token_id": ids["<|endoftext|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
        "vision_token_id": ids["<|vision_end|>"],
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
    }
    out = {k: remap.get(k, v) for k, v in config.items()}
    if isinstance(out.get("text_config"), dict):
        out["text_config"] = {k: remap.get(k, v) for k, v in out["text_config"].items()}
    return out


def write_shape(name: str, out: Path, *, seed: int = 0) -> Path:
    """Write a checkpoint folder of shape ``name`` into ``out`` (made; written whole through a
    staging folder, so a killed call leaves nothing half-written) and return ``out``.

    Raises:
        BindkitError: an unknown shape, or ``out`` exists and is not this shape's folder.
    """
    shape = get_shape(name)
    out = Path(out)
    marker = {"shape": name, "seed": seed, "source": shape.source}
    if out.exists():
        if _written_as(out) == marker:
            return out
        raise BindkitError(
            f"{out}: exists and is not the {name} folder of seed {seed}; give a new folder"
        )
    from bindkit._io import make_dirs

    make_dirs(out.parent)
    import shutil
    import tempfile

    # one staging folder per writer: two processes asking for the same shape both succeed
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        if shape.family == "st":
            _write_text_encoder(shape, staging, seed)
        else:
            _write_mllm(shape, staging)
        (staging / RANDOM_WEIGHTS_FILE).write_text(json.dumps(marker, indent=2) + "\n")
        try:
            staging.rename(out)
        except OSError:
            if _written_as(out) != marker:  # another writer's folder of this shape is as good
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return out


def _written_as(folder: Path) -> dict[str, Any] | None:
    try:
        marker: dict[str, Any] = json.loads((folder / RANDOM_WEIGHTS_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return marker


def _write_mllm(shape: Shape, out: Path) -> None:
    from bindkit.embed.backends.mllm.tokenizer import (
        CHAT_TEMPLATE,
        QWEN2_VL_CHAT_TEMPLATE,
        build_tokenizer,
    )

    config = _remap_token_ids(shape.read_config())
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    template = CHAT_TEMPLATE if config["model_type"] == "qwen3_vl" else QWEN2_VL_CHAT_TEMPLATE
    build_tokenizer(out, _corpus(), TOKENIZER_VOCABULARY, template)
    processor = {
        "do_convert_rgb": True,
        "do_normalize": True,
        "do_rescale": True,
        "do_resize": True,
        "resample": 3,
        "rescale_factor": 1 / 255,
        **(shape.processor or {}),
    }
    (out / "preprocessor_config.json").write_text(json.dumps(processor, indent=2) + "\n")


def _write_text_encoder(shape: Shape, out: Path, seed: int) -> None:
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import AutoConfig, AutoModel, BertTokenizerFast

    config = shape.read_config()
    (out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=TOKENIZER_VOCABULARY, special_tokens=special, show_progress=False
    )
    tokenizer.train_from_iterator(_corpus(), trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    BertTokenizerFast(
        tokenizer_object=tokenizer,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
        model_max_length=int(config.get("max_position_embeddings", 512)),
    ).save_pretrained(out)
    torch.manual_seed(seed)
    model = AutoModel.from_config(AutoConfig.from_pretrained(out))
    model.save_pretrained(out)


def random_weights(folder: str | Path) -> dict[str, Any] | None:
    """The :data:`RANDOM_WEIGHTS_FILE` record of a shape folder, or None for real weights."""
    path = Path(folder).expanduser()
    if not (path / RANDOM_WEIGHTS_FILE).is_file() or any(path.glob("*.safetensors")):
        return None
    return _written_as(path)


def build_random_model(folder: str | Path, dtype: Any) -> Any:
    """The transformers base model of a shape folder, built from its ``config.json`` with the
    folder's seeded random weights in ``dtype`` (what ``AutoModel.from_pretrained`` would
    return for a checkpoint of that shape)."""
    import torch
    from transformers import AutoConfig, AutoModel

    marker = random_weights(folder)
    if marker is None:
        raise BindkitError(f"{folder}: no {RANDOM_WEIGHTS_FILE}; not a random-weights shape")
    config = AutoConfig.from_pretrained(str(folder))
    torch.manual_seed(int(marker["seed"]))
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)  # built in dtype at once: no float32 copy of 8B weights
    try:
        model = AutoModel.from_config(config)
    finally:
        torch.set_default_dtype(previous)
    return model.to(dtype)


def shape_spec(name: str, root: Path, *, seed: int = 0, family: str | None = None) -> str:
    """The model spec of shape ``name`` with random weights (its folder written under ``root``
    on first use): e.g. ``qwen3-vl-embedding:ROOT/qwen3-vl-embedding-2b-seed0``.

    ``family`` loads the folder with another backend family (a Qwen2-VL shape as ``gme``).
    """
    shape = get_shape(name)
    folder = write_shape(name, Path(root) / f"{name}-seed{seed}", seed=seed)
    return f"{family or shape.family}:{folder}"
