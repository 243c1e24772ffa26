"""The built docs site as a user sees it (scripts/check_docs_site.py): links, anchors and images
resolve; in headless Chromium every page renders and search finds pages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from script_module import ROOT, load_script

check = load_script("scripts/check_docs_site.py")


def _page(path: Path, body: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"<html><body><article>{body}</article></body></html>", encoding="utf-8")


def test_static_check_finds_broken_links_anchors_and_images(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _page(site / "a" / "index.html", '<h1 id="top">A</h1><img src="../pic.png">')
    (site / "pic.png").write_bytes(b"png")
    _page(
        site / "index.html",
        '<a href="a/">ok</a> <a href="a/#top">ok</a> <a href="#here">ok</a>'
        '<span id="here"></span> <a href="https://example.org/x">external</a>'
        '<a href="b/">broken</a> <a href="a/#nowhere">no anchor</a>'
        '<a href="../../etc/passwd">outside</a> <img src="missing.png">',
    )
    assert check.static_problems(site) == [
        "index.html: broken link b/",
        "index.html: link a/#nowhere: no #nowhere on that page",
        "index.html: broken link ../../etc/passwd",
        "index.html: missing image missing.png",
    ]
    assert check.static_problems(site / "a") == []  # a page on its own: its image is outside
    assert check.browsed(site, ()) == [site / "a" / "index.html", site / "index.html"]
    assert check.browsed(site, ("a/*",)) == [site / "a" / "index.html"]
    assert check.browsed(site, ("index.html",)) == [site / "index.html"]  # the path, not its end


def test_the_server_serves_the_site(tmp_path: Path) -> None:
    from urllib.request import urlopen

    _page(tmp_path / "index.html", "<h1>home</h1>")
    with check.serve(tmp_path) as base, urlopen(base) as response:
        assert response.status == 200 and b"<h1>home</h1>" in response.read()


@pytest.fixture(scope="module")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs")
    site = tmp_path_factory.mktemp("docs") / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return site


@pytest.mark.slow  # ~40 s to build, ~1 min to open every page
def test_every_page_renders_and_search_works_in_headless_chromium(
    built_site: Path, tmp_path: Path
) -> None:
    pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    executable = check.chromium()
    if executable is None:
        pytest.skip("no chromium on PATH (CI: apt-get install chromium)")
    assert check.static_problems(built_site) == []
    shots = tmp_path / "shots"
    assert check.browser_problems(built_site, executable, shots) == []
    assert sorted(p.name for p in shots.iterdir()) == sorted(n for _, n in check.SCREENSHOTS)
    broken = tmp_path / "broken"
    shutil.copytree(built_site, broken)
    (broken / "images" / "quickstart-report_saber_by_n.png").write_bytes(b"not a png")
    (broken / "results" / "finetune.png").unlink()
    problems = check.browser_problems(broken, executable)
    assert any("quickstart/: image did not load" in p for p in problems), problems
    assert any("results/finetune/: image did not load" in p for p in problems), problems
    assert any("missing image finetune.png" in p for p in check.static_problems(broken))
