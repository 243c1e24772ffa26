"""The report's SABER by-N plot: one legend entry per line, legends off the lines, chance named."""

from __future__ import annotations

from typing import Any

import pytest

from bindkit.results.report import by_n_figure, by_n_series


def _record(model: str, data: str, pairing: str = "tt") -> dict[str, Any]:
    return {
        "task": "saber",
        "model": {"spec": model},
        "data": {"name": data, "key": f"{data}-1", "source": data},
        "subset": "default",
        "pairing": pairing,
        "created": "1",
        "scores": {"mcq_accuracy_by_n": {"2": 0.9, "3": 0.85, "4": 0.95}},
    }


def test_two_data_sets_give_distinct_lines() -> None:
    records = [_record(m, d) for m in ("st:default", "bow") for d in ("saber", "shapes")]
    (lines,) = by_n_series(records).values()
    names = [name for name, *_ in lines]
    assert sorted(names) == [
        "bow · saber",
        "bow · shapes",
        "st:default · saber",
        "st:default · shapes",
    ]
    one = by_n_series([_record("st:default", "saber")])
    assert [name for name, *_ in one["tt"]] == ["st:default"]  # one data set: the model alone


def test_legend_entries_unique_outside_the_axes_and_chance_labelled() -> None:
    pytest.importorskip("matplotlib")
    records = [_record(m, d) for m in ("st:default", "bow") for d in ("saber", "shapes")]
    records.append(_record("builtin:tiny-clip", "shapes", "ii"))
    fig = by_n_figure(records)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert len(texts) == len(set(texts)), texts
        assert "chance (1 of 4)" in texts
        legend = ax.get_legend().get_window_extent(renderer)
        plot = ax.get_window_extent(renderer)
        assert legend.y1 < plot.y0  # under the axes: it covers no line
        assert legend.y0 >= 0  # and inside the figure
    styles = {
        line.get_label(): line.get_linestyle()
        for line in fig.axes[0].get_lines()
        if line.get_label().startswith("st:default")
    }
    assert len(set(styles.values())) == 2  # the two data sets are told apart by their dashes
