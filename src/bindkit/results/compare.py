"""Per-query comparison of two results of one task: wins, losses, ties, a sign test, a paired
bootstrap interval of the mean difference, and a contact sheet of the queries that differ most.

Two per-query scores are tied when they are at most :data:`bindkit.metrics.TIE_EPS` apart (the
project's tie rule). A per-query *credit* (:data:`CREDIT_METRICS`: MCQ ``correct``, ``hit``) is
1 when the model ranks the correct candidate first alone, 1/k when it ties it with k - 1 others
(:func:`bindkit.metrics.mcq.winner_shares`) and 0 when it ranks another first: a share is no win,
so on a credit a query is A's when A is right (1) and B is not, B's the other way round, and
tied otherwise (both right, or neither); how many queries each side only tied is shown beside.
Other per-query scores (AP, nDCG, cosine) compare by value.

The sign test is the exact two-sided binomial test of wins against losses (ties dropped):
``p = min(1, 2 * P(X <= min(wins, losses)))`` with ``X ~ Binomial(wins + losses, 1/2)``. It
counts directions only; the size of the difference is the mean of A - B with a 95 % paired
bootstrap interval (:func:`bindkit.metrics.paired.paired_bootstrap`, the queries resampled),
which fits fractional scores. A query scored by one side only (NaN, or absent) is left out and
counted.
"""

from __future__ import annotations

import csv
import html
import io
import math
import os
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from bindkit._io import atomic_write_figure, atomic_write_text
from bindkit.errors import BindkitError
from bindkit.metrics import TIE_EPS
from bindkit.records.per_query import PerQuery, read_per_query
from bindkit.records.tables import Table, label
from bindkit.results.store import collect_paths

#: per-query scores that are a credit in [0, 1] where a fraction is a tie share (1/k)
CREDIT_METRICS = frozenset({"correct", "hit"})

#: bootstrap draws are capped at this many query values in memory (resamples x queries)
_DRAW_BUDGET = 10_000_000


@dataclass(frozen=True)
class Outcome:
    """Wins (A above B), losses and ties per query, from two aligned arrays.

    ``shares_a`` / ``shares_b``: queries on which A / B only tied the correct candidate with
    others (a fractional credit); 0 for scores that are not a credit.
    """

    wins: int
    losses: int
    ties: int
    mean_difference: float  # mean of A - B over the compared queries
    p_value: float  # the sign test of wins against losses
    low: float  # the paired bootstrap interval of mean A - B
    high: float
    resamples: int
    credit: bool = False
    shares_a: int = 0
    shares_b: int = 0


def sign_test(wins: int, losses: int) -> float:
    """Exact two-sided sign test p-value (1.0 when there is nothing but ties).

    Example:
        >>> sign_test(9, 1)
        0.021484375
    """
    n = wins + losses
    if n == 0:
        return 1.0
    low = min(wins, losses)
    tail = Fraction(sum(math.comb(n, k) for k in range(low + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def is_right(values: np.ndarray) -> np.ndarray:
    """Per query: full credit (the correct candidate first, alone), within the tie rule."""
    return np.asarray(values, np.float64) >= 1.0 - TIE_EPS


def is_share(values: np.ndarray) -> np.ndarray:
    """Per query: a tie share of the credit (the correct candidate tied with others first)."""
    values = np.asarray(values, np.float64)
    shares: np.ndarray = (values > TIE_EPS) & ~is_right(values)
    return shares


def verdicts(a: np.ndarray, b: np.ndarray, *, credit: bool = False) -> np.ndarray:
    """Per query ``"A"``, ``"B"`` or ``"tie"`` (see the module docstring for ``credit``)."""
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if credit:
        right_a, right_b = is_right(a), is_right(b)
        a_better, b_better = right_a & ~right_b, right_b & ~right_a
    else:
        diff = a - b
        tied = np.abs(diff) <= TIE_EPS
        a_better, b_better = (diff > 0) & ~tied, (diff < 0) & ~tied
    return np.where(a_better, "A", np.where(b_better, "B", "tie"))


def outcome(a: np.ndarray, b: np.ndarray, *, credit: bool = False) -> Outcome:
    """Compare per-query scores ``a`` and ``b`` (same queries, same order; no NaN);
    ``credit``: they are a credit whose fractions are tie shares (no win)."""
    from bindkit.metrics.paired import RESAMPLES, paired_bootstrap

    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    said = verdicts(a, b, credit=credit)
    wins, losses = int((said == "A").sum()), int((said == "B").sum())
    if len(a):
        # paired_bootstrap gives statistic(second) - statistic(first): B first gives A - B
        resamples = max(200, min(RESAMPLES, _DRAW_BUDGET // len(a)))
        change = paired_bootstrap([b], [a], resamples=resamples)
        mean, low, high = change.delta, change.low, change.high
    else:
        resamples, mean, low, high = 0, float("nan"), float("nan"), float("nan")
    shares = (int(is_share(a).sum()), int(is_share(b).sum())) if credit else (0, 0)
    return Outcome(
        wins,
        losses,
        len(a) - wins - losses,
        mean,
        sign_test(wins, losses),
        low,
        high,
        resamples,
        credit,
        *shares,
    )


@dataclass
class Side:
    """One result in a comparison: its file, record and the chosen per-query score."""

    path: Path
    record: dict[str, Any]
    scores: PerQuery


@dataclass
class Comparison:
    a: Side
    b: Side
    ids: list[str]  # compared queries, in A's order
    a_values: np.ndarray
    b_values: np.ndarray
    result: Outcome
    left_out: int  # queries scored by one side only

    @property
    def metric(self) -> str:
        return self.a.scores.metric

    def labels(self) -> tuple[str, str]:
        a, b = label(self.a.record), label(self.b.record)
        return (f"A: {a}", f"B: {b}") if a == b else (a, b)


def find_result(
    root: Path,
    task: str,
    subset: str | None = None,
    pairing: str | None = None,
    instruction: str | None = None,
) -> tuple[Path, dict[str, Any]]:
    """The one result of ``task`` (and ``subset``, ``pairing``, sweep ``instruction``) under
    ``root`` (a results directory or a result file).

    Raises:
        BindkitError: none or several match (naming what is there).
    """
    from bindkit.records.fields import instruction_of

    skipped: list[str] = []
    every = list(collect_paths(root, skipped.append))
    found = [(p, r) for p, r in every if r["task"] == task]
    if not found:
        import difflib

        unusable = f" ({skipped[0].removeprefix('warning: ')})" if skipped else ""
        tasks = sorted({str(r["task"]) for _, r in every})
        close = difflib.get_close_matches(task, tasks, n=1)
        there = f"; did you mean --task {close[0]}?" if close else ""
        there += f" (it holds {', '.join(tasks)})" if tasks else ""
        raise BindkitError(
            f"{root}: holds no {task} result{unusable}{there}; pass the --out of `bindkit eval`"
        )
    for what, wanted, get in (
        ("--subset", subset, lambda r: str(r.get("subset"))),
        ("--pairing", pairing, lambda r: str(r["pairing"])),
        ("--instruction", instruction, instruction_of),
    ):
        present = sorted({str(get(r)) for _p, r in found})
        if wanted is not None or what == "--instruction":
            found = [(p, r) for p, r in found if get(r) == wanted]
            if not found:
                raise BindkitError(
                    f"{root}: no {task} result with {what} {wanted}; present: {', '.join(present)}"
                )
        elif len(present) > 1:
            raise BindkitError(f"{root}: {task} results of several; pass {what} (one of "
                               f"{', '.join(present)})")  # fmt: skip
    if len(found) > 1:
        files = ", ".join(str(p) for p, _r in found[:3])
        raise BindkitError(
            f"{root}: {len(found)} matching {task} results ({files}); pass the result file itself"
        )
    return found[0]


def _side(path: Path, record: dict[str, Any], metric: str | None) -> Side:
    from bindkit import __version__

    if record.get("task") == "sts":
        raise BindkitError(
            f"{path}: sts's Spearman is not a sum over pairs, so it has no per-query wins; "
            "bindkit finetune's report gives its change with a paired bootstrap interval"
        )
    items = read_per_query(path, record)
    if not items:
        raise BindkitError(
            f"{path}: has no per-query scores; rerun `bindkit eval` with bindkit {__version__} "
            "(--overwrite always) to store them"
        )
    if metric is None:
        return Side(path, record, items[0])
    for item in items:
        if item.metric == metric:
            return Side(path, record, item)
    names = ", ".join(i.metric for i in items)
    raise BindkitError(f"--metric {metric}: {path} has no such per-query score; use {names}")


def compare_results(
    a: str | Path,
    b: str | Path,
    *,
    task: str,
    subset: str | None = None,
    pairing: str | None = None,
    metric: str | None = None,
    instruction: str | None = None,
) -> Comparison:
    """Compare two results of ``task`` query by query (see the module docstring).

    ``a`` and ``b`` are result files or results directories holding one matching result each;
    ``metric`` picks one of the per-query scores (default: the main score's).

    Raises:
        BindkitError: a result is missing or has no per-query scores, or the two are on
            different data, subsets or pairings.
    """
    path_a, rec_a = find_result(Path(a), task, subset, pairing, instruction)
    path_b, rec_b = find_result(Path(b), task, subset, pairing, instruction)
    for key in ("subset", "pairing"):
        if rec_a.get(key) != rec_b.get(key):
            raise BindkitError(
                f"{path_a} and {path_b}: {key} {rec_a.get(key)} vs {rec_b.get(key)}; pass --{key}"
            )
    hash_a = rec_a["provenance"].get("data_sha256")
    hash_b = rec_b["provenance"].get("data_sha256")
    if hash_a != hash_b:
        raise BindkitError(
            f"{path_a} and {path_b}: scored on different data (sha256 {str(hash_a)[:12]} vs "
            f"{str(hash_b)[:12]}); compare results of the same data"
        )
    side_a = _side(path_a, rec_a, metric)
    side_b = _side(path_b, rec_b, side_a.scores.metric)
    at_b = {q: i for i, q in enumerate(side_b.scores.ids)}
    ids, left_out = [], 0
    rows_a, rows_b = [], []
    for i, q in enumerate(side_a.scores.ids):
        j = at_b.get(q)
        if j is None or np.isnan(side_a.scores.values[i]) or np.isnan(side_b.scores.values[j]):
            left_out += 1
            continue
        ids.append(q)
        rows_a.append(i)
        rows_b.append(j)
    left_out += len(set(at_b) - set(side_a.scores.ids))
    if not ids:
        raise BindkitError(f"{path_a} and {path_b}: no query scored by both; nothing to compare")
    a_values = side_a.scores.values[rows_a]
    b_values = side_b.scores.values[rows_b]
    credit = side_a.scores.metric in CREDIT_METRICS
    result = outcome(a_values, b_values, credit=credit)
    return Comparison(side_a, side_b, ids, a_values, b_values, result, left_out)


def summary_table(c: Comparison) -> Table:
    a, b = c.labels()
    r = c.result
    rec = c.a.record
    title = f"{rec['task']} {rec.get('subset')} {rec['pairing']}: per-query {c.metric}, {a} vs {b}"
    if r.credit:  # a share is no win: say how many queries each side only tied
        title += " (a win: right alone; a tie share counts as not right)"
    columns = ["queries", f"{a} better", f"{b} better", "tied"]
    row = [str(len(c.ids)), str(r.wins), str(r.losses), str(r.ties)]
    if r.credit:
        columns += [f"{a} tie shares", f"{b} tie shares"]
        row += [str(r.shares_a), str(r.shares_b)]
    columns += ["mean A - B", "95 % interval", "sign test p"]
    row += [f"{r.mean_difference:+.4f}", f"[{r.low:+.4f}, {r.high:+.4f}]", f"{r.p_value:.3g}"]
    if c.left_out:
        columns.append("left out")
        row.append(str(c.left_out))
    return Table(title, columns, [row])


def largest(c: Comparison, n: int) -> list[int]:
    """Indices (into ``c.ids``) of the ``n`` queries with the largest |A - B|, ties excluded."""
    diff = c.a_values - c.b_values
    order = np.argsort(-np.abs(diff), kind="stable")
    return [int(i) for i in order if abs(diff[i]) > TIE_EPS][:n]


Resolver = Callable[[str], tuple[str, str]]


@dataclass
class _Resolve:
    """A :data:`Resolver` that also knows each query's correct candidates (``correct``)."""

    function: Resolver
    correct: dict[str, frozenset[str]]

    def __call__(self, item: str) -> tuple[str, str]:
        return self.function(item)


def correct_of(resolve: Resolver, query: str) -> frozenset[str]:
    """The candidate ids the task calls correct for ``query`` (empty when it names none)."""
    return resolve.correct.get(query, frozenset()) if isinstance(resolve, _Resolve) else frozenset()


def resolver(record: dict[str, Any], warn: Callable[[str], None] | None = None) -> Resolver:
    """id → ("text", text) / ("image", path) / ("id", id), from the result's recorded data
    source and image root (reloaded through its task); ids only when the data is gone. It also
    carries each query's correct candidates where the task names them (:func:`correct_of`)."""
    from bindkit.tasks.base import get_task

    data = record["data"]
    source = str(data.get("source", ""))
    options = record.get("options")
    root = options.get("image_root") if isinstance(options, dict) else None
    table: dict[str, tuple[str, str]] = {}
    correct: dict[str, frozenset[str]] = {}
    try:
        task = get_task(record["task"])
        path = None if source.startswith("builtin:") else Path(source)
        dataset = task.load(path, image_root=None if root is None else Path(root))
        if dataset.sha256 != data.get("sha256") and warn is not None:
            warn(f"warning: {source}: changed since the result was computed; the sheet shows it")
        subset, pairing = str(record.get("subset")), str(record["pairing"])
        table = task.describe_ids(dataset, subset, pairing)
        correct = task.correct_ids(dataset, subset, pairing)
    except (BindkitError, OSError) as exc:
        if warn is not None:
            warn(f"warning: {source}: cannot be read for the contact sheet ({exc}); ids only")
    # an id the task does not describe: an image file under --image-root, or under the data
    # source's folder or one of its subfolders (e.g. jpg/), by the per-query convention
    base = None if source.startswith("builtin:") or not source else Path(source)
    base = base.parent if base is not None and base.is_file() else base
    roots = [Path(p) for p in (root, base) if p is not None]

    def resolve(item: str) -> tuple[str, str]:
        if item in table:
            return table[item]
        for folder in roots:
            if (folder / item).is_file():
                return "image", str(folder / item)
            found = next((p for p in folder.glob(f"*/{item}") if p.is_file()), None)
            if found is not None:
                return "image", str(found)
        return "id", item

    return _Resolve(resolve, correct)


def per_query_csv(c: Comparison) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    a, b = c.labels()
    writer.writerow(["query", f"{c.metric} {a}", f"{c.metric} {b}", "difference", "outcome"])
    said = verdicts(c.a_values, c.b_values, credit=c.result.credit)
    for q, x, y, verdict in zip(c.ids, c.a_values, c.b_values, said, strict=True):
        writer.writerow([q, repr(float(x)), repr(float(y)), repr(float(x - y)), str(verdict)])
    return buffer.getvalue()


def tied_first(c: Comparison, value: float) -> int:
    """How many of a side's top candidates tie for first on a query whose credit is
    ``value``: k for a share 1/k, else 1 (only a credit tells; AP and the like do not)."""
    if not c.result.credit or not is_share(np.array([value]))[0]:
        return 1
    return max(2, round(1.0 / value))


def _cell_html(shown: tuple[str, str], out: Path) -> str:
    kind, value = shown
    if kind == "image":
        link = html.escape(os.path.relpath(value, out))
        return f'<a href="{link}"><img src="{link}" alt="{link}" width="120"></a>'
    return f"<span>{html.escape(value)}</span>"


def sheet_html(c: Comparison, rows: list[int], resolve: Resolver, out: Path) -> str:
    a, b = c.labels()
    body = []
    for i in rows:
        q = c.ids[i]
        tops = []
        for side, values in ((c.a, c.a_values), (c.b, c.b_values)):
            j = side.scores.ids.index(q)
            top = side.scores.top[j] if side.scores.top else ()
            right = correct_of(resolve, q)
            k = tied_first(c, float(values[i]))
            cells = "".join(
                f"<td{_html_class(t in right, n < k <= len(top))}>"
                f"{_cell_html(resolve(t), out)}"
                f"{f'<br><i>tied first ({k}-way)</i>' if n < k <= len(top) else ''}</td>"
                for n, t in enumerate(top)
            )
            tops.append(cells or "<td>(no top-5 recorded)</td>")
        body.append(
            f"<tr><th rowspan='2'>{html.escape(q)}<br>{_cell_html(resolve(q), out)}<br>"
            f"{html.escape(a)} {c.a_values[i]:.3f} · {html.escape(b)} {c.b_values[i]:.3f}</th>"
            f"<td class='who'>{html.escape(a)}</td>{tops[0]}</tr>"
            f"<tr><td class='who'>{html.escape(b)}</td>{tops[1]}</tr>"
        )
    style = (
        "body{font-family:sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px;vertical-align:top;max-width:14em}"
        ".who{font-weight:bold}.correct{border:3px solid #2a2}.tied{border:3px dashed #d80}"
    )
    title = html.escape(summary_table(c).title)
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title>"
        f"<style>{style}</style></head><body><h1>{title}</h1><p>Queries with the largest "
        f"difference; each row: the query with each model's per-query {html.escape(c.metric)}, "
        f"then each model's top-5, best first; a green frame marks the correct candidate, "
        f"a dashed orange frame the correct candidate tied first with others (a share of the "
        f"credit, not a win).</p>"
        f"<table>{''.join(body)}</table></body></html>\n"
    )


def _html_class(correct: bool, tied: bool) -> str:
    if not correct:
        return ""
    return " class=tied" if tied else " class=correct"


def sheet_png(c: Comparison, rows: list[int], resolve: Resolver, path: Path) -> Path | None:
    """The contact sheet as a PNG: per query a row of the query and each model's top-5."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    a, b = c.labels()
    k = max([len(t) for s in (c.a, c.b) for t in s.scores.top] or [0])
    columns = 1 + 2 * max(k, 1)
    fig, axes = plt.subplots(
        len(rows), columns, figsize=(1.5 * columns, 1.6 * len(rows)), squeeze=False
    )
    for r, i in enumerate(rows):
        q = c.ids[i]
        right = correct_of(resolve, q)
        scores = f"{q}\n{a} {c.a_values[i]:.3f} · {b} {c.b_values[i]:.3f}"
        cells = [(resolve(q), scores, False, False)]
        for name, side, values in ((a, c.a, c.a_values), (b, c.b, c.b_values)):
            j = side.scores.ids.index(q)
            top = list(side.scores.top[j]) if side.scores.top else []
            tie = tied_first(c, float(values[i]))
            tie = tie if tie <= len(top) else 1
            top += [""] * (max(k, 1) - len(top))
            cells += [(resolve(t) if t else ("id", ""), _rank(name, n, tie) if t else "",
                       t in right, n < tie) for n, t in enumerate(top)]  # fmt: skip
        for ax, (shown, caption, is_correct, tied) in zip(axes[r], cells, strict=True):
            _draw(ax, shown)
            mark = (" ✓ correct, tied" if tied else " ✓ correct") if is_correct else ""
            ax.set_title(caption + mark, fontsize=6)
            if is_correct:
                for spine in ax.spines.values():
                    spine.set_edgecolor("#d80" if tied else "#2a2")
                    spine.set_linewidth(3)
                    spine.set_linestyle("--" if tied else "-")
    fig.suptitle(
        f"{summary_table(c).title}: per query, each model's {c.metric}, then each model's "
        "top candidates, best first (green frame: the correct candidate; dashed orange: "
        "the correct candidate tied first with others, a share, not a win)",
        fontsize=8,
    )
    fig.tight_layout()
    return atomic_write_figure(fig, path, dpi=110)


def _rank(name: str, n: int, tied: int) -> str:
    """A top candidate's caption: ``bow #2``, or ``bow =1 of 4`` inside a tie for first."""
    return f"{name} =1 of {tied}" if n < tied else f"{name} #{n + 1}"


def _draw(ax: Any, shown: tuple[str, str]) -> None:
    ax.set_xticks([])
    ax.set_yticks([])
    kind, value = shown
    if kind == "image":
        try:
            from PIL import Image

            with Image.open(value) as image:
                image.thumbnail((160, 160))
                ax.imshow(image.convert("RGB"))
            return
        except (ImportError, OSError):
            value = os.path.basename(value)
    ax.text(0.5, 0.5, textwrap.fill(value, 20), ha="center", va="center", fontsize=6, wrap=True)


def write_comparison(
    c: Comparison,
    out: str | Path,
    *,
    sheet: int = 12,
    warn: Callable[[str], None] | None = None,
) -> list[Path]:
    """Write ``compare.md`` (the summary), ``per_query.csv`` and, for the ``sheet`` queries
    that differ most, ``contact_sheet.html`` and ``contact_sheet.png``; returns the paths."""
    from bindkit.results.report import to_markdown

    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BindkitError(f"--out {out}: is a file; pass a directory for the comparison")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    a, b = c.labels()
    table = summary_table(c)
    sources = Table(
        "Results compared",
        ["side", "model", "file"],
        [["A", a, str(c.a.path)], ["B", b, str(c.b.path)]],
    )
    md = to_markdown([table, sources])
    target = out / "compare.md"
    atomic_write_text(target, md.replace("# bindkit report", "# bindkit compare", 1))
    written.append(target)
    target = out / "per_query.csv"
    atomic_write_text(target, per_query_csv(c))
    written.append(target)
    rows = largest(c, sheet)
    if rows:
        resolve = resolver(c.a.record, warn)
        target = out / "contact_sheet.html"
        atomic_write_text(target, sheet_html(c, rows, resolve, out))
        written.append(target)
        png = sheet_png(c, rows, resolve, out / "contact_sheet.png")
        if png is not None:
            written.append(png)
    return written
