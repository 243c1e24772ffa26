"""Merge result files into comparison tables (Markdown, HTML, CSV, LaTeX) and PNG plots.

Tables mirror the seed paper: models x pairings for SABER (MCQ accuracy, independent and nested
mAP; its Table 2), MCQ accuracy by N per pairing (its Tables 17-19), plus error analysis,
triplet accuracy and STS. Scores are stored as fractions and shown as percentages.
"""

from __future__ import annotations

import csv
import html
import io
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text
from bindkit.errors import BindkitError
from bindkit.results.store import collect

PAIRING_ORDER = ("tt", "ti", "it", "ii")
PAIRING_NAMES = {"tt": "T→T", "ti": "T→I", "it": "I→T", "ii": "I→I"}
FORMATS = (".md", ".html", ".csv", ".tex")


@dataclass
class Table:
    title: str
    columns: list[str]
    rows: list[list[str]]


def pct(value: Any) -> str:
    return "–" if value is None or value != value else f"{100 * float(value):.1f}"


def _label(record: dict[str, Any]) -> str:
    return str(record["model"].get("spec", record["model"].get("fingerprint", "?")))


def _latest(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One record per (model, task, data, pairing): the newest."""
    best: dict[tuple[str, str, str, str], dict[str, Any]] = {}
    for r in records:
        key = (_label(r), r["task"], r["data"]["name"], r["pairing"])
        if key not in best or r["created"] >= best[key]["created"]:
            best[key] = r
    return list(best.values())


def build_tables(records: list[dict[str, Any]]) -> list[Table]:
    records = _latest(records)
    tables: list[Table] = []
    by_task: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_task[r["task"]].append(r)
    for data_name, group in _group(by_task.get("saber", []), lambda r: r["data"]["name"]):
        tables += _saber_tables(data_name, group)
    if by_task.get("triplets"):
        tables += _simple(by_task["triplets"], "Triplet accuracy (%)", "triplet_accuracy")
        tables += _triplet_breakdown(by_task["triplets"])
    if by_task.get("sts"):
        tables += _simple(by_task["sts"], "STS Spearman ×100", "spearman")
    return tables


def _group(records: list[dict[str, Any]], key: Any) -> list[tuple[str, list[dict[str, Any]]]]:
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[key(r)].append(r)
    return sorted(groups.items())


def _models(records: list[dict[str, Any]]) -> list[str]:
    return list(dict.fromkeys(_label(r) for r in records))


def _saber_tables(data_name: str, records: list[dict[str, Any]]) -> list[Table]:
    cell = {(_label(r), r["pairing"]): r["scores"] for r in records}
    pairings = [p for p in PAIRING_ORDER if any(r["pairing"] == p for r in records)]
    models = _models(records)
    columns = ["model"]
    for p in pairings:
        columns += [
            f"{PAIRING_NAMES[p]} MCQ",
            f"{PAIRING_NAMES[p]} mAP ind.",
            f"{PAIRING_NAMES[p]} mAP nest.",
        ]
    columns.append("mean MCQ")
    rows = []
    for model in models:
        row = [model]
        accs = []
        for p in pairings:
            s = cell.get((model, p), {})
            row += [
                pct(s.get("mcq_accuracy")),
                pct(s.get("map_independent")),
                pct(s.get("map_nested")),
            ]
            if s.get("mcq_accuracy") is not None:
                accs.append(s["mcq_accuracy"])
        row.append(pct(sum(accs) / len(accs)) if accs else "–")
        rows.append(row)
    tables = [Table(f"SABER ({data_name}): MCQ accuracy and retrieval mAP (%)", columns, rows)]
    for p in pairings:
        ns = sorted(
            {int(n) for (m, q), s in cell.items() if q == p for n in s.get("mcq_accuracy_by_n", {})}
        )
        by_n_rows = [
            [model]
            + [pct(cell.get((model, p), {}).get("mcq_accuracy_by_n", {}).get(str(n))) for n in ns]
            for model in models
        ]
        tables.append(
            Table(
                f"SABER ({data_name}) {PAIRING_NAMES[p]}: MCQ accuracy by N (%)",
                ["model"] + [f"N={n}" for n in ns],
                by_n_rows,
            )
        )
    detail_columns = [
        "model",
        "pairing",
        "independent",
        "nested",
        "won by attribute swap",
        "won by object swap",
        "won by joint swap",
        "top-4 occupancy",
        "subset above exact",
        "superset above exact",
    ]
    detail = []
    for model in models:
        for p in pairings:
            s = cell.get((model, p))
            if s is None:
                continue
            wins = s.get("mcq_wins_by_role", {})
            kinds = s.get("mcq_accuracy_by_kind", {})
            detail.append(
                [
                    model,
                    PAIRING_NAMES[p],
                    pct(kinds.get("independent")),
                    pct(kinds.get("nested")),
                    pct(wins.get("attribute_swap")),
                    pct(wins.get("object_swap")),
                    pct(wins.get("joint_swap")),
                    pct(s.get("top4_occupancy")),
                    pct(s.get("containment_subset_above")),
                    pct(s.get("containment_superset_above")),
                ]
            )
    tables.append(
        Table(
            f"SABER ({data_name}): by kind, error analysis, containment (%)", detail_columns, detail
        )
    )
    return tables


def _simple(records: list[dict[str, Any]], title: str, metric: str) -> list[Table]:
    datas = sorted({r["data"]["name"] for r in records})
    cell = {(_label(r), r["data"]["name"]): r["scores"].get(metric) for r in records}
    rows = [[m] + [pct(cell.get((m, d))) for d in datas] for m in _models(records)]
    return [Table(title, ["model", *datas], rows)]


def _triplet_breakdown(records: list[dict[str, Any]]) -> list[Table]:
    rows = []
    for r in records:
        for field, values in r["scores"].get("triplet_accuracy_by", {}).items():
            for value, acc in values.items():
                rows.append([_label(r), r["data"]["name"], field, value, pct(acc)])
    if not rows:
        return []
    return [
        Table("Triplet accuracy by field (%)", ["model", "data", "field", "value", "acc."], rows)
    ]


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
    value (fractions, as stored)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["model", "fingerprint", "task", "data", "pairing", "metric", "key", "value"])
    for r in _latest(records):
        for metric, value in r["scores"].items():
            for key, number in _flatten(value):
                writer.writerow(
                    [
                        _label(r),
                        r["model"].get("fingerprint"),
                        r["task"],
                        r["data"]["name"],
                        r["pairing"],
                        metric,
                        key,
                        number,
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


def plot_by_n(records: list[dict[str, Any]], path: Path) -> Path | None:
    """PNG of SABER MCQ accuracy vs N: one panel per pairing, one line per model."""
    saber = [r for r in _latest(records) if r["task"] == "saber"]
    if not saber:
        return None
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    pairings = [p for p in PAIRING_ORDER if any(r["pairing"] == p for r in saber)]
    fig, axes = plt.subplots(1, len(pairings), figsize=(4.2 * len(pairings), 3.4), squeeze=False)
    for ax, p in zip(axes[0], pairings, strict=True):
        for r in saber:
            if r["pairing"] != p:
                continue
            by_n = r["scores"].get("mcq_accuracy_by_n", {})
            ns = sorted(int(n) for n in by_n)
            ax.plot(ns, [100 * by_n[str(n)] for n in ns], marker="o", label=_label(r))
        ax.set_title(f"SABER {PAIRING_NAMES[p]}")
        ax.set_xlabel("bindings N")
        ax.set_ylabel("MCQ accuracy (%)")
        ax.set_ylim(0, 100)
        ax.axhline(25, color="gray", lw=0.8, ls=":")
        ax.grid(alpha=0.3)
    axes[0][-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)
    return path


def write_report(results: str | Path, out: str | Path | None = None) -> tuple[Path, list[Path]]:
    """Write a report of every result under ``results`` to ``out`` (default
    ``RESULTS/report.md``); the format follows the suffix. Returns the report and plot paths."""
    records = collect(results)
    if not records:
        raise BindkitError(f"{results}: no bindkit result files found; run `bindkit eval` first")
    target = Path(out) if out is not None else Path(results) / "report.md"
    if target.suffix not in FORMATS:
        raise BindkitError(f"--out {target}: use a {', '.join(FORMATS)} file name")
    plots = []
    if target.suffix in (".md", ".html"):
        plot = plot_by_n(records, target.with_name(f"{target.stem}_saber_by_n.png"))
        plots = [plot] if plot else []
    tables = build_tables(records)
    names = [p.name for p in plots]
    text = {
        ".md": lambda: to_markdown(tables, names),
        ".html": lambda: to_html(tables, names),
        ".csv": lambda: to_csv(records),
        ".tex": lambda: to_latex(tables),
    }[target.suffix]()
    atomic_write_text(target, text)
    return target, plots
