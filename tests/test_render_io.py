"""write_saber: a rewritten directory (with images) validates and records its image set."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from bindkit.errors import DataFormatError
from bindkit.saber.build import generate_saber
from bindkit.saber.io import read_saber, write_saber
from bindkit.saber.validate import validate_saber


def _attach_images(directory: Path) -> list:  # type: ignore[type-arg]
    pil = pytest.importorskip("PIL.Image")
    data = read_saber(directory)
    (directory / "images").mkdir(exist_ok=True)
    mcqs = []
    for mcq in data.mcqs:
        items = []
        for item in mcq.items:
            name = f"images/{item.id}.png"
            pil.new("RGB", (8, 8), (len(item.id) * 9 % 255, 0, 0)).save(directory / name)
            items.append(dataclasses.replace(item, image=name))
        mcqs.append(dataclasses.replace(mcq, query=items[0], candidates=tuple(items[1:])))
    return mcqs


def test_write_saber_with_images_validates(tmp_path: Path) -> None:
    generate_saber(tmp_path, seed=1, per_n=2, n_max=3)
    before = json.loads((tmp_path / "manifest.json").read_text())
    mcqs = _attach_images(tmp_path)
    manifest = write_saber(tmp_path, mcqs, {"images": {"backend": "test", "model": None}})
    assert validate_saber(tmp_path).ok
    assert manifest["seed"] == before["seed"] and manifest["vocabulary"] == before["vocabulary"]
    assert manifest["images"]["count"] == 5 * len(mcqs)
    assert manifest["images"]["backend"] == "test"
    assert manifest["files"] != before["files"]
    assert json.loads((tmp_path / "manifest.json").read_text()) == manifest
    assert all(i.image for m in read_saber(tmp_path).mcqs for i in m.items)


def test_changed_image_breaks_the_manifest(tmp_path: Path) -> None:
    generate_saber(tmp_path, seed=1, per_n=2, n_max=2)
    write_saber(tmp_path, _attach_images(tmp_path), {"images": {"backend": "test"}})
    target = next((tmp_path / "images").iterdir())
    target.write_bytes(target.read_bytes() + b"x")
    report = validate_saber(tmp_path)
    assert [v.rule for v in report.violations] == ["manifest"]
    assert "images changed after rendering" in report.violations[0].message


def test_missing_image_is_one_image_violation(tmp_path: Path) -> None:
    generate_saber(tmp_path, seed=1, per_n=2, n_max=2)
    write_saber(tmp_path, _attach_images(tmp_path), {"images": {"backend": "test"}})
    next((tmp_path / "images").iterdir()).unlink()
    assert [v.rule for v in validate_saber(tmp_path).violations] == ["image"]
    with pytest.raises(DataFormatError, match="not found; render it again"):
        write_saber(tmp_path, read_saber(tmp_path).mcqs, {"images": {"backend": "test"}})


def test_write_saber_without_images_keeps_generated_bytes(tmp_path: Path) -> None:
    generate_saber(tmp_path, seed=3, per_n=2, n_max=3)
    data = (tmp_path / "saber.jsonl").read_bytes()
    manifest = (tmp_path / "manifest.json").read_bytes()
    write_saber(tmp_path, read_saber(tmp_path).mcqs)
    assert (tmp_path / "saber.jsonl").read_bytes() == data
    assert (tmp_path / "manifest.json").read_bytes() == manifest
