"""CLEVR-binding, PUG:SPAR and PUG:SPARE inside mteb 2.x: ``mteb.evaluate`` runs them offline on
the task tests' fixtures, and the main score equals bindkit's, each under its tie rule; the
``bindkit mteb`` options register them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("mteb")

import mteb
from PIL import Image as PIL
from tests.test_tasks_controlled import _write_clevr, _write_pug_spar, _write_pug_spare

from _fakes import TableEmbedder
from bindkit import evaluate
from bindkit.mteb_bridge import mteb_cli, mteb_pairs, mteb_tasks


def _scores(result: Any) -> dict[str, dict[str, Any]]:
    return {r.task_name: r.scores["test"][0] for r in result.task_results}


def _ours(model: Any, task: str, data: Path, out: Path) -> dict[str, float]:
    return {
        r["subset"]: r["scores"]["accuracy"]
        for r in evaluate([model], task=task, data=data, out=out, cache=False, verbose=False)
    }


@pytest.mark.parametrize(
    ("task", "write", "names"),
    [
        ("clevr_binding", _write_clevr, {"test": "BindkitCLEVRBinding"}),
        ("pug_spare", _write_pug_spare, {"test": "BindkitPUGSPARE"}),
        (
            "pug_spar",
            _write_pug_spar,
            {"blue_red": "BindkitPUGSPAR-blue_red", "grass_stone": "BindkitPUGSPAR-grass_stone"},
        ),
    ],
)
def test_binding_tasks_in_mteb_equal_bindkit(
    tmp_path: Path, task: str, write: Any, names: dict[str, str]
) -> None:
    data = tmp_path / task
    write(data)
    # captions naming a Goldfish (PUG) or red (CLEVR) share one vector: ties, by each rule
    model = TableEmbedder({})
    for png in data.rglob("*.png"):  # mteb hands decoded images over: the same vector by colour
        rgb = PIL.open(png).convert("RGB").getpixel((0, 0))
        model.vectors["rgb" + "-".join(map(str, rgb))] = model._vector(png.name)
    tie = np.eye(8, dtype=np.float32)[3]
    captions = [x for t in mteb_pairs.binding_tasks(task, data) for x in _texts(t)]
    words = ("Goldfish", "red")  # a scene's caption and negative share their words: they tie
    model.vectors.update({c: tie for c in captions if any(w in c.split() for w in words)})
    ours = _ours(model, task, data, tmp_path / "r")
    tasks = mteb_pairs.binding_tasks(task, data)
    assert [t.metadata.name for t in tasks] == list(names.values())
    assert all(t.metadata.type == "Compositionality" and t.metadata.is_filled() for t in tasks)
    encoder = mteb_tasks.MtebEncoder(model)  # type: ignore[arg-type]
    rows = _scores(mteb.evaluate(encoder, tasks, cache=None, show_progress_bar=False))
    for subset, name in names.items():
        assert rows[name]["main_score"] == rows[name]["accuracy"]
        assert rows[name]["main_score"] == pytest.approx(ours[subset], abs=1e-6)
        assert 0 < ours[subset] < 1


def _texts(task: Any) -> list[str]:
    task.load_data()
    table = task.dataset["default"]["test"]
    return list(table["positive"]) + list(table["negative"])


def test_bindkit_mteb_options_register_the_binding_tasks(tmp_path: Path) -> None:
    _write_clevr(tmp_path / "clevr")
    _write_pug_spar(tmp_path / "spar")
    extra, rest = mteb_cli.split_args(
        ["run", "--clevr-binding", str(tmp_path / "clevr"), f"--pug-spar={tmp_path / 'spar'}"]
    )
    assert rest == ["run"]
    assert extra.binding == {
        "clevr_binding": [str(tmp_path / "clevr")],
        "pug_spar": [str(tmp_path / "spar")],
    }
    names = mteb_cli.register_tasks(extra)
    assert names[-3:] == [
        "BindkitCLEVRBinding",
        "BindkitPUGSPAR-blue_red",
        "BindkitPUGSPAR-grass_stone",
    ]
    assert "BindkitCLEVRBinding" in {
        t.metadata.name for t in mteb.get_tasks(task_types=["Compositionality"])
    }
