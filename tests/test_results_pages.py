"""The docs' results pages are made from their result files (scripts/results_pages.py): a page that
disagrees with its files fails, and a number the README or the guides show agrees with them."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from script_module import ROOT, load_script

results = load_script("scripts/results_pages.py")


def test_the_committed_pages_are_what_the_files_give() -> None:
    assert results.main(["--check"]) == 0


def test_a_changed_result_file_fails_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    shutil.copytree(results.DATA, data)
    main_job = json.loads((data / results.MAIN_JOB).read_text())
    main_job["scores"]["mcq_accuracy"] = 0.5
    (data / results.MAIN_JOB).write_text(json.dumps(main_job))
    monkeypatch.setattr(results, "DATA", data)
    monkeypatch.setattr(results.render, "__defaults__", (data,))
    monkeypatch.setattr(results.read_data, "__defaults__", (data,))
    assert results.main(["--check"]) == 1
    assert "docs/results/main-job.md: disagrees" in capsys.readouterr().err
    assert "| MCQ accuracy | 50.0 |" in results.render(data)["main-job.md"]
    finetune = json.loads((data / "finetune.json").read_text())
    finetune["tables"][0]["rows"]["base"][0] = 31.0
    (data / "finetune.json").write_text(json.dumps(finetune))
    assert "| base | 31.00 | 55.47 |" in results.render(data)["finetune.md"]


def test_a_row_of_the_wrong_width_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(results.DATA, data)
    document = json.loads((data / "benchmarks.json").read_text())
    document["tables"][0]["rows"]["text→text"] = [81.9]
    (data / "benchmarks.json").write_text(json.dumps(document))
    with pytest.raises(ValueError, match="row 'text→text' has 1 values"):
        results.render(data)


def _results_text() -> str:
    return "\n".join(results.render().values())


def test_the_readme_s_and_quickstart_s_numbers_are_on_the_results_pages() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    headline = readme.split("## Headline results", 1)[1].split("\n## ", 1)[0]
    setup = readme.split("## What bindkit is", 1)[0]
    quickstart = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    main_job = quickstart.split("**The main job**", 1)[1].split("**The tests**", 1)[0]
    numbers = {
        n
        for text in (headline, setup, main_job)
        for n in re.findall(r"(?<![\d.,])\d+\.\d+(?![\d.])", text)
    }
    numbers -= {"3.11"}  # "Python 3.11+"
    assert {"30.9", "56.6", "30.1", "99.67", "67.74", "64.74", "70.86", "0.23"} <= numbers
    shown = _results_text()
    # a number stands alone in a table cell, or inside a cell's change and interval
    missing = sorted(
        n
        for n in numbers
        if not re.search(rf"\|[^|\n]*(?<![\d.]){re.escape(n)}(?![\d])[^|\n]*\|", shown)
    )
    assert not missing, f"numbers the README/quickstart show that no results page has: {missing}"


def _rows(text: str) -> list[tuple[str, list[str]]]:
    """The numeric rows of the markdown tables in ``text``: (first cell, the other cells)."""
    rows = []
    for line in text.splitlines():
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) > 1 and all(re.fullmatch(r"[\d.]+|–", c) for c in cells[1:]):
            rows.append((cells[0], cells[1:]))
    return rows


def _clashes(text: str, current: list[tuple[str, list[str]]]) -> list[str]:
    """Rows of ``text`` labelled and as wide as a results row but equal to none of them."""
    found = []
    for label, cells in _rows(text):
        same = [c for lab, c in current if lab == label and len(c) == len(cells)]
        if same and cells not in same:
            found.append(f"{label}: {cells} vs {same}")
    return found


def test_no_guide_shows_a_results_row_with_other_numbers() -> None:
    """A table row in the README or a guide labelled like a results row, as wide, shows the same
    numbers (the current numbers live on the results pages; the experiments are dated records)."""
    current = _rows(_results_text())
    assert ("base", ["84.2", "56.9", "63.6", "88.1"]) in current
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    checked = [p for p in pages if not {"experiments", "results"} & set(p.parts)]
    clashes = [
        f"{page.relative_to(ROOT)}: {clash}"
        for page in checked
        for clash in _clashes(page.read_text(encoding="utf-8"), current)
    ]
    assert not clashes, "\n".join(clashes)
    stale = "| | tt | ti | it | ii |\n|---|---|---|---|---|\n| base | 84.2 | 56.9 | 63.6 | 88.0 |\n"
    assert _clashes(stale, current) == [
        "base: ['84.2', '56.9', '63.6', '88.0'] vs [['84.2', '56.9', '63.6', '88.1'], "
        "['18.9', '30.6', '20.6', '37.8']]"
    ]
    assert _clashes(stale.replace("88.0", "88.1"), current) == []


def test_the_demo_tables_are_their_runs_recipe_json(tmp_path: Path) -> None:
    """The current finetune tables are made from the demos' own ``recipe.json`` (test halves,
    each change with its paired interval): a changed score or interval changes the page, and a
    file of another recipe is refused."""
    data = tmp_path / "data"
    shutil.copytree(results.DATA, data)
    file = "demo-binding-v1.recipe.json"
    record = json.loads((data / file).read_text())
    page = results.render(data)["finetune.md"]
    base = record["table"]["base"]["saber_t2t_mcq"]
    assert f"| base | {100 * base:.2f} |" in page
    change = record["changes"]["preserve-soup raw"]["saber_t2t_mcq"]
    cell = f"{100 * change['delta']:+.2f} [{100 * change['low']:+.2f}, {100 * change['high']:+.2f}]"
    assert f"| preserve-soup raw | {cell} |" in page
    record["changes"]["preserve-soup raw"]["saber_t2t_mcq"]["low"] = 0.01
    (data / file).write_text(json.dumps(record))
    assert "[+1.00, " in results.render(data)["finetune.md"]
    record["identity"]["recipe"]["name"] = "binding-v9"
    (data / file).write_text(json.dumps(record))
    with pytest.raises(ValueError, match="a run of recipe binding-v9, not binding-v1"):
        results.render(data)
