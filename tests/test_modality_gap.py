"""Alignment and modality gap: the formulas on hand-made vectors, and a tiny Qwen2-VL run."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from bindkit.analysis.modality_gap import (
    alignment,
    layout_specs,
    modality_gap,
    project_2d,
    read_image_captions,
)
from bindkit.errors import BindkitError, DataFormatError


def test_alignment_and_gap_on_hand_made_vectors() -> None:
    images = np.array([[1.0, 0.0], [0.0, 1.0]])
    captions = np.array([[0.6, 0.8], [0.0, 1.0]])
    assert alignment(images, captions) == pytest.approx((0.6 + 1.0) / 2)
    # centroids (0.5, 0.5) and (0.3, 0.9): distance sqrt(0.04 + 0.16)
    assert modality_gap(images, captions) == pytest.approx(np.sqrt(0.2))
    assert modality_gap(images, images) == 0.0


def test_pca_projection_keeps_the_main_direction() -> None:
    rng = np.random.default_rng(0)
    line = np.outer(np.linspace(-1, 1, 20), [3.0, 4.0, 0.0]) + 0.01 * rng.standard_normal((20, 3))
    coords, method = project_2d(line)
    if method == "pca":
        assert abs(np.corrcoef(coords[:, 0], np.linspace(-1, 1, 20))[0, 1]) > 0.99
    assert coords.shape == (20, 2)


def test_layouts_and_input_errors(tmp_path: Path) -> None:
    assert list(layout_specs("mllm:/m")) == ["none", "user", "system", "hierarchical"]
    assert layout_specs("mllm:/m", ["system"]) == {"system": "mllm:/m+layout=system"}
    assert layout_specs("mllm:/m+layout=user") == {"default": "mllm:/m+layout=user"}
    with pytest.raises(BindkitError, match="--layouts sys"):
        layout_specs("mllm:/m", ["sys"])
    with pytest.raises(BindkitError, match="applies to mllm"):
        layout_specs("clip:ViT-B-32", ["system"])
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"image": "x.png", "caption": "a cat"}\n')
    with pytest.raises(DataFormatError, match=r"image 'x\.png' not found"):
        read_image_captions(bad)
    bad.write_text('{"image": "x.png"}\n')
    with pytest.raises(DataFormatError, match="needs an 'image' path and a 'caption'"):
        read_image_captions(bad)


def test_modality_gap_command_on_a_tiny_qwen2_vl(
    tiny_qwen2_vl: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from PIL import Image

    from bindkit.cli._modality_gap import add_parser

    rng = np.random.default_rng(0)
    rows = []
    for i, caption in enumerate(["a red cube", "a blue kite", "a striped cube", "a kite"]):
        pixels = (rng.random((28, 28, 3)) * 255).astype("uint8")
        Image.fromarray(pixels).save(tmp_path / f"{i}.png")
        rows.append(json.dumps({"image": f"{i}.png", "caption": caption}))
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(rows) + "\n")

    parser = argparse.ArgumentParser()
    add_parser(parser.add_subparsers())
    out = tmp_path / "gap"
    args = parser.parse_args(
        ["modality-gap", "--model", f"mllm:{tiny_qwen2_vl}", "--pairs", str(pairs),
         "--layouts", "none,system,hierarchical", "--out", str(out),
         "--instruction", "Find an image that matches the given caption."]
    )  # fmt: skip
    assert args.handler(args) == 0
    record = json.loads((out / "modality_gap.json").read_text())
    assert list(record["layouts"]) == ["none", "system", "hierarchical"]
    assert record["provenance"]["n_pairs"] == 4 and len(record["provenance"]["pairs_sha256"]) == 64
    for layout in record["layouts"].values():
        assert -1 <= layout["alignment"] <= 1 and 0 <= layout["modality_gap"] <= 2
    # the layouts change the prompt, so they change the numbers
    gaps = {round(v["modality_gap"], 6) for v in record["layouts"].values()}
    assert len(gaps) == 3
    assert (out / "modality_gap.png").read_bytes()[:4] == b"\x89PNG"
    assert "hierarchical" in capsys.readouterr().out
