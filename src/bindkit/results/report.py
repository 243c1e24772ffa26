"""Merge result files into comparison tables (Markdown, HTML, CSV, LaTeX) and PNG plots.

Tables come from task metadata, so a new task appears without touching this module: an overview
in the seed's Table 3 layout (models × benchmarks, each benchmark's main score averaged over its
subsets), one per-subset table per benchmark, then the tables a task adds itself
(:meth:`bindkit.tasks.base.Task.tables`, e.g. SABER's accuracy by N), and the data each row came
from. Scores are stored as fractions and shown as percentages.
"""

from __future__ import annotations

import csv
import html
import io
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_figure, atomic_write_text
from bindkit.errors import BindkitError
from bindkit.records.fields import data_id, data_labels, group_by_data, instruction_of, subset_of
from bindkit.records.tables import PAIRING_NAMES, PAIRING_ORDER, Table, as_dict, label, pct
from bindkit.results.store import collect, is_partial, none_found, noting

FORMATS = (".md", ".html", ".csv", ".tex")
__all__ = ["Table", "build_tables", "group_by_data", "pct", "write_report"]


def _latest(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (model, task, data, subset, pairing): the newest."""
    best: dict[tuple[str, ...], dict[str, Any]] = {}
    for r in records:
        key = (label(r), r["task"], data_id(r), subset_of(r), r["pairing"], instruction_of(r) or "")
        if key not in best or r["created"] >= best[key]["created"]:
            best[key] = r
    return list(best.values())


def _meta(task: str) -> Any:
    from bindkit.tasks.base import task_classes

    cls = task_classes().get(task)
    return None if cls is None else cls.metadata


def _score_names(task: str) -> tuple[str, ...]:
    meta = _meta(task)
    return () if meta is None else (meta.main_score, *meta.scores)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    return float(value)


def _headline_score(record: dict[str, Any]) -> tuple[str, float] | None:
    """The first of the task's declared scores that this record holds. A NaN (undefined there)
    is returned as it is, so the column stays the main score's and shows it as missing, rather
    than another score silently taking its place."""
    for name in _score_names(record["task"]):
        value = record["scores"].get(name)
        if not isinstance(value, bool) and isinstance(value, int | float):
            return name, float(value)
    return None


def _subset_order(task: str, records: list[dict[str, Any]]) -> list[str]:
    meta = _meta(task)
    declared = list(meta.subsets) if meta is not None else []
    present = list(dict.fromkeys(subset_of(r) for r in records))
    return [s for s in declared if s in present] + [s for s in present if s not in declared]


PARTIAL_MARK = " †"  # a score computed without some of the benchmark's images


def partial_results(records: list[dict[str, Any]]) -> Table | None:
    """Every partial result with its counts; None when there is none."""
    labels = data_labels(records)
    rows = []
    for r in records:
        if is_partial(r):
            counts = as_dict(r.get("counts"))
            rows.append(
                [label(r), r["task"], labels[data_id(r)], subset_of(r), r["pairing"]]
                + [str(counts.get(k, "?")) for k in ("missing_images", "scored")]
            )
    if not rows:
        return None
    columns = ["model", "task", "data", "subset", "pairing", "missing images", "scored"]
    return Table(
        f"Partial results ({PARTIAL_MARK.strip()}: scored without missing images)", columns, rows
    )


def _averaged(task: str) -> bool:
    meta = _meta(task)
    return meta is not None and meta.averaged


def overview(records: list[dict[str, Any]]) -> Table:
    """Models × (benchmark, data, [subset,] pairing): the main score; a benchmark that reports
    the mean over its subsets (``TaskMetadata.averaged``) gets that mean, any other one column
    per subset, so unrelated subsets are never averaged."""
    labels = data_labels(records)
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    partial: set[tuple[str, str]] = set()
    columns: dict[str, None] = {}
    order = {p: i for i, p in enumerate(PAIRING_ORDER)}
    for r in sorted(
        records, key=lambda r: (r["task"], labels[data_id(r)], order.get(r["pairing"], 9))
    ):
        hit = _headline_score(r)
        if hit is None:
            continue
        name, value = hit
        pairing = PAIRING_NAMES.get(r["pairing"], r["pairing"])
        where = labels[data_id(r)]
        if not _averaged(r["task"]) and subset_of(r) != "default":
            where = f"{where} {subset_of(r)}"
        column = f"{r['task']} {where} {pairing} {name}"
        columns[column] = None
        cells[(label(r), column)].append(value)
        if is_partial(r):
            partial.add((label(r), column))
    models = list(dict.fromkeys(label(r) for r in records))
    rows = [
        [m]
        + [
            pct(sum(cells[(m, c)]) / len(cells[(m, c)]))
            + (PARTIAL_MARK if (m, c) in partial else "")
            if cells.get((m, c))
            else "–"
            for c in columns
        ]
        for m in models
    ]
    title = "Overview: main score per benchmark (%; a mean over subsets only where it has one)"
    return Table(title, ["model", *columns], rows)


def per_subset(task: str, records: list[dict[str, Any]]) -> list[Table]:
    """Every declared score of a task (main and further official scores): model × pairing ×
    score rows, one column per subset (and their mean, when the benchmark reports one)."""
    subsets = _subset_order(task, records)
    names = _score_names(task)
    if len(subsets) < 2 and len(names) < 2:
        return []
    show_mean = len(subsets) > 1 and _averaged(task)
    tables = []
    for data_label, group in group_by_data(records):
        cell: dict[tuple[str, str, str], dict[str, Any]] = {}
        partial = set()
        for r in group:
            cell[(label(r), r["pairing"], subset_of(r))] = r["scores"]
            if is_partial(r):
                partial.add((label(r), r["pairing"], subset_of(r)))
        rows = []
        for model in dict.fromkeys(label(r) for r in group):
            for pairing in [p for p in PAIRING_ORDER if any(k[1] == p for k in cell)]:
                for name in names:
                    values = [cell.get((model, pairing, s), {}).get(name) for s in subsets]
                    numbers = [v for v in map(_number, values) if v is not None]
                    if not numbers:
                        continue
                    marks = [
                        PARTIAL_MARK if (model, pairing, s) in partial else "" for s in subsets
                    ]
                    row = [model, PAIRING_NAMES.get(pairing, pairing), name]
                    row += [
                        pct(v) + mark if _number(v) is not None else pct(v)
                        for v, mark in zip(values, marks, strict=True)
                    ]
                    if show_mean:
                        complete = len(numbers) == len(subsets)
                        mean = pct(sum(numbers) / len(numbers)) if complete else "–"
                        row.append(mean + (PARTIAL_MARK if any(marks) and complete else ""))
                    rows.append(row)
        what = "per subset" if len(subsets) > 1 else "scores"
        columns = ["model", "pairing", "score", *subsets] + (["mean"] if show_mean else [])
        tables.append(Table(f"{task} ({data_label}) {what} (%)", columns, rows))
    return tables


def sources(records: list[dict[str, Any]]) -> Table:
    labels = data_labels(records)
    seen: dict[str, list[str]] = {}
    for r in records:
        data = r["data"]
        seen.setdefault(
            data_id(r),
            [
                r["task"],
                labels[data_id(r)],
                str(data.get("source", "?")),
                str(data.get("sha256", ""))[:12],
            ],
        )
    return Table("Data sources", ["task", "data", "source", "sha256"], sorted(seen.values()))


def build_tables(
    records: list[dict[str, Any]], warn: Callable[[str], None] | None = None
) -> list[Table]:
    from bindkit.records.instructions import sweep_tables

    records = _latest(records)
    swept = [r for r in records if instruction_of(r) is not None]
    records = [r for r in records if instruction_of(r) is None]  # plain runs: one per cell
    if not records:
        return [*sweep_tables(swept, _headline_score), sources(swept)]
    tables = [overview(records)]
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_task[r["task"]].append(r)
    for task, group in by_task.items():
        tables += per_subset(task, group)
        from bindkit.tasks.base import task_classes

        cls = task_classes().get(task)
        if cls is None:
            if warn is not None:
                warn(f"warning: results of unknown task {task!r}: only in the overview")
            continue
        tables += cls().tables(group)
    marked = partial_results(records)
    if marked is not None:
        tables.append(marked)
    tables += sweep_tables(swept, _headline_score)
    tables.append(sources(records + swept))
    return tables


# -- rendering -----------------------------------------------------------------------------
def to_markdown(tables: list[Table], images: list[str] = ()) -> str:  # type: ignore[assignment]
    parts = ["# bindkit report\n"]
    for t in tables:
        parts.append(f"## {t.title}\n")
        parts.append("| " + " | ".join(t.columns) + " |")
        parts.append("|" + "|".join("---" for _ in t.columns) + "|")
        parts += ["| " + " | ".join(row) + " |" for row in t.rows]
        parts.append("")
    parts += [f"![{name}]({name})\n" for name in images]
    return "\n".join(parts)


def to_html(tables: list[Table], images: list[str] = ()) -> str:  # type: ignore[assignment]
    body = []
    for t in tables:
        head = "".join(f"<th>{html.escape(c)}</th>" for c in t.columns)
        rows = "".join(
            "<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>" for row in t.rows
        )
        body.append(f"<h2>{html.escape(t.title)}</h2><table><tr>{head}</tr>{rows}</table>")
    body += [f'<img src="{html.escape(name)}" alt="{html.escape(name)}">' for name in images]
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}"
        "td:first-child,th:first-child{text-align:left}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>bindkit report</title>"
        f"<style>{style}</style></head><body><h1>bindkit report</h1>{''.join(body)}"
        "</body></html>\n"
    )


def _tex_escape(text: str) -> str:
    for a, b in (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("%", r"\%"),
        ("&", r"\&"),
        ("#", r"\#"),
        ("$", r"\$"),
        ("{", r"\{"),
        ("}", r"\}"),
        ("→", r"$\to$"),
        ("–", "--"),
        ("×", r"$\times$"),
    ):
        text = text.replace(a, b)
    return text


def to_latex(tables: list[Table]) -> str:
    out = ["% bindkit report; needs \\usepackage{booktabs}"]
    for t in tables:
        spec = "l" + "r" * (len(t.columns) - 1)
        out += [
            f"% {t.title}",
            "\\begin{table}[t]",
            "\\centering",
            "\\small",
            f"\\caption{{{_tex_escape(t.title)}}}",
            f"\\begin{{tabular}}{{{spec}}}",
            "\\toprule",
            " & ".join(_tex_escape(c) for c in t.columns) + " \\\\",
            "\\midrule",
        ]
        out += [" & ".join(_tex_escape(v) for v in row) + " \\\\" for row in t.rows]
        out += ["\\bottomrule", "\\end{tabular}", "\\end{table}", ""]
    return "\n".join(out)


def to_csv(records: list[dict[str, Any]]) -> str:
    """Long format, one number per row: model, fingerprint, task, data, pairing, metric, key,
    value (fractions, as stored), and the instruction of a sweep's result ("" otherwise)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(
        [
            "model",
            "fingerprint",
            "task",
            "data",
            "source",
            "subset",
            "pairing",
            "metric",
            "key",
            "value",
            "instruction",
        ]
    )

    for r in _latest(records):
        for metric, value in r["scores"].items():
            for key, number in _flatten(value):
                writer.writerow(
                    [
                        label(r),
                        r["model"].get("fingerprint"),
                        r["task"],
                        r["data"]["name"],
                        r["data"].get("source"),
                        subset_of(r),
                        r["pairing"],
                        metric,
                        key,
                        number,
                        instruction_of(r) or "",  # the sweep's instruction, if any
                    ]
                )
    return buffer.getvalue()


def _flatten(value: Any, prefix: str = "") -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [
            kv
            for k, v in value.items()
            for kv in _flatten(v, f"{prefix}{k}" if not prefix else f"{prefix}/{k}")
        ]
    return [(prefix, value)]


def by_n_series(
    records: list[dict[str, Any]],
) -> dict[str, list[tuple[str, int, list[int], list[float]]]]:
    """Per SABER pairing: (line label, colour index, N values, MCQ accuracy %) per model and data
    set. A model keeps its colour index in every panel (models in order of first appearance);
    with several SABER data sets the label also names the data set (``st:default · shapes``),
    so no two lines share a legend entry."""
    saber = [r for r in _latest(records) if r["task"] == "saber"]
    saber = [r for r in saber if isinstance(r["scores"].get("mcq_accuracy_by_n"), dict)]
    colours = {m: i for i, m in enumerate(dict.fromkeys(label(r) for r in saber))}
    names = data_labels(saber)
    several = len({data_id(r) for r in saber}) > 1
    out: dict[str, list[tuple[str, int, list[int], list[float]]]] = {}
    for p in [p for p in PAIRING_ORDER if any(r["pairing"] == p for r in saber)]:
        series = []
        for r in saber:
            by_n = r["scores"]["mcq_accuracy_by_n"]
            if r["pairing"] != p:
                continue
            ns = sorted(int(n) for n in by_n if str(n).isdigit() and _number(by_n[n]) is not None)
            values = [100 * float(by_n[str(n)]) for n in ns]
            name = f"{label(r)} · {names[data_id(r)]}" if several else label(r)
            series.append((name, colours[label(r)], ns, values))
        out[p] = sorted(series, key=lambda s: (s[1], s[0]))
    return out


_DASHES = ("-", "--", ":", "-.")


def by_n_figure(records: list[dict[str, Any]]) -> Any:
    """The matplotlib figure of :func:`plot_by_n` (None without SABER results or matplotlib):
    one panel per pairing, each with its own legend under the axes (never over a line), a model
    in the same colour everywhere, a data set in the same dash pattern, the chance level (one
    of four candidates) labelled."""
    series = by_n_series(records)
    if not series:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    palette = plt.get_cmap("tab10" if max(len(s) for s in series.values()) <= 10 else "tab20")
    data_names = sorted(
        {name.split(" · ", 1)[1] for s in series.values() for name, *_ in s if " · " in name}
    )
    rows = max(len(s) for s in series.values()) + 1
    fig, axes = plt.subplots(
        1,
        len(series),
        figsize=(4.2 * len(series), 3.4 + 0.17 * rows),
        squeeze=False,
        layout="constrained",
    )
    for ax, (p, lines) in zip(axes[0], series.items(), strict=True):
        for name, colour, ns, values in lines:
            dash = name.split(" · ", 1)[1] if " · " in name else ""
            style = _DASHES[data_names.index(dash) % len(_DASHES)] if dash else "-"
            ax.plot(ns, values, marker="o", ls=style, label=name, color=palette(colour % palette.N))
        ax.set_title(f"SABER {PAIRING_NAMES[p]}")
        ax.set_xlabel("bindings N")
        ax.set_ylabel("MCQ accuracy (%)")
        ax.set_ylim(0, 100)
        ax.axhline(25, color="gray", lw=0.8, ls=":", label="chance (1 of 4)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.2), frameon=False, ncol=1)
    return fig


def plot_by_n(records: list[dict[str, Any]], path: Path) -> Path | None:
    """PNG of SABER MCQ accuracy vs N: one panel per pairing, one line per model."""
    fig = by_n_figure(records)
    if fig is None:
        return None
    return atomic_write_figure(fig, path)


def write_report(
    results: str | Path,
    out: str | Path | None = None,
    warn: Callable[[str], None] | None = None,
) -> tuple[Path, list[Path]]:
    """Write a report of every result under ``results`` to ``out`` (default
    ``RESULTS/report.md``); the format follows the suffix. Returns the report and plot paths.
    Result files that cannot be used are skipped with one ``warn`` line each."""
    skipped, note = noting(warn)
    records = collect(results, note)
    if not records:
        raise none_found(results, len(skipped))
    target = Path(out) if out is not None else Path(results) / "report.md"
    if target.suffix not in FORMATS:
        raise BindkitError(f"--out {target}: use a {', '.join(FORMATS)} file name")
    plots = []
    if target.suffix in (".md", ".html"):
        from bindkit.records.instructions import plot_sweep

        plain = [r for r in records if instruction_of(r) is None]
        plot = plot_by_n(plain, target.with_name(f"{target.stem}_saber_by_n.png"))
        sweep = plot_sweep(
            records, target.with_name(f"{target.stem}_instructions.png"), _headline_score
        )
        plots = [p for p in (plot, sweep) if p]
    tables = build_tables(records, warn)
    names = [p.name for p in plots]
    text = {
        ".md": lambda: to_markdown(tables, names),
        ".html": lambda: to_html(tables, names),
        ".csv": lambda: to_csv(records),
        ".tex": lambda: to_latex(tables),
    }[target.suffix]()
    atomic_write_text(target, text)
    return target, plots
