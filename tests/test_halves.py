"""Dev/test halves: fixed, hashed, disjoint by the right key; selection refuses a test half; a
change between two models comes with a paired bootstrap interval."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from _shared import SHARED_DATA
from bindkit.errors import BindkitError
from bindkit.evaluation import evaluate
from bindkit.metrics.correlation import spearman
from bindkit.metrics.paired import mean_of, paired_bootstrap, spearman_of
from bindkit.recipes.panel import PanelEntry, panel_changes, read_panel, score_panel
from bindkit.tasks._halves import check_selection, half_of
from bindkit.tasks.base import get_task, has_halves, task_classes
from bindkit.tasks.pairs.sugarcrepe import other_captions


def test_the_half_of_a_key_is_fixed_and_about_half() -> None:
    keys = [f"{i:012d}.jpg" for i in range(4000)]
    dev = sum(half_of(k) == "dev" for k in keys)
    assert 1850 < dev < 2150
    # pinned: a salt or hash change would silently move every reported item
    assert [half_of(k) for k in keys[:8]] == [half_of(k.upper() + "  ") for k in keys[:8]]


def test_pinned_assignment_of_known_keys() -> None:
    # computed once from SHA-256("bindkit/halves/v1\0" + key): a changed salt, hash or parity
    # rule turns this red
    assert [half_of(k) for k in ("a", "b", "c", "000000565045.jpg")] == [
        "dev",
        "dev",
        "test",
        "test",
    ]


def _triplets(path: Path, n: int = 40) -> Path:
    rows = [
        {"query": f"q{i % 10}", "positive": f"caption {i // 2}", "negative": f"neg {i}"}
        for i in range(n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_triplet_halves_split_by_positive(tmp_path: Path) -> None:
    data = _triplets(tmp_path / "t.jsonl")
    task = get_task("triplets")
    whole = task.load(data)
    dev, test = task.halve(whole, "dev"), task.halve(whole, "test")
    positives = [{r["positive"] for r in d.payload} for d in (dev, test)]
    assert not positives[0] & positives[1]
    assert len(dev.payload) + len(test.payload) == len(whole.payload)
    assert {dev.name, test.name} == {"t.dev", "t.test"}
    assert len({whole.sha256, dev.sha256, test.sha256}) == 3


def test_saber_halves_keep_a_chain_together() -> None:
    task = get_task("saber")
    whole = task.load(None)
    dev, test = (task.halve(whole, h).payload.mcqs for h in ("dev", "test"))
    assert len(dev) + len(test) == len(whole.payload.mcqs)
    chains = [{m.chain for m in half if m.chain} for half in (dev, test)]
    assert chains[0] and chains[1] and not chains[0] & chains[1]
    assert not {m.id for m in dev} & {m.id for m in test}


def test_sts_halves_split_pairs(tmp_path: Path) -> None:
    rows = [{"sentence1": f"a {i}", "sentence2": f"b {i}", "score": i % 5} for i in range(60)]
    data = tmp_path / "s.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    task = get_task("sts")
    whole = task.load(data)
    dev, test = task.halve(whole, "dev"), task.halve(whole, "test")
    assert len(dev.payload[0]) + len(test.payload[0]) == 60
    assert not set(dev.payload[0]) & set(test.payload[0])
    assert list(dev.payload[2]) == [
        float(r["score"]) for r in rows if f"a {rows.index(r)}" in dev.payload[0]
    ]


@pytest.mark.skipif(not (SHARED_DATA / "sugarcrepe_pp").is_dir(), reason="no ../shared/data")
def test_sugarcrepe_and_its_plus_plus_split_by_image_alike() -> None:
    halves = {}
    for name in ("sugarcrepe", "sugarcrepe_pp"):
        task = get_task(name)
        whole = task.load(SHARED_DATA / name)
        for half in ("dev", "test"):
            items = task.halve(whole, half).payload.items
            halves[name, half] = {r["filename"] for rows in items.values() for r in rows}
        assert not halves[name, "dev"] & halves[name, "test"]
    # an image of a SugarCrepe dev item is never a SugarCrepe++ test item
    assert halves["sugarcrepe", "dev"] & halves["sugarcrepe_pp", "dev"]
    assert not halves["sugarcrepe", "dev"] & halves["sugarcrepe_pp", "test"]
    assert not halves["sugarcrepe", "test"] & halves["sugarcrepe_pp", "dev"]


def test_the_engine_scores_a_half_under_its_own_name(tmp_path: Path) -> None:
    data = _triplets(tmp_path / "t.jsonl")
    whole = evaluate(["bow"], task="triplets", data=data, out=tmp_path / "r", report=False)
    dev = evaluate(
        ["bow"], task="triplets", data=data, out=tmp_path / "r", report=False, half="dev"
    )
    assert dev[0]["data"]["name"] == "t.dev" and dev[0]["data"]["key"] != whole[0]["data"]["key"]
    assert dev[0]["counts"]["triplets"] < whole[0]["counts"]["triplets"]
    with pytest.raises(BindkitError, match=r"--half 'val': give dev or test"):
        evaluate(["bow"], task="triplets", data=data, out=tmp_path / "r", half="val")


def test_a_task_without_halves_refuses_in_one_line() -> None:
    assert {"saber", "triplets", "sts", "sugarcrepe", "sugarcrepe_pp"} <= {
        n for n, c in task_classes().items() if has_halves(c)
    }
    with pytest.raises(BindkitError, match=r"task winoground has no dev/test halves.*saber"):
        get_task("winoground").halve(None, "dev")  # type: ignore[arg-type]
    with pytest.raises(BindkitError, match=r"panel\[0\]\.half: task winoground has no"):
        read_panel("", None, [{"name": "w", "task": "winoground", "score": "group", "half": "dev"}])


def _entry(name: str, task: str, data: str | None, half: str | None) -> PanelEntry:
    return PanelEntry(name, task, "accuracy", data=data, half=half)


def test_selection_never_reads_a_test_half() -> None:
    with pytest.raises(BindkitError, match=r"panel\[0\] \(x\): reads the test half"):
        check_selection([_entry("x", "sugarcrepe", "sc", "test")], "panel")
    check_selection([_entry("x", "sugarcrepe", "sc", "dev")], "panel")
    check_selection([_entry("x", "sugarcrepe", "sc", None)], "panel")  # nothing reported


def test_selection_and_the_reported_table_read_opposite_halves(tmp_path: Path) -> None:
    shown = [_entry("scpp", "sugarcrepe_pp", str(tmp_path / "scpp"), "test")]
    ok = [_entry("scpp_dev", "sugarcrepe_pp", str(tmp_path / "x" / ".." / "scpp"), "dev")]
    check_selection(ok, "panel", reported=shown, reported_as="the recipe's panel")
    for half in (None, "dev"):
        whole = [_entry("s", "sugarcrepe_pp", str(tmp_path / "scpp"), None)]
        table = [_entry("scpp", "sugarcrepe_pp", str(tmp_path / "scpp"), half)]
        with pytest.raises(BindkitError, match=r"panel\[0\] \(s\): reads the sugarcrepe_pp data"):
            check_selection(whole, "panel", reported=table, reported_as="the recipe's panel")
    # the recipe's SABER ("{saber}", seed 0) is the default set: one data
    saber = [_entry("b", "saber", None, None)]
    with pytest.raises(BindkitError, match="reads the saber data"):
        check_selection(saber, "panel", reported=[_entry("t", "saber", "{saber}", "test")])


def test_a_recipe_sweep_on_the_recipes_own_report_data_is_refused(tmp_path: Path) -> None:
    from bindkit.sweep.config import load_config

    text = (Path(__file__).parents[1] / "examples" / "sweep-recipe.toml").read_text()
    (tmp_path / "sweep.toml").write_text(text.replace('half = "dev"\n', ""))
    with pytest.raises(BindkitError, match=r"panel\[0\] \(saber_tt\): reads the saber data"):
        load_config(tmp_path / "sweep.toml")


# -- paired intervals -------------------------------------------------------------------------


def test_paired_bootstrap_on_hand_cases() -> None:
    same = paired_bootstrap([np.array([0.0, 1.0, 1.0])], [np.array([0.0, 1.0, 1.0])])
    assert (same.delta, same.low, same.high) == (0.0, 0.0, 0.0)
    rng = np.random.default_rng(3)
    a = rng.integers(0, 2, 400).astype(float)
    b = np.where(rng.random(400) < 0.2, 1.0, a)  # b fixes ~20 % of a's errors, breaks none
    change = paired_bootstrap([a], [b], resamples=2000)
    assert change.delta == pytest.approx(b.mean() - a.mean())
    assert 0 < change.low < change.delta < change.high
    # paired: tighter than the unpaired width of two independent accuracies
    unpaired = 1.96 * math.sqrt(a.var() / 400 + b.var() / 400)
    assert change.high - change.low < 2 * unpaired


def test_strata_are_resampled_apart_and_averaged() -> None:
    a = [np.zeros(10), np.zeros(30)]
    b = [np.ones(10), np.zeros(30)]
    change = paired_bootstrap(a, b, resamples=500)
    assert change.delta == 0.5  # the mean of the subsets' changes (1 and 0), not 10/40
    assert change.low == change.high == 0.5
    with pytest.raises(ValueError):
        paired_bootstrap([np.zeros(3)], [np.zeros(4)])


def test_spearman_statistic_is_the_metric() -> None:
    rng = np.random.default_rng(0)
    gold = rng.normal(size=50)
    x = np.stack([gold + rng.normal(size=50), gold], axis=1)
    assert spearman_of(x[None])[0] == pytest.approx(spearman(x[:, 0], gold))
    assert mean_of(np.array([[1.0, np.nan, 0.0]]))[0] == 0.5


def test_panel_changes_pair_the_items_of_the_two_models(tmp_path: Path) -> None:
    data = _triplets(tmp_path / "t.jsonl", n=60)
    sts = tmp_path / "s.jsonl"
    sts.write_text(
        "".join(
            json.dumps({"sentence1": f"a {i} b", "sentence2": f"a {i % 7}", "score": i % 5}) + "\n"
            for i in range(60)
        )
    )
    panel = (
        PanelEntry("t", "triplets", "triplet_accuracy", data=str(data), half="test"),
        PanelEntry("s", "sts", "spearman", data=str(sts)),
    )
    results = tmp_path / "r"
    scores = {m: score_panel(m, panel, results) for m in ("bow", "st:default")}
    changes = panel_changes("bow", "st:default", panel, results)
    for name in ("t", "s"):
        change = changes[name]
        assert change is not None
        assert change.delta == pytest.approx(scores["st:default"][name] - scores["bow"][name])
        assert change.low <= change.delta <= change.high
    assert changes["t"].items == len(
        [
            r
            for r in map(json.loads, data.read_text().splitlines())
            if half_of(r["positive"]) == "test"
        ]
    )


def test_sugarcrepe_text_only_queries_are_another_caption_of_the_image(tmp_path: Path) -> None:
    items = {
        "swap_att": [
            {
                "filename": "a.jpg",
                "caption": "a red cup",
                "negative_caption": "a cup red",
                "_key": "0",
            },
            {"filename": "b.jpg", "caption": "lonely", "negative_caption": "x", "_key": "1"},
        ],
        "add_obj": [
            {
                "filename": "a.jpg",
                "caption": "a cup on a table",
                "negative_caption": "y",
                "_key": "0",
            }
        ],
    }
    queries = other_captions(items)
    assert queries["a.jpg", "a red cup"] == "a cup on a table"
    assert queries["a.jpg", "a cup on a table"] == "a red cup"
    assert queries["b.jpg", "lonely"] is None


def test_sugarcrepe_text_only_scores_the_caption_against_its_negative(tmp_path: Path) -> None:
    from _fakes import TableEmbedder

    data = tmp_path / "sc"
    data.mkdir()
    rows = {
        "swap_att": {
            "0": {"filename": "a.jpg", "caption": "p0", "negative_caption": "n0"},
            "1": {"filename": "b.jpg", "caption": "p1", "negative_caption": "n1"},
            "3": {"filename": "c.jpg", "caption": "alone", "negative_caption": "n3"},
        },
        "add_obj": {
            "0": {"filename": "a.jpg", "caption": "q0", "negative_caption": "x"},
            "1": {"filename": "b.jpg", "caption": "q1", "negative_caption": "y"},
        },
    }
    from bindkit.tasks.pairs.sugarcrepe import SUBSETS

    filler = {"0": {"filename": "z.jpg", "caption": "z", "negative_caption": "zz"}}
    for subset in SUBSETS:
        (data / f"{subset}.json").write_text(json.dumps(rows.get(subset, filler)))
    e = np.eye(8)
    vectors = {"q0": e[0], "p0": e[0], "n0": e[1], "q1": e[2], "p1": e[3], "n1": e[2]}
    records = evaluate(
        [TableEmbedder(vectors)],
        task="sugarcrepe",
        data=data,
        pairings="tt",
        subsets="swap_att",
        out=tmp_path / "r",
        report=False,
        verbose=False,
    )
    # item 0: query q0 (the other caption of a.jpg) prefers p0; item 1: q1 prefers n1; item 3:
    # its image has no other caption
    assert records[0]["scores"]["accuracy"] == 0.5
    assert records[0]["counts"] == {"items": 3, "without_query": 1, "scored": 2}
