"""The procedural renderer and the resumable render loop."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.saber.build import generate_saber
from bindkit.saber.io import read_saber
from bindkit.saber.render import materials, shapes
from bindkit.saber.render.procedural import ProceduralBackend, draw_scene, layout
from bindkit.saber.render.renderer import is_valid_image, render_saber
from bindkit.saber.validate import validate_saber
from bindkit.saber.vocab import load_vocabulary

pytest.importorskip("PIL")


@pytest.fixture
def shapes_saber(tmp_path: Path) -> Path:
    directory = tmp_path / "saber"
    generate_saber(directory, seed=2, per_n=2, n_max=4, vocab="shapes")
    return directory


def _pixels(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def test_shapes_vocabulary_is_fully_drawable() -> None:
    vocab = load_vocabulary("shapes")
    assert vocab.source == "builtin:shapes"
    assert set(vocab.objects) == set(shapes.SHAPES)
    assert {a.name for a in vocab.attributes} == set(materials.PAINTS)
    # every variant a fixed-variant attribute can draw has a colour
    for attribute in vocab.attributes:
        for variant in attribute.variants:
            if attribute.name in ("metallic", "wooden", "glowing"):
                assert variant in materials.COLORS


@pytest.mark.parametrize("shape", sorted(shapes.SHAPES))
def test_every_shape_covers_a_solid_blob(shape: str) -> None:
    g = shapes.geometry(shape, 48)
    coverage = float(g.alpha.mean())
    assert 0.12 < coverage < 0.8, coverage  # neither empty nor filling the sprite
    covered = g.alpha > 0.5
    assert np.allclose(np.linalg.norm(g.normal[:, covered], axis=0), 1, atol=1e-3)


def test_shapes_are_distinct_silhouettes() -> None:
    masks = {s: shapes.geometry(s, 40).alpha > 0.5 for s in shapes.SHAPES}
    names = sorted(masks)
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            iou = (masks[a] & masks[b]).sum() / (masks[a] | masks[b]).sum()
            assert iou < 0.9, (a, b, iou)


def test_layout_never_overlaps_at_n10() -> None:
    rng = np.random.default_rng(0)
    for _ in range(50):
        objects = [("cube", "red", {})] * 10
        boxes = layout(objects, 256, 256, rng)
        for i, a in enumerate(boxes):
            assert a.left >= 0 and a.left + a.size <= 256 and a.top + a.size <= 256
            for b in boxes[i + 1 :]:
                apart = (
                    a.left + a.size <= b.left
                    or b.left + b.size <= a.left
                    or a.top + a.size <= b.top
                    or b.top + b.size <= a.top
                )
                assert apart


def test_scene_draws_each_attribute_in_its_own_colour() -> None:
    red = layout([("sphere", "red", {})], 128, 128, np.random.default_rng(1))
    blue = [p.__class__(p.shape, "blue", (), p.left, p.top, p.size) for p in red]
    r, b = draw_scene(red, 128, 128).astype(int), draw_scene(blue, 128, 128).astype(int)
    p = red[0]
    centre = (p.top + p.size // 2, p.left + p.size // 2)
    assert r[centre][0] > r[centre][2] + 80 and b[centre][2] > b[centre][0] + 80
    corner = (2, 2)
    assert (r[corner] == b[corner]).all()  # the background does not depend on the object


def test_procedural_render_is_deterministic_and_seeded(shapes_saber: Path) -> None:
    data = read_saber(shapes_saber)
    mcq = data.mcqs[-1]
    a = np.asarray(ProceduralBackend(size=96).render(mcq.query, mcq))
    b = np.asarray(ProceduralBackend(size=96).render(mcq.query, mcq))
    c = np.asarray(ProceduralBackend(size=96, seed=1).render(mcq.query, mcq))
    assert (a == b).all() and not (a == c).all()


def test_render_yields_a_valid_image_set_with_flips(shapes_saber: Path) -> None:
    summary = render_saber(shapes_saber, ProceduralBackend(size=64), progress=False)
    data = read_saber(shapes_saber)
    items = [i for m in data.mcqs for i in m.items]
    assert summary.rendered == len(items) and summary.kept == 0 and not summary.failed
    assert all(i.image == f"images/{i.id}.png" for i in items)
    assert validate_saber(shapes_saber, vocab="shapes").ok
    images = json.loads((shapes_saber / "manifest.json").read_text())["images"]
    assert images["backend"] == "procedural" and images["count"] == len(items)
    assert images["options"] == {"size": 64, "seed": 0} and images["flip_applied"] is True
    # the file on disk is the mirrored scene when flip is set
    backend = ProceduralBackend(size=64)
    flipped = next(i for i in items if i.flip)
    plain = next(i for i in items if not i.flip)
    for item, mirrored in ((flipped, True), (plain, False)):
        mcq = next(m for m in data.mcqs if item in m.items)
        scene = np.asarray(backend.render(item, mcq))
        expected = scene[:, ::-1] if mirrored else scene
        assert (_pixels(shapes_saber / item.image) == expected).all()  # type: ignore[operator]


def test_process_pool_gives_the_same_pixels(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for d in (one, two):
        generate_saber(d, seed=4, per_n=2, n_max=3, vocab="shapes")
    render_saber(one, ProceduralBackend(size=64), progress=False)
    render_saber(two, ProceduralBackend(size=64), workers=2, progress=False)
    assert (one / "saber.jsonl").read_bytes() == (two / "saber.jsonl").read_bytes()
    for path in (one / "images").iterdir():
        assert path.read_bytes() == (two / "images" / path.name).read_bytes()


class _Stop(Exception):
    pass


def test_killed_render_resumes_without_redoing(shapes_saber: Path) -> None:
    backend = ProceduralBackend(size=64)
    finished: list[str] = []

    def stop_after_ten(item_id: str) -> None:
        finished.append(item_id)
        if len(finished) == 10:
            raise _Stop

    with pytest.raises(_Stop):
        render_saber(shapes_saber, backend, progress=False, on_image=stop_after_ten)
    assert not (shapes_saber / ".bindkit.lock").exists()
    assert all(i.image is None for m in read_saber(shapes_saber).mcqs for i in m.items)
    kept = shapes_saber / "images" / f"{finished[0]}.png"
    kept_stamp = kept.stat().st_mtime_ns
    truncated = shapes_saber / "images" / f"{finished[1]}.png"
    truncated.write_bytes(truncated.read_bytes()[:200])
    assert not is_valid_image(truncated)
    summary = render_saber(shapes_saber, backend, progress=False)
    assert summary.kept == 9 and summary.redone == 1
    assert summary.rendered == summary.items - 9
    assert kept.stat().st_mtime_ns == kept_stamp and is_valid_image(truncated)
    assert validate_saber(shapes_saber, vocab="shapes").ok


def test_redo_renders_only_the_rejects(shapes_saber: Path) -> None:
    backend = ProceduralBackend(size=64)
    render_saber(shapes_saber, backend, progress=False)
    first = read_saber(shapes_saber).mcqs[0].query.id
    summary = render_saber(shapes_saber, backend, redo={first}, progress=False)
    assert summary.rendered == 1 and summary.redone == 1 and summary.kept == summary.items - 1
    with pytest.raises(BindkitError, match="--redo: 1 id"):
        render_saber(shapes_saber, backend, redo={"nope"}, progress=False)


def test_default_vocabulary_is_refused_with_a_hint(tmp_path: Path) -> None:
    generate_saber(tmp_path, seed=0, per_n=2, n_max=2)
    with pytest.raises(BindkitError, match="--vocab shapes"):
        render_saber(tmp_path, ProceduralBackend(size=64), progress=False)


def test_cli_generate_render_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    d = str(tmp_path / "s")
    assert (
        main(
            [
                "saber",
                "generate",
                "--vocab",
                "shapes",
                "--per-n",
                "2",
                "--n-max",
                "3",
                "--out",
                d,
                "-q",
            ]
        )
        == 0
    )
    assert main(["saber", "render", d, "--size", "64"]) == 0
    out = capsys.readouterr().out
    assert "rendered now" in out and "failed" in out
    assert main(["saber", "validate", d, "--vocab", "shapes"]) == 0
    assert main(["saber", "render", d, "--size", "10"]) == 2
    assert "--size 10" in capsys.readouterr().err
    assert main(["saber", "render", d, "--workers", "0"]) == 2


def test_evaluation_does_not_mirror_rendered_images_twice(shapes_saber: Path) -> None:
    from bindkit.tasks.saber import _inputs

    items = [i for m in read_saber(shapes_saber).mcqs for i in m.items]
    assert any(i.flip for i in items)
    render_saber(shapes_saber, ProceduralBackend(size=64), progress=False)
    data = read_saber(shapes_saber)
    refs = _inputs(data, [i for m in data.mcqs for i in m.items], "image")
    assert not any(ref.flip for ref in refs)  # the files are already mirrored
    hand_made = dataclasses.replace(data, manifest={})  # images attached by hand: flip on read
    refs = _inputs(hand_made, [i for m in data.mcqs for i in m.items], "image")
    assert [ref.flip for ref in refs] == [i.flip for i in items]
