"""``bindkit compare``'s contact sheet marks each query's correct candidate."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bindkit.saber.io import read_saber


def _result(
    out: Path, model: str, saber: Path, values: list[float], *, answer_first: bool = False
) -> None:
    from bindkit.results.store import result_path, write_result

    mcqs = read_saber(saber).mcqs[: len(values)]
    path = result_path(out, model, "saber", "set-1234abcd", "default", "tt")
    top = [[c.id for c in reversed(m.candidates)] for m in mcqs]  # the answer last
    if answer_first:
        top = [row[::-1] for row in top]
    per_query = {"metric": "correct", "ids": [m.id for m in mcqs], "values": values, "top": top}
    write_result(
        path,
        provenance={"task": "saber", "subset": "default", "pairing": "tt", "options": {},
                    "data_sha256": "d" * 64},
        model={"spec": model, "fingerprint": model},
        data={"name": "set", "source": str(saber), "sha256": "d" * 64},
        result={"scores": {"mcq_accuracy": sum(values) / len(values)}, "per_query": per_query},
        seconds=0.0,
    )  # fmt: skip


def test_the_sheet_marks_the_binding_preserving_candidate(
    small_saber: Path, tmp_path: Path
) -> None:
    from bindkit.results.compare import compare_results, write_comparison

    _result(tmp_path / "a", "m1", small_saber, [1.0, 0.0, 1.0])
    _result(tmp_path / "b", "m2", small_saber, [0.0, 1.0, 0.5])
    comparison = compare_results(tmp_path / "a", tmp_path / "b", task="saber")
    write_comparison(comparison, tmp_path / "cmp", sheet=3, warn=lambda _: None)
    sheet = (tmp_path / "cmp" / "contact_sheet.html").read_text(encoding="utf-8")
    marked = re.findall(r"<td class=correct><span>(.*?)</span></td>", sheet)
    answers = [m.candidates[0].text for m in read_saber(small_saber).mcqs[:3]]
    assert sorted(marked) == sorted(answers * 2)  # once in each model's row
    assert all(m.candidates[0].role == "binding_preserving" for m in read_saber(small_saber).mcqs)
    assert "a green frame marks the correct candidate" in sheet
    assert (tmp_path / "cmp" / "contact_sheet.png").stat().st_size > 0


def test_correct_of_reads_the_task(small_saber: Path) -> None:
    from bindkit.results.compare import correct_of, resolver
    from bindkit.tasks.base import get_task

    dataset = get_task("saber").load(small_saber)
    record = {
        "task": "saber",
        "data": {"source": str(small_saber), "sha256": dataset.sha256},
        "subset": "default",
        "pairing": "tt",
    }
    resolve = resolver(record)
    mcq = read_saber(small_saber).mcqs[0]
    assert correct_of(resolve, mcq.id) == {mcq.id + "-c1"}
    assert correct_of(resolve, "nothing") == frozenset()
    assert correct_of(lambda item: ("id", item), mcq.id) == frozenset()  # a plain resolver


def test_a_mistyped_task_gets_did_you_mean(small_saber: Path, tmp_path: Path) -> None:
    from bindkit.errors import BindkitError
    from bindkit.results.compare import compare_results

    _result(tmp_path / "a", "m1", small_saber, [1.0, 0.0])
    with pytest.raises(BindkitError, match=r"holds no sabre result; did you mean --task saber\?"):
        compare_results(tmp_path / "a", tmp_path / "a", task="sabre")


def test_a_four_way_tie_is_not_marked_first_and_correct(
    small_saber: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The newcomer review's step 25: bow ties all four options (credit 1/4) and lists the
    answer first by chance; the sheet says "tied first", never "#1 ✓ correct"."""
    pytest.importorskip("matplotlib")
    from matplotlib.axes import Axes

    from bindkit.results.compare import compare_results, write_comparison

    _result(tmp_path / "a", "st", small_saber, [1.0, 0.0, 1.0])
    _result(tmp_path / "b", "bow", small_saber, [0.25, 0.25, 0.25], answer_first=True)
    titles: list[str] = []
    original = Axes.set_title
    monkeypatch.setattr(
        Axes, "set_title", lambda ax, text, **kw: titles.append(text) or original(ax, text, **kw)
    )
    comparison = compare_results(tmp_path / "a", tmp_path / "b", task="saber")
    write_comparison(comparison, tmp_path / "cmp", sheet=3, warn=lambda _: None)
    answers = [m.candidates[0].text for m in read_saber(small_saber).mcqs[:3]]
    sheet = (tmp_path / "cmp" / "contact_sheet.html").read_text(encoding="utf-8")
    tied = re.findall(r"<td class=tied><span>(.*?)</span><br><i>tied first \(4-way\)</i>", sheet)
    assert sorted(tied) == sorted(answers)  # bow's row: in the tie, not a win
    assert len(re.findall(r"<td class=correct>", sheet)) == 3  # st's row
    assert "bow #1 ✓ correct" not in titles
    assert titles.count("bow =1 of 4 ✓ correct, tied") == 3
    assert titles.count("st #4 ✓ correct") == 3
