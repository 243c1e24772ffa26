"""builtin:tiny-clip: the packaged weights load offline and embed both modalities; the
checkpoint format is validated; the training script is reproducible."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from bindkit.embed.backends.builtin import (
    CONFIG_FILE,
    WEIGHTS_FILE,
    BuiltinEmbedder,
    builtin_dir,
    load_checkpoint,
    save_checkpoint,
)
from bindkit.embed.registry import load_embedder
from bindkit.errors import BindkitError

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")
pytest.importorskip("PIL")
from PIL import Image  # noqa: E402

from bindkit.embed.backends.tiny_clip import TinyClip, TinyClipConfig, Tokenizer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
TEXTS = [
    "A red cube.",
    "A striped heart and a transparent cylinder.",
    "A golden star, a matte torus, a wooden cone and a glowing ring.",
    "a completely unknown sentence",
]


@pytest.fixture(scope="module")
def model() -> BuiltinEmbedder:
    embedder = load_embedder("builtin:tiny-clip", cache=False, progress=False)
    assert isinstance(embedder, BuiltinEmbedder)
    return embedder


@pytest.fixture(scope="module")
def scenes() -> list[Image.Image]:
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.render.procedural import ProceduralBackend
    from bindkit.saber.vocab import load_vocabulary

    mcqs = build_saber(SaberOptions(seed=5, per_n=2, n_min=2, n_max=3), load_vocabulary("shapes"))
    backend = ProceduralBackend(size=128)
    return [backend.render(mcq.query, mcq) for mcq in mcqs]


def _train_script() -> ModuleType:
    from bindkit.builtin import tiny_clip

    return tiny_clip


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "ckpt"
    target.mkdir()
    for name in (CONFIG_FILE, WEIGHTS_FILE):
        shutil.copy(builtin_dir("tiny-clip") / name, target / name)
    return target


# -- the packaged model -------------------------------------------------------------------------
def test_embeds_texts_and_images_as_unit_float32(
    model: BuiltinEmbedder, scenes: list[Image.Image]
) -> None:
    texts = model.embed_texts(TEXTS)
    images = model.embed_images(scenes)
    dim = model.config.embed_dim
    assert texts.shape == (len(TEXTS), dim) and images.shape == (len(scenes), dim)
    for vectors in (texts, images):
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert model.modalities == frozenset({"text", "image"})


def test_batched_equals_one_by_one(model: BuiltinEmbedder, scenes: list[Image.Image]) -> None:
    together = model.embed_texts(TEXTS)
    alone = np.concatenate([model.embed_texts([t]) for t in TEXTS])
    np.testing.assert_allclose(together, alone, atol=1e-5)
    together = model.embed_images(scenes)
    alone = np.concatenate([model.embed_images([im]) for im in scenes])
    np.testing.assert_allclose(together, alone, atol=1e-5)


def test_deterministic_and_roles_ignored(model: BuiltinEmbedder) -> None:
    again = load_embedder("builtin:tiny-clip", cache=False, progress=False)
    np.testing.assert_array_equal(model.embed_texts(TEXTS), again.embed_texts(TEXTS))
    np.testing.assert_array_equal(
        model.embed_texts(TEXTS, role="query"), model.embed_texts(TEXTS, role="document")
    )
    assert model.fingerprint == again.fingerprint


def test_word_order_changes_the_text_vector(model: BuiltinEmbedder) -> None:
    swapped = model.embed_texts(["A red cube and a blue sphere.", "A blue cube and a red sphere."])
    assert float(swapped[0] @ swapped[1]) < 0.999


def test_image_resize_is_a_box_filter_to_the_input_size(model: BuiltinEmbedder) -> None:
    """A 256 px render and its own box downsample give the same vector (the preprocessing is the
    one the training script used); a different size squashes to the same input size."""
    rng = np.random.default_rng(0)
    picture = Image.fromarray(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8))
    size = model.config.image_size
    small = picture.resize((size, size), Image.Resampling.BOX)
    np.testing.assert_allclose(
        model.embed_images([picture]), model.embed_images([small]), atol=1e-5
    )


def test_shipped_model_binds_above_chance_on_shapes(tmp_path: Path) -> None:
    """The packaged weights pick the right caption for a rendered scene (image→text MCQ) well
    above the 25 % chance level on a small shapes set drawn with a seed used neither for
    training (1) nor for the reported evaluation (0)."""
    from bindkit.evaluation import evaluate
    from bindkit.saber.build import generate_saber
    from bindkit.saber.render.procedural import ProceduralBackend
    from bindkit.saber.render.renderer import render_saber

    generate_saber(tmp_path / "s", seed=7, per_n=20, n_min=2, n_max=3, vocab="shapes")
    render_saber(tmp_path / "s", ProceduralBackend(), progress=False)
    records = evaluate(
        ["builtin:tiny-clip"],
        data=tmp_path / "s",
        pairings="it,ti",
        out=tmp_path / "r",
        cache=False,
        report=False,
        verbose=False,
    )
    scores = {r["pairing"]: r["scores"]["mcq_accuracy"] for r in records}
    assert scores["it"] > 0.5 and scores["ti"] > 0.5, scores


# -- the registry and options -------------------------------------------------------------------
def test_spec_typos_get_suggestions() -> None:
    with pytest.raises(BindkitError, match=r"did you mean builtin:tiny-clip\?"):
        load_embedder("builtin:tiny-clp", cache=False)
    with pytest.raises(BindkitError, match="did you mean builtin"):
        load_embedder("builtn:tiny-clip", cache=False)
    with pytest.raises(BindkitError, match="needs an argument"):
        load_embedder("builtin", cache=False)


def test_weights_option_must_be_a_directory(tmp_path: Path) -> None:
    with pytest.raises(BindkitError, match="not a directory"):
        load_embedder(f"builtin:tiny-clip+weights={tmp_path / 'nope'}", cache=False)


def test_fingerprint_follows_the_weights_and_config(tmp_path: Path, model: BuiltinEmbedder) -> None:
    copy = _copy(tmp_path)
    same = load_embedder(f"builtin:tiny-clip+weights={copy}", cache=False)
    assert same.fingerprint == model.fingerprint
    changed = load_checkpoint(copy)
    with torch.no_grad():
        changed.text.proj.bias[0] += 0.5
    save_checkpoint(changed, copy)
    retrained = load_embedder(f"builtin:tiny-clip+weights={copy}", cache=False)
    assert retrained.fingerprint != model.fingerprint
    assert retrained.describe()["weights"] != model.describe()["weights"]


# -- checkpoint validation ----------------------------------------------------------------------
def _one_line_error(directory: Path, match: str) -> None:
    with pytest.raises(BindkitError, match=match) as info:
        load_checkpoint(directory)
    assert "\n" not in str(info.value)


def test_corrupt_weights_file_is_one_line_error(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    data = (copy / WEIGHTS_FILE).read_bytes()
    (copy / WEIGHTS_FILE).write_bytes(data[: len(data) // 2])
    _one_line_error(copy, "unreadable safetensors file")
    (copy / WEIGHTS_FILE).write_bytes(b"\x00" * 40)
    _one_line_error(copy, "unreadable safetensors file")


def test_wrong_shapes_are_one_line_error(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    config = json.loads((copy / CONFIG_FILE).read_text())
    config["embed_dim"] = config["embed_dim"] // 2
    (copy / CONFIG_FILE).write_text(json.dumps(config))
    _one_line_error(copy, r"tensor '.*' has the wrong shape")
    config["embed_dim"] *= 2
    config["layers"] += 1
    (copy / CONFIG_FILE).write_text(json.dumps(config))
    _one_line_error(copy, r"tensor 'text\.layers\.\d\..*' missing")


def test_bad_config_and_missing_files_are_one_line_errors(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    (copy / CONFIG_FILE).write_text('{"format": "something-else"}')
    _one_line_error(copy, "not a tiny-clip config")
    config = json.loads((builtin_dir("tiny-clip") / CONFIG_FILE).read_text())
    (copy / CONFIG_FILE).write_text(json.dumps({**config, "colour": 1}))
    _one_line_error(copy, "unknown field 'colour'")
    (copy / CONFIG_FILE).write_text(json.dumps({**config, "layers": "2"}))
    _one_line_error(copy, "layers must be a whole number")
    (copy / CONFIG_FILE).write_text("{not json")
    _one_line_error(copy, "not a tiny-clip config")
    (copy / WEIGHTS_FILE).unlink()
    _one_line_error(copy, "model.safetensors: missing")


# -- tokenizer and architecture -----------------------------------------------------------------
def test_tokenizer_maps_unknown_words_and_truncates() -> None:
    config = TinyClipConfig(vocabulary=("<pad>", "<unk>", "a", "red", "cube"), max_tokens=3)
    tokenizer = Tokenizer(config)
    assert tokenizer.ids("A red, CUBE!") == [2, 3, 4]
    assert tokenizer.ids("a blue cube") == [2, 1, 4]
    assert tokenizer.ids("a red cube a red cube") == [2, 3, 4]
    assert tokenizer.ids("...") == [1]
    assert tokenizer(["a", "a red"]).tolist() == [[2, 0], [2, 3]]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"vocabulary": ("a", "b", "c")}, "must start with"),
        ({"vocabulary": ("<pad>", "<unk>", "a", "a")}, "twice"),
        ({"image_size": 90}, "multiple of 4"),
        ({"widths": (32, 60, 128)}, "multiples of 8"),
        ({"heads": 3}, "multiple of heads"),
        ({"std": 0.0}, "std must be positive"),
    ],
)
def test_config_validates(change: dict[str, object], match: str) -> None:
    base: dict[str, object] = {"vocabulary": ("<pad>", "<unk>", "a")}
    with pytest.raises(ValueError, match=match):
        TinyClipConfig(**{**base, **change})  # type: ignore[arg-type]


def test_padding_does_not_change_a_text_vector() -> None:
    torch.manual_seed(0)
    config = TinyClipConfig(vocabulary=("<pad>", "<unk>", "a", "red", "cube"))
    net = TinyClip(config).eval()
    ids = torch.tensor([[2, 3, 4, 0, 0, 0]])
    with torch.no_grad():
        torch.testing.assert_close(net.encode_text(ids), net.encode_text(ids[:, :3]))


# -- training -----------------------------------------------------------------------------------
def test_multi_positive_nce_hand_computed() -> None:
    from bindkit.builtin.build import multi_positive_nce

    logits = torch.tensor([[0.0, 0.0, 0.0], [1.0, 2.0, 3.0]])
    positives = torch.tensor([[True, True, False], [False, False, False]])
    # row 0: the mean of -log(1/3) over its two positives; row 1 has none and is left out
    expected = float(np.log(3.0))
    assert float(multi_positive_nce(logits, positives)) == pytest.approx(expected)
    one = torch.tensor([[False, False, False], [False, False, True]])
    expected = -float(torch.log_softmax(logits[1], 0)[2])
    assert float(multi_positive_nce(logits, one)) == pytest.approx(expected)


def test_contrastive_loss_prefers_the_matching_caption() -> None:
    train = _train_script()
    images = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0]]), dim=-1)
    same = torch.eye(2, dtype=torch.bool)
    aligned = train.contrastive_loss(images, images.clone(), same, torch.tensor(10.0), 0.5)
    crossed = train.contrastive_loss(images, images.flip(0), same, torch.tensor(10.0), 0.5)
    assert float(aligned) < float(crossed)


def test_vocabulary_covers_every_caption_word() -> None:
    train = _train_script()
    from bindkit.embed.backends.tiny_clip import words
    from bindkit.saber.build import SaberOptions, build_saber
    from bindkit.saber.vocab import load_vocabulary

    known = set(train.vocabulary_words())
    mcqs = build_saber(SaberOptions(seed=3, per_n=10), load_vocabulary("shapes"))
    for mcq in mcqs:
        for item in mcq.items:
            assert set(words(item.text + " " + item.generation_text)) <= known, item.text
    shipped = json.loads((builtin_dir("tiny-clip") / CONFIG_FILE).read_text())["vocabulary"]
    assert shipped == train.vocabulary_words()


TINY = [
    "--per-n", "2", "--n-max", "3", "--render-size", "64", "--image-size", "32",
    "--steps", "3", "--batch-mcqs", "2", "--warmup", "1", "--widths", "8", "16", "16",
    "--width", "16", "--heads", "2", "--layers", "1", "--embed-dim", "8", "-q",
]  # fmt: skip


def test_training_is_reproducible_and_loads(tmp_path: Path) -> None:
    train = _train_script()
    outs = [tmp_path / name for name in ("a", "b", "c")]
    assert train.main([*TINY, "--out", str(outs[0])]) == 0
    assert train.main([*TINY, "--out", str(outs[1])]) == 0
    assert train.main([*TINY, "--seed", "2", "--out", str(outs[2])]) == 0
    weights = [(out / WEIGHTS_FILE).read_bytes() for out in outs]
    assert weights[0] == weights[1]
    assert weights[0] != weights[2]
    summary = json.loads((outs[0] / "training.json").read_text())
    assert summary["config"]["steps"] == 3 and summary["mcqs"] == 4
    embedder = load_embedder(f"builtin:tiny-clip+weights={outs[0]}", cache=False)
    assert embedder.embed_texts(["A red cube."]).shape == (1, 8)


def test_training_options_are_validated(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    train = _train_script()
    assert train.main([*TINY, "--steps", "0", "--out", str(tmp_path / "x")]) == 2
    assert "--steps 0: must be at least 1" in capsys.readouterr().err
    assert train.main([*TINY, "--generation-share", "2", "--out", str(tmp_path / "x")]) == 2
    assert "--generation-share 2.0: at most 1" in capsys.readouterr().err
    assert train.main([*TINY, "--image-size", "40", "--out", str(tmp_path / "x")]) == 2
    assert "architecture options: image_size 40 must be a multiple" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_model_card_is_the_shipped_one() -> None:
    """The card of the shipped training.json is the shipped card, byte for byte, but for the
    one paragraph written by hand after a rerun (it names a date and a second measurement)."""
    from bindkit.builtin.cards import tiny_clip_card

    folder = builtin_dir("tiny-clip")
    summary = json.loads((folder / "training.json").read_text("utf-8"))
    shipped = (folder / "README.md").read_text("utf-8").split("\n\n")
    by_hand = [p for p in shipped if p.startswith("Rerun on 2026-12-02 ")]
    assert len(by_hand) == 1
    shipped.remove(by_hand[0])
    assert tiny_clip_card(summary) == "\n\n".join(shipped)


def test_script_is_the_library_command() -> None:
    """``scripts/train_tiny_clip.py`` runs the library's command (one parser for both)."""
    from script_module import load_script

    script = load_script("scripts/train_tiny_clip.py")
    assert script.main is _train_script().main
