"""The static results site (``bindkit report RESULTS --out site/``): tables, provenance, links,
atomic replacement, and sorting and provenance in a real browser."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.results.site import MARKER, build_site, write_site


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SABER results of three models (bow scores chance, so the MCQ accuracies are set by hand
    to numbers whose text order differs from their numeric order), one marked partial."""
    from bindkit.evaluation import evaluate

    out = tmp_path_factory.mktemp("results")
    evaluate(["bow", "bow+dim=8"], task="saber", out=out, verbose=False, report=False)
    first = next(out.glob("bow/saber/*/default/tt.json"))
    third = out / "third" / first.relative_to(out / "bow")
    third.parent.mkdir(parents=True)
    shutil.copyfile(first, third)
    for path, spec, score in (
        (first, "bow", 5e-05),  # data-value "5e-05": last by number, first by text
        (next(out.glob("bow_dim_8/saber/*/default/tt.json")), "bow+dim=8", 1.0),
        (third, "third", 0.31),
    ):
        record = json.loads(path.read_text())
        record["model"]["spec"] = spec
        record["scores"]["mcq_accuracy"] = score
        record["partial"] = spec == "bow+dim=8"
        path.write_text(json.dumps(record))
    return out


def _record(model: str, task: str, subset: str, score: float, **extra: Any) -> dict[str, Any]:
    return {
        "task": task,
        "pairing": "tt",
        "subset": subset,
        "created": "2026-01-01T00:00:00Z",
        "model": {"spec": model, "fingerprint": f"fp-{model}"},
        "data": {"name": "d", "source": "builtin:d", "sha256": "ab" * 32},
        "provenance": {"metrics_version": 1},
        "scores": {"mcq_accuracy": score, **extra},
        "options": {},
    }


def test_overview_and_tables_hold_the_numbers_and_their_sources() -> None:
    files = [
        ("results/a.json", _record("m1", "saber", "default", 0.5)),
        ("results/b.json", _record("m2", "saber", "default", 0.75)),
        # an older result of m1 on the same cell: the newest one is shown
        ("results/c.json", {**_record("m1", "saber", "default", 0.1), "created": "2025-01-01"}),
    ]
    site = build_site(files)
    overview = site.tables[0]
    assert overview.columns == ["model", "saber d T→T mcq_accuracy"]
    values = {model: cells[0].value for model, cells in overview.rows}
    assert values == {"m1": 0.5, "m2": 0.75}
    source = overview.rows[0][1][0].sources[0]
    assert site.provenance[source]["file"] == "results/a.json"
    assert site.provenance[source]["fingerprint"] == "fp-m1"
    (table,) = site.tables[1:]
    assert table.columns[0] == "model" and "T→T mcq_accuracy" in table.columns
    assert [cells[0].text for _, cells in table.rows] == ["50.0", "75.0"]


def test_an_averaged_benchmark_shows_its_mean_over_subsets_in_the_overview() -> None:
    """MMEB reports the mean over its subsets: one overview column, one table per subset."""
    files = [
        (f"results/{s}.json", {**_record("m", "mmeb", s, v), "scores": {"hit_at_1": v}})
        for s, v in (("ImageNet-1K", 0.2), ("N24News", 0.6))
    ]
    site = build_site(files)
    (column,) = site.tables[0].columns[1:]
    assert column.startswith("mmeb d T→T")
    cell = site.tables[0].rows[0][1][0]
    assert cell.value == pytest.approx(0.4)
    assert len(cell.sources) == 2
    assert [t.title for t in site.tables[1:]] == [
        "mmeb · d · ImageNet-1K (%)",
        "mmeb · d · N24News (%)",
    ]


def test_partial_results_are_marked() -> None:
    files = [("results/a.json", {**_record("m", "saber", "default", 0.5), "partial": True})]
    assert build_site(files).tables[0].rows[0][1][0].text == "50.0 †"


def test_the_site_copies_its_result_files_and_links_them(results: Path, tmp_path: Path) -> None:
    index = write_site(results, tmp_path / "site")
    page = index.read_text()
    data = json.loads(page.split('id="provenance-data">')[1].split("</script>")[0])
    assert len(data) == len(list(results.rglob("*.json")))
    for prov in data.values():
        copy = tmp_path / "site" / prov["file"]
        assert copy.is_file()
        original = results / Path(prov["file"]).relative_to("results")
        assert copy.read_bytes() == original.read_bytes()
    assert (tmp_path / "site" / "saber_by_n.png").is_file()
    assert 'src="saber_by_n.png"' in page
    assert (tmp_path / "site").stat().st_mode & 0o055 == 0o055  # readable by a web server


def test_the_cli_writes_a_site_for_a_folder_name(
    results: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(results), "--out", f"{tmp_path / 'site'}/"]) == 0
    assert "index.html" in capsys.readouterr().out
    assert (tmp_path / "site" / MARKER).is_file()


def test_the_site_may_not_sit_inside_its_results(results: Path) -> None:
    with pytest.raises(BindkitError, match="inside the input directory"):
        write_site(results, results / "site")


def test_a_foreign_folder_is_not_replaced(results: Path, tmp_path: Path) -> None:
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    with pytest.raises(BindkitError, match="not a bindkit site"):
        write_site(results, mine)
    assert (mine / "keep.txt").read_text() == "mine"


def test_a_rerun_replaces_the_site_whole_and_a_failure_keeps_the_old_one(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    write_site(results, site)
    (site / "index.html").write_text("an older page")
    write_site(results, site)  # the files the marker lists are the site's: replaced
    assert (site / "index.html").read_text() != "an older page"
    for mine in (site / "notes.txt", site / "results" / "mine.json"):
        mine.write_text("mine")  # a file bindkit did not write is never deleted
        with pytest.raises(BindkitError, match=rf"holds .*{mine.name}, which bindkit did not"):
            write_site(results, site)
        assert mine.read_text() == "mine"
        mine.unlink()
    before = (site / "index.html").read_text()

    def broken(*args: Any, **kwargs: Any) -> str:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr("bindkit.results.site.to_html", broken)
    with pytest.raises(RuntimeError):
        write_site(results, site)
    assert (site / "index.html").read_text() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_site_of_an_earlier_bindkit_is_rebuilt_but_a_user_file_in_it_is_kept(
    results: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    write_site(results, site)
    (site / MARKER).write_text("written by bindkit report --out DIR/\n")  # no file list yet
    (site / "results" / "old.json").write_text("{}")  # its copies may go
    write_site(results, site)
    assert not (site / "results" / "old.json").exists()
    (site / MARKER).write_text("written by bindkit report --out DIR/\n")
    (site / "notes.md").write_text("mine")
    with pytest.raises(BindkitError, match=r"holds .*notes.md, which bindkit did not write"):
        write_site(results, site)
    assert (site / "notes.md").read_text() == "mine"


def test_two_concurrent_site_builds_leave_one_whole_site(results: Path, tmp_path: Path) -> None:
    import subprocess
    import sys

    site = tmp_path / "site"
    argv = [sys.executable, "-m", "bindkit", "report", str(results), "--out", str(site)]
    for _ in range(2):  # a new folder, then over a site
        runs = [subprocess.Popen(argv, stderr=subprocess.PIPE) for _ in range(2)]
        done = [(run.wait(timeout=300), run.stderr.read().decode()) for run in runs]  # type: ignore[union-attr]
        assert all(rc == 0 for rc, _ in done), done
        listed = json.loads((site / MARKER).read_text())["files"]
        assert sorted(p.relative_to(site).as_posix() for p in site.rglob("*") if p.is_file()) == (
            sorted([*listed, MARKER])
        )
        assert [p.name for p in tmp_path.iterdir()] == ["site"]  # no staging left behind


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("no chromium on PATH (CI: apt-get install chromium; pip install playwright)")


def test_the_site_sorts_and_shows_provenance_in_headless_chromium(
    results: Path, tmp_path: Path
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
    executable = _chromium()
    index = write_site(results, tmp_path / "site")
    records = {
        r["model"]["spec"]: r
        for r in map(json.loads, map(Path.read_text, results.rglob("tt.json")))
    }
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        page = browser.new_page()
        page.goto(index.as_uri())
        table = page.locator("section#t1 table")
        header = table.locator("th", has_text="T→T mcq_accuracy").first
        column = int(header.evaluate("h => [...h.parentNode.children].indexOf(h)"))

        def order() -> list[str]:
            return [
                str(t)
                for t in table.locator("tbody tr").evaluate_all(
                    "rows => rows.map(r => r.cells[0].textContent)"
                )
            ]

        header.click()
        assert header.get_attribute("aria-sort") == "descending"
        assert order() == ["bow+dim=8", "third", "bow"]  # 100.0, 31.0, 0.0: by number
        header.click()
        assert header.get_attribute("aria-sort") == "ascending"
        assert order() == ["bow", "third", "bow+dim=8"]
        table.locator("th", has_text="model").click()
        assert order() == ["third", "bow+dim=8", "bow"]  # by text, descending
        # a score opens its provenance, with a link to its result file that exists
        cell = table.locator("tbody tr", has_text="bow+dim=8").locator("td").nth(column)
        assert cell.text_content().endswith("†")
        cell.click()
        box = page.locator("#provenance")
        assert box.is_visible()
        assert records["bow+dim=8"]["model"]["fingerprint"] in box.text_content()
        href = box.locator("a").first.get_attribute("href")
        assert href is not None and (tmp_path / "site" / href).is_file()
        page.click("#close")
        assert not box.is_visible()
        browser.close()


@pytest.mark.parametrize("swaps", [1, 4, 5])
def test_a_site_swapped_out_while_it_is_read_is_read_again(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swaps: int
) -> None:
    """Another build may replace the site while this one checks it (a folder gone mid-walk):
    the check reads the new site again; a site replaced at every one of five reads is refused
    in one line."""
    site = tmp_path / "site"
    write_site(results, site)
    walk = Path.rglob
    left = [swaps]

    def swapped(self: Path, pattern: str) -> Any:
        if self == site and left[0] > 0:
            left[0] -= 1
            raise FileNotFoundError(site / "results")
        return walk(self, pattern)

    monkeypatch.setattr(Path, "rglob", swapped)
    if swaps < 5:
        assert write_site(results, site) == site / "index.html"
    else:
        with pytest.raises(BindkitError, match=r"^--out .*site: other runs keep replacing it"):
            write_site(results, site)
    assert json.loads((site / MARKER).read_text())["files"]


def test_a_site_another_build_swaps_in_mid_check_is_no_user_file(
    results: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The check lists the old site, then another build renames its own site into place: a
    listed folder the new site lacks is no file a user put there (the folder is another one
    now, so the check reads again)."""
    site = tmp_path / "site"
    write_site(results, site)
    walk = Path.rglob
    swapped = []

    def list_then_swap(self: Path, pattern: str) -> Any:
        listed = list(walk(self, pattern))
        if self == site and not swapped:
            swapped.append(True)
            shutil.copytree(site, tmp_path / "other")
            shutil.rmtree(tmp_path / "other" / "results")  # as another build's own site
            site.rename(tmp_path / "aside")
            (tmp_path / "other").rename(site)
        return iter(listed)

    monkeypatch.setattr(Path, "rglob", list_then_swap)
    assert write_site(results, site) == site / "index.html"
    assert swapped
