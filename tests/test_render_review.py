"""The review page: contents, and clicking/typing in headless Chromium exports the rejects."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.saber.build import generate_saber
from bindkit.saber.io import read_saber
from bindkit.saber.render.procedural import ProceduralBackend
from bindkit.saber.render.renderer import read_rejects, render_saber
from bindkit.saber.render.review import review_html, write_review

pytest.importorskip("PIL")


@pytest.fixture
def rendered(tmp_path: Path) -> Path:
    directory = tmp_path / "saber"
    generate_saber(directory, seed=1, per_n=2, n_max=3, vocab="shapes")
    render_saber(directory, ProceduralBackend(size=64), progress=False)
    return directory


def test_page_has_one_row_per_mcq_with_roles_and_captions(rendered: Path) -> None:
    page = review_html(rendered)
    data = read_saber(rendered)
    assert page.count('<section class="mcq">') == len(data.mcqs)
    for item in (i for m in data.mcqs for i in m.items):
        assert f'data-id="{item.id}"' in page and f'src="images/{item.id}.png"' in page
    assert "binding-preserving (correct)" in page and "joint swap" in page
    assert data.mcqs[0].query.generation_text in page


def test_write_review_refuses_an_outside_path(rendered: Path, tmp_path: Path) -> None:
    assert write_review(rendered) == rendered / "review.html"
    with pytest.raises(BindkitError, match="must be a file directly in"):
        write_review(rendered, tmp_path / "elsewhere.html")


def test_review_never_overwrites_the_benchmark(rendered: Path) -> None:
    """Issue 21: `saber review s --out s/saber.jsonl` replaced the benchmark with HTML."""
    before = {p.name: p.read_bytes() for p in rendered.iterdir() if p.is_file()}
    for name, message in (
        ("saber.jsonl", "give an .html file name"),
        ("manifest.json", "give an .html file name"),
    ):
        with pytest.raises(BindkitError, match=message):
            write_review(rendered, rendered / name)
    assert {p.name: p.read_bytes() for p in rendered.iterdir() if p.is_file()} == before


def test_rejects_file_formats(tmp_path: Path) -> None:
    lines = tmp_path / "r.txt"
    lines.write_text("# rejects\na-q\n\nb-c2\n")
    assert read_rejects(lines) == {"a-q", "b-c2"}
    exported = tmp_path / "r.json"
    exported.write_text('{"rejected": ["x-c1"]}')
    assert read_rejects(exported) == {"x-c1"}
    exported.write_text('{"rejected": "x-c1"}')
    with pytest.raises(BindkitError, match="must be a list"):
        read_rejects(exported)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on PATH (CI: apt-get install chromium; pip install playwright)")


def test_review_page_in_headless_chromium(
    rendered: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    executable = _chromium()
    assert main(["saber", "review", str(rendered)]) == 0
    assert "review.html" in capsys.readouterr().out
    data = read_saber(rendered)
    first, second = data.mcqs[0].candidates[1], data.mcqs[1].query
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page(accept_downloads=True)
        page.goto((rendered / "review.html").as_uri())
        # the mouse: reject one candidate
        page.click(f'figure[data-id="{first.id}"] button.reject')
        # the keyboard: from the first query, down one row to the next query, reject it
        page.focus(f'figure[data-id="{data.mcqs[0].query.id}"]')
        page.keyboard.press("ArrowDown")
        page.keyboard.press("r")
        # accept overrides a reject
        page.click(f'figure[data-id="{data.mcqs[0].query.id}"] button.reject')
        page.click(f'figure[data-id="{data.mcqs[0].query.id}"] button.accept')
        assert page.text_content("#count") == "2 rejected"
        with page.expect_download() as download:
            page.click("#export")
        saved = tmp_path / "rejects.json"
        download.value.save_as(saved)
        browser.close()
    assert json.loads(saved.read_text()) == {"rejected": [first.id, second.id]}
    before = {p.name: p.stat().st_mtime_ns for p in (rendered / "images").iterdir()}
    assert main(["saber", "render", str(rendered), "--size", "64", "--redo", str(saved)]) == 0
    after = {p.name: p.stat().st_mtime_ns for p in (rendered / "images").iterdir()}
    changed = {name for name in before if before[name] != after[name]}
    assert changed == {f"{first.id}.png", f"{second.id}.png"}
