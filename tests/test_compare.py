"""`bindkit compare`: per-query wins/losses/ties under the tie rule, the sign test, refusals,
and the contact sheet, on hand-made results, SABER and a revisited fixture."""

from __future__ import annotations

import pickle
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.evaluation import evaluate
from bindkit.results.compare import compare_results, outcome, sign_test, write_comparison
from bindkit.results.store import result_path, write_result


def test_outcome_counts_wins_losses_and_ties_within_the_tie_rule() -> None:
    a = np.array([1.0, 0.0, 0.5, 1e-6, 0.75, 1.0])
    b = np.array([0.0, 1.0, 0.5, 0.0, 0.25, 1 / 3])
    got = outcome(a, b)
    # a difference of exactly TIE_EPS (1e-6 - 0) is a tie; 0.5 vs 0.5 too
    assert (got.wins, got.losses, got.ties) == (3, 1, 2)
    assert got.mean_difference == pytest.approx(float(np.mean(a - b)))
    assert got.p_value == sign_test(3, 1) == 0.625


def test_a_tie_share_is_no_win() -> None:
    """The newcomer review's step 25: against bow, which ties all four options on every MCQ
    (credit 1/4), a model right on 26 of 90 queries and wrong on 64 is 26 better, 0 worse and
    64 tied, not "bow better 64 vs 26, p = 7.7e-05"; the mean A - B and its paired bootstrap
    interval agree in sign with the sign test."""
    a = np.array([1.0] * 26 + [0.0] * 64)
    b = np.full(90, 0.25)
    got = outcome(a, b, credit=True)
    assert (got.wins, got.losses, got.ties, got.shares_a, got.shares_b) == (26, 0, 64, 0, 90)
    assert got.p_value == sign_test(26, 0) < 1e-7
    assert got.mean_difference == pytest.approx(26 / 90 - 0.25)
    assert got.low < got.mean_difference < got.high and got.resamples == 10_000
    by_value = outcome(a, b)  # AP-like scores compare by value: 0.25 above 0 counts
    assert (by_value.wins, by_value.losses) == (26, 64) and by_value.shares_b == 0
    # a share against a share, or against a miss: neither side is right, a tie
    mixed = outcome(np.array([0.5, 1 / 3, 0.0, 1.0]), np.array([0.25, 0.0, 0.5, 1.0]), credit=True)
    assert (mixed.wins, mixed.losses, mixed.ties, mixed.shares_a, mixed.shares_b) == (0, 0, 4, 2, 2)


def test_the_interval_is_paired_bootstraps_on_a_minus_b() -> None:
    from bindkit.metrics.paired import paired_bootstrap

    rng = np.random.default_rng(3)
    a, b = rng.random(40), rng.random(40)
    got = outcome(a, b)
    expected = paired_bootstrap([b], [a])
    assert (got.mean_difference, got.low, got.high) == (expected.delta, expected.low, expected.high)
    assert got.mean_difference == pytest.approx(float(np.mean(a - b)))


def test_sign_test_is_the_exact_two_sided_binomial_test() -> None:
    stats = pytest.importorskip("scipy.stats")
    for wins, losses in ((0, 0), (1, 0), (9, 1), (10, 10), (108, 923), (30, 12)):
        expected = 1.0 if wins + losses == 0 else stats.binomtest(wins, wins + losses).pvalue
        assert sign_test(wins, losses) == pytest.approx(expected, rel=1e-9)


def _result(
    out: Path,
    model: str,
    values: list[float],
    *,
    data_sha: str = "d" * 64,
    per_query: bool = True,
    top: list[list[str]] | None = None,
) -> Path:
    path = result_path(out, model, "saber", "set-1234abcd", "default", "tt")
    result: dict[str, Any] = {"scores": {"mcq_accuracy": float(np.nanmean(values))}}
    if per_query:
        ids = [f"q{i}" for i in range(len(values))]
        result["per_query"] = {"metric": "correct", "ids": ids, "values": values, "top": top}
    write_result(
        path,
        provenance={
            "task": "saber",
            "subset": "default",
            "pairing": "tt",
            "options": {},
            "data_sha256": data_sha,
        },
        model={"spec": model, "fingerprint": model},
        data={"name": "set", "source": str(out / "missing-set"), "sha256": data_sha},
        result=result,
        seconds=0.0,
    )
    return path


def test_hand_made_results_compare_query_by_query(tmp_path: Path) -> None:
    _result(tmp_path / "a", "m1", [1.0, 1.0, 0.0, 0.5, float("nan"), 1.0], top=[["x", "y"]] * 6)
    _result(tmp_path / "b", "m2", [0.0, 1.0, 1.0, 0.25, 1.0, 0.0], top=[["y", "x"]] * 6)
    c = compare_results(tmp_path / "a", tmp_path / "b", task="saber")
    # q3 (0.5 vs 0.25): both only tied the answer with others, so neither is right: a tie
    assert (c.result.wins, c.result.losses, c.result.ties, c.left_out) == (2, 1, 2, 1)
    assert (c.result.shares_a, c.result.shares_b) == (1, 1)
    assert c.ids == ["q0", "q1", "q2", "q3", "q5"]  # q4 is scored by B only
    assert c.result.mean_difference == pytest.approx((1 - 0 + 0 - 1 + 0.25 + 1) / 5)
    said: list[str] = []
    written = write_comparison(c, tmp_path / "cmp", sheet=2, warn=said.append)
    assert [p.name for p in written][:3] == ["compare.md", "per_query.csv", "contact_sheet.html"]
    md = (tmp_path / "cmp" / "compare.md").read_text()
    interval = f"[{c.result.low:+.4f}, {c.result.high:+.4f}]"
    assert f"| 5 | 2 | 1 | 2 | 1 | 1 | +0.2500 | {interval} | 1 | 1 |" in md
    csv_rows = (tmp_path / "cmp" / "per_query.csv").read_text().splitlines()
    assert csv_rows[1] == "q0,1.0,0.0,1.0,A" and csv_rows[2] == "q1,1.0,1.0,0.0,tie"
    assert csv_rows[4] == "q3,0.5,0.25,0.25,tie"
    sheet = (tmp_path / "cmp" / "contact_sheet.html").read_text()
    assert sheet.count("<th rowspan='2'>") == 2  # the two largest differences (q0, q2 first)
    assert sheet.index(">q0<") < sheet.index(">q2<")
    assert "ids only" in said[0]  # the data source is gone: ids are shown as they are
    assert "<span>q0</span>" in sheet and "<span>x</span>" in sheet
    (tmp_path / "a" / "missing-set" / "jpg").mkdir(parents=True)
    (tmp_path / "a" / "missing-set" / "jpg" / "x").write_bytes(b"")  # an image named by its id
    write_comparison(c, tmp_path / "cmp", sheet=2, warn=said.append)
    sheet = (tmp_path / "cmp" / "contact_sheet.html").read_text()
    assert '<img src="../a/missing-set/jpg/x"' in sheet and "<span>q0</span>" in sheet


def test_refusals_name_the_file_and_what_to_do(tmp_path: Path) -> None:
    _result(tmp_path / "a", "m1", [1.0, 0.0])
    _result(tmp_path / "other", "m2", [1.0, 0.0], data_sha="e" * 64)
    old = _result(tmp_path / "old", "m3", [1.0, 0.0], per_query=False)
    with pytest.raises(BindkitError, match=r"scored on different data \(sha256 dddd"):
        compare_results(tmp_path / "a", tmp_path / "other", task="saber")
    with pytest.raises(
        BindkitError, match=rf"{old}: has no per-query scores; rerun `bindkit eval`"
    ):
        compare_results(tmp_path / "a", tmp_path / "old", task="saber")
    with pytest.raises(BindkitError, match=r"holds no sugarcrepe result"):
        compare_results(tmp_path / "a", tmp_path / "a", task="sugarcrepe")
    with pytest.raises(BindkitError, match=r"no saber result with --subset x; present: default"):
        compare_results(tmp_path / "a", tmp_path / "a", task="saber", subset="x")
    with pytest.raises(BindkitError, match=r"--metric ap: .* has no such per-query score"):
        compare_results(tmp_path / "a", tmp_path / "a", task="saber", metric="ap")
    _result(tmp_path / "both", "m1", [1.0, 0.0])
    _result(tmp_path / "both", "m2", [1.0, 0.0])
    with pytest.raises(BindkitError, match=r"2 matching saber results .*pass the result file"):
        compare_results(tmp_path / "both", tmp_path / "a", task="saber")


def test_cli_refusal_is_one_line_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _result(tmp_path / "a", "m1", [1.0, 0.0])
    _result(tmp_path / "old", "m3", [1.0, 0.0], per_query=False)
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "old"), "--task", "saber"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "has no per-query scores" in err


@pytest.mark.slow
def test_cli_on_saber_st_default_against_bow(
    small_saber: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sentence_transformers")
    for model, out in (("st:default", "a"), ("bow", "b")):
        args = ["eval", "--model", model, "--data", str(small_saber), "--out", str(tmp_path / out)]
        assert main([*args, "-q", "--no-cache"]) == 0
    capsys.readouterr()
    args = ["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--task", "saber"]
    assert main([*args, "--out", str(tmp_path / "cmp")]) == 0
    printed = capsys.readouterr().out
    assert "per-query correct, st:default vs bow" in printed
    row = next(line for line in printed.splitlines() if line.startswith("| 16 |"))
    wins, losses, ties = (int(x) for x in row.split("|")[2:5])
    assert wins + losses + ties == 16
    sheet = (tmp_path / "cmp" / "contact_sheet.html").read_text()
    from bindkit.saber.io import read_saber

    # the MCQ texts are resolved through the recorded data source
    assert any(f"<span>{m.query.text}</span>" in sheet for m in read_saber(small_saber).mcqs)
    assert (tmp_path / "cmp" / "contact_sheet.png").stat().st_size > 0
    nested = [*args, "--metric", "ap_nested", "--out", str(tmp_path / "cmp2")]
    assert main(nested) == 0
    assert "per-query ap_nested" in capsys.readouterr().out


def _revisited(root: Path) -> Path:
    pil = pytest.importorskip("PIL.Image")
    (root / "jpg").mkdir(parents=True)
    rng = np.random.default_rng(0)
    names = [f"im{i}" for i in range(6)]
    for name in [*names, "q0", "q1"]:
        pixels = rng.integers(0, 255, (16, 16, 3), dtype=np.uint8)
        pil.fromarray(pixels).save(root / "jpg" / f"{name}.jpg", format="PNG")
    gnd = [
        {"bbx": [0, 0, 16, 16], "easy": [0, 1], "hard": [2], "junk": [3]},
        {"bbx": [0, 0, 12, 12], "easy": [4], "hard": [], "junk": []},
    ]
    with (root / "gnd_roxford5k.pkl").open("wb") as handle:
        pickle.dump({"imlist": names, "qimlist": ["q0", "q1"], "gnd": gnd}, handle)
    return root


def test_compare_on_a_revisited_fixture_with_tiny_clip(tmp_path: Path) -> None:
    from _fakes import TableEmbedder

    data = _revisited(tmp_path / "roxford5k")
    kwargs = {"task": "roxford5k", "data": data, "cache": False, "verbose": False}
    (clip,) = evaluate(["builtin:tiny-clip"], out=tmp_path / "a", **kwargs)  # type: ignore[arg-type]
    (fake,) = evaluate([TableEmbedder()], out=tmp_path / "b", **kwargs)  # type: ignore[arg-type]
    c = compare_results(tmp_path / "a", tmp_path / "b", task="roxford5k")
    assert c.metric == "ap_medium" and c.ids == ["q0.jpg", "q1.jpg"]
    assert c.a_values.mean() == pytest.approx(clip["scores"]["map_medium"])
    assert c.b_values.mean() == pytest.approx(fake["scores"]["map_medium"])
    assert (c.result.wins, c.result.losses, c.result.ties) == (1, 1, 0)
    write_comparison(c, tmp_path / "cmp")
    sheet = (tmp_path / "cmp" / "contact_sheet.html").read_text()
    # the largest difference first; images are relative links into the data's jpg/ folder
    assert sheet.index("<th rowspan='2'>q1.jpg") < sheet.index("<th rowspan='2'>q0.jpg")
    links = re.findall(r'<img src="\.\./roxford5k/jpg/([^"]+)"', sheet)
    a_top, b_top = c.a.scores.top[1], c.b.scores.top[1]  # q1's, as each result stored it
    assert links[:11] == ["q1.jpg", *a_top, *b_top] and len(set(a_top)) == 5
    assert (tmp_path / "cmp" / "contact_sheet.png").stat().st_size > 0
