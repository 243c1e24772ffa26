"""Rendered images are part of a SABER set's data (issue 20, findings 1, 2, 5): each image
records what it was drawn for, render redraws stale images, validate checks the records, eval's
data identity of image pairings includes the files, and --redo draws a new variant."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder
from bindkit.evaluation import evaluate
from bindkit.saber.build import generate_saber
from bindkit.saber.io import read_saber, write_saber
from bindkit.saber.render.procedural import ProceduralBackend
from bindkit.saber.render.renderer import render_saber
from bindkit.saber.validate import validate_saber

pytest.importorskip("PIL")


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    directory = tmp_path / "saber"
    generate_saber(directory, seed=2, per_n=2, n_max=3, vocab="shapes")
    render_saber(directory, ProceduralBackend(size=64), progress=False)
    return directory


def _pixels(path: Path) -> np.ndarray:
    from PIL import Image

    with Image.open(path) as image:
        return np.asarray(image.convert("RGB"))


def _manifest(directory: Path) -> dict:
    return json.loads((directory / "manifest.json").read_text())


def test_manifest_records_each_image_hash_and_prompt_hash(rendered: Path) -> None:
    from bindkit._io import sha256_file
    from bindkit.saber.io import drawn_for_sha256

    records = _manifest(rendered)["images"]["items"]
    data = read_saber(rendered)
    items = [(i, m) for m in data.mcqs for i in m.items]
    assert set(records) == {i.id for i, _ in items}
    for item, mcq in items:
        record = records[item.id]
        assert record["sha256"] == sha256_file(rendered / f"images/{item.id}.png")
        assert record["prompt_sha256"] == drawn_for_sha256(item, mcq)
        assert record["redo"] == 0
    assert validate_saber(rendered, vocab="shapes").ok


def test_regenerated_data_is_redrawn_not_kept(rendered: Path) -> None:
    old = read_saber(rendered).mcqs[0].query
    before = _pixels(rendered / f"images/{old.id}.png")
    generate_saber(rendered, seed=5, per_n=2, n_max=3, vocab="shapes", overwrite=True)
    new = read_saber(rendered).mcqs[0].query
    assert new.id == old.id and new.image_prompt != old.image_prompt
    summary = render_saber(rendered, ProceduralBackend(size=64), progress=False)
    assert summary.kept == 0 and summary.stale == summary.items == summary.rendered
    assert not np.array_equal(before, _pixels(rendered / f"images/{new.id}.png"))
    assert validate_saber(rendered, vocab="shapes").ok


def test_validate_names_images_drawn_for_other_data(rendered: Path) -> None:
    data = read_saber(rendered)
    first = data.mcqs[0]
    changed = replace(first.query, image_prompt="a plain box")
    mcqs = [replace(first, query=changed), *data.mcqs[1:]]
    write_saber(rendered, mcqs)  # keeps the images section; its records now disagree
    report = validate_saber(rendered, vocab="shapes")
    problems = [v for v in report.violations if v.rule == "manifest"]
    assert len(problems) == 1 and problems[0].where == first.query.id
    assert "1 of" in problems[0].message and "drawn for other data" in problems[0].message


def test_validate_names_items_without_an_image(rendered: Path) -> None:
    data = read_saber(rendered)
    first = data.mcqs[0]
    unrendered = replace(first.query, image=None)
    write_saber(rendered, [replace(first, query=unrendered), *data.mcqs[1:]])
    report = validate_saber(rendered, vocab="shapes")
    problems = [v for v in report.violations if v.rule == "manifest"]
    assert len(problems) == 1 and "have no image" in problems[0].message


def test_redo_draws_a_new_variant_and_records_it(rendered: Path) -> None:
    item = read_saber(rendered).mcqs[0].query.id
    path = rendered / f"images/{item}.png"
    first = _pixels(path)
    render_saber(rendered, ProceduralBackend(size=64), redo={item}, progress=False)
    second = _pixels(path)
    assert not np.array_equal(first, second)
    assert _manifest(rendered)["images"]["items"][item]["redo"] == 1
    render_saber(rendered, ProceduralBackend(size=64), redo={item}, progress=False)
    assert not np.array_equal(second, _pixels(path))
    assert _manifest(rendered)["images"]["items"][item]["redo"] == 2
    assert render_saber(rendered, ProceduralBackend(size=64), progress=False).kept > 0
    assert _manifest(rendered)["images"]["items"][item]["redo"] == 2  # kept, not reset


def test_a_redo_with_another_seed_is_recorded_for_that_image_only(rendered: Path) -> None:
    item = read_saber(rendered).mcqs[0].query.id
    render_saber(rendered, ProceduralBackend(size=64, seed=1), redo={item}, progress=False)
    images = _manifest(rendered)["images"]
    assert images["options"] is None  # no longer one seed for every image
    seeds = {key: r["options"]["seed"] for key, r in images["renders"].items()}
    by_item = {i: seeds[r["render"]] for i, r in images["items"].items()}
    assert by_item[item] == 1 and set(by_item.values()) == {0, 1}
    assert sum(seed == 1 for seed in by_item.values()) == 1


def test_eval_recomputes_image_pairings_when_an_image_changes(
    rendered: Path, tmp_path: Path
) -> None:
    out = tmp_path / "results"
    first = evaluate([TableEmbedder()], data=rendered, out=out, report=False, verbose=False)
    assert {r["pairing"] for r in first} == {"tt", "ti", "it", "ii"}
    item = read_saber(rendered).mcqs[0].query.id
    render_saber(rendered, ProceduralBackend(size=64), redo={item}, progress=False)
    embedder = TableEmbedder()
    again = evaluate([embedder], data=rendered, out=out, report=False, verbose=False)
    recomputed = {r["pairing"] for r, old in zip(again, first, strict=True) if r != old}
    assert recomputed == {"ti", "it", "ii"}  # tt does not depend on the images


@dataclass(frozen=True)
class _FailsSome(ProceduralBackend):
    """Gives up on the first MCQ's items, like an API backend that exhausts its retries."""

    fail: str = "n02-ind-0000"

    def render(self, item, mcq, variant=0):  # type: ignore[no-untyped-def]
        from bindkit.errors import BindkitError

        if mcq.id == self.fail:
            raise BindkitError(f"{item.id}: gave up")
        return super().render(item, mcq, variant)


def test_a_partly_rendered_set_stops_image_pairings_or_marks_them_partial(tmp_path: Path) -> None:
    from bindkit.errors import BindkitError

    directory = tmp_path / "saber"
    generate_saber(directory, seed=2, per_n=2, n_max=3, vocab="shapes")
    summary = render_saber(directory, _FailsSome(size=64), progress=False)
    failed = len(summary.failed)
    assert 0 < failed < summary.items
    out = tmp_path / "results"
    with pytest.raises(BindkitError, match=r"saber: 4 of 16 images missing \(first: "):
        evaluate([TableEmbedder()], data=directory, out=out, verbose=False)
    records = evaluate(
        [TableEmbedder()], data=directory, out=out, verbose=False, allow_missing_images=True
    )
    by = {r["pairing"]: r for r in records}
    assert set(by) == {"tt", "ti", "it", "ii"}
    assert by["tt"]["partial"] is False and "missing_images" not in by["tt"]["counts"]
    for pairing in ("ti", "it", "ii"):
        record = by[pairing]
        assert record["partial"] is True and record["counts"]["missing_images"] > 0
        assert record["counts"]["mcqs"] < record["counts"]["mcqs_total"]
    report = (out / "report.md").read_text()
    assert "## Partial results (†: scored without missing images)" in report
    assert " †" in report.split("## Partial results")[0]  # the overview marks the cells


def test_every_image_missing_is_a_failure_not_an_empty_success(tmp_path: Path) -> None:
    from bindkit.cli import main

    data = tmp_path / "winoground"
    data.mkdir()
    row = {"id": 0, "caption_0": "a", "caption_1": "b", "image_0": "x", "image_1": "y", "tag": "t"}
    (data / "examples.jsonl").write_text(json.dumps(row) + "\n")
    argv = ["eval", "--model", "builtin:tiny-clip", "--task", "winoground", "--data", str(data)]
    argv += ["--out", str(tmp_path / "r"), "--no-cache", "-q"]
    assert main(argv) == 2
    assert main([*argv, "--allow-missing-images"]) == 2
    assert not list((tmp_path / "r").rglob("it.json"))


def test_validate_reads_the_vocabulary_from_the_manifest(tmp_path: Path) -> None:
    from bindkit.errors import VocabularyError

    directory = tmp_path / "shapes"
    generate_saber(directory, seed=1, per_n=2, n_max=3, vocab="shapes")
    report = validate_saber(directory)  # no --vocab: the manifest's hash names "shapes"
    assert report.ok, report.violations[:3]
    manifest = _manifest(directory)
    manifest["vocabulary"]["sha256"] = "f" * 64
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(
        VocabularyError, match=r"not packaged \(sha256 ffffffffffff\); pass --vocab"
    ):
        validate_saber(directory)
    assert validate_saber(directory, vocab="shapes").ok  # an explicit --vocab still rules


def test_a_deleted_image_stops_the_run_or_is_scored_around(rendered: Path, tmp_path: Path) -> None:
    from bindkit.errors import BindkitError

    item = read_saber(rendered).mcqs[0].query
    (rendered / f"images/{item.id}.png").unlink()
    out = tmp_path / "results"
    with pytest.raises(BindkitError, match=r"saber: 1 of \d+ images missing"):
        evaluate([TableEmbedder()], data=rendered, out=out, pairings="it", verbose=False)
    (record,) = evaluate(
        [TableEmbedder()],
        data=rendered,
        out=out,
        pairings="it",
        verbose=False,
        allow_missing_images=True,
    )
    assert record["partial"] is True and record["counts"]["missing_images"] == 1
