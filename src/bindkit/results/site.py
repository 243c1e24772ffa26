"""A static results site: ``bindkit report RESULTS --out site/``.

One ``index.html`` that opens from disk or any static host: an overview (models × benchmarks,
the report's headline scores), then per benchmark, data and subset a table of models × (pairing,
declared score). Every table sorts by clicking a column header (numbers numerically, missing
values last). Every score cell opens its provenance (model fingerprint, data hash, options,
bindkit version, when it was computed) and links to its result file, copied under
``site/results/`` so the site stays whole when it is moved. The SABER by-N plot sits beside its
table. The site is written to a temporary folder and renamed into place.
"""

from __future__ import annotations

import html
import json
import shutil
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text, check_can_create, check_not_input
from bindkit._staging import new_staging, swap_into_place
from bindkit.errors import BindkitError
from bindkit.records.fields import data_id, data_labels, subset_of
from bindkit.records.tables import PAIRING_NAMES, PAIRING_ORDER, label, pct
from bindkit.results.report import (
    PARTIAL_MARK,
    _averaged,
    _headline_score,
    _latest,
    _number,
    _score_names,
    _subset_order,
    plot_by_n,
)
from bindkit.results.store import collect_paths, is_partial, none_found, noting

MARKER = ".bindkit-site"  # marks a folder this module wrote (and lists its files): a rerun may
#                           replace it
STAGING_TAG = "site"  # staged as .OUT.site-PID-XXXXXXXX beside OUT


@dataclass(frozen=True)
class Cell:
    """One shown number: its value (None: missing) and the result files behind it."""

    value: float | None
    sources: tuple[str, ...] = ()  # provenance ids
    partial: bool = False

    @property
    def text(self) -> str:
        return pct(self.value) + (PARTIAL_MARK if self.partial else "")


@dataclass
class SiteTable:
    title: str
    columns: list[str]
    rows: list[tuple[str, list[Cell]]]  # (model, one cell per column after the first)
    anchor: str = ""
    plot: str | None = None


@dataclass
class Site:
    tables: list[SiteTable] = field(default_factory=list)
    provenance: dict[str, dict[str, Any]] = field(default_factory=dict)


def _provenance(record: dict[str, Any], link: str) -> dict[str, Any]:
    model, data = record.get("model", {}), record.get("data", {})
    prov = record.get("provenance", {})
    return {
        "model": label(record),
        "fingerprint": model.get("fingerprint"),
        "task": record["task"],
        "data": data.get("name"),
        "data_sha256": data.get("sha256"),
        "data_source": data.get("source"),
        "subset": subset_of(record),
        "pairing": record["pairing"],
        "options": record.get("options", {}),
        "metrics_version": prov.get("metrics_version"),
        "bindkit_version": record.get("bindkit_version"),
        "created": record.get("created"),
        "seconds": record.get("seconds"),
        "partial": is_partial(record),
        "file": link,
    }


def build_site(files: list[tuple[str, dict[str, Any]]]) -> Site:
    """The site's tables from (link to the result file, record) pairs; pure."""
    by_id = {id(r): link for link, r in files}
    records = _latest([r for _, r in files])
    site = Site()
    ids: dict[int, str] = {}
    for number, r in enumerate(records):
        ids[id(r)] = f"r{number}"
        site.provenance[f"r{number}"] = _provenance(r, by_id[id(r)])
    site.tables.append(_overview(records, ids))
    labels = data_labels(records)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        groups[(r["task"], labels[data_id(r)])].append(r)
    for (task, where), group in sorted(groups.items()):
        for subset in _subset_order(task, group):
            table = _benchmark_table(task, where, subset, group, ids)
            if table.rows:
                table.anchor = f"t{len(site.tables)}"
                site.tables.append(table)
    return site


def _overview(records: list[dict[str, Any]], ids: dict[int, str]) -> SiteTable:
    """The report's overview as numbers: a benchmark with an official mean over its subsets
    shows that mean, any other one column per subset."""
    labels = data_labels(records)
    order = {p: i for i, p in enumerate(PAIRING_ORDER)}
    cells: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    columns: dict[str, None] = {}
    for r in sorted(
        records, key=lambda r: (r["task"], labels[data_id(r)], order.get(r["pairing"], 9))
    ):
        hit = _headline_score(r)
        if hit is None:
            continue
        where = labels[data_id(r)]
        if not _averaged(r["task"]) and subset_of(r) != "default":
            where = f"{where} {subset_of(r)}"
        column = f"{r['task']} {where} {PAIRING_NAMES.get(r['pairing'], r['pairing'])} {hit[0]}"
        columns[column] = None
        cells[(label(r), column)].append(r)
    rows = []
    for model in dict.fromkeys(label(r) for r in records):
        row = []
        for column in columns:
            group = cells.get((model, column), [])
            values = [v for v in (_headline_score(r) for r in group) if v is not None]
            mean = _number(sum(v for _, v in values) / len(values)) if values else None
            row.append(
                Cell(mean, tuple(ids[id(r)] for r in group), any(is_partial(r) for r in group))
            )
        rows.append((model, row))
    title = "Overview: main score per benchmark (%; a mean over subsets only where it has one)"
    return SiteTable(title, ["model", *columns], rows, anchor="overview")


def _benchmark_table(
    task: str, where: str, subset: str, group: list[dict[str, Any]], ids: dict[int, str]
) -> SiteTable:
    """Models × (pairing, score) for one benchmark, data and subset."""
    mine = [r for r in group if subset_of(r) == subset]
    found: dict[tuple[str, str], dict[str, Any]] = {(label(r), r["pairing"]): r for r in mine}
    pairings = [p for p in PAIRING_ORDER if any(r["pairing"] == p for r in mine)]
    pairings += sorted({r["pairing"] for r in mine} - set(pairings))
    names = _score_names(task) or tuple(
        dict.fromkeys(k for r in mine for k, v in r["scores"].items() if _number(v) is not None)
    )
    columns = [  # a score NaN everywhere keeps its column (shown as missing, with a warning)
        (p, n)
        for p in pairings
        for n in names
        if any(_is_score(found.get((m, p), {}).get("scores", {}).get(n)) for m, _ in found)
    ]
    rows = []
    for model in dict.fromkeys(label(r) for r in mine):
        row = []
        for p, n in columns:
            r = found.get((model, p))
            value = None if r is None else _number(r["scores"].get(n))
            row.append(Cell(value, (ids[id(r)],) if r else (), r is not None and is_partial(r)))
        rows.append((model, row))
    title = f"{task} · {where}" + ("" if subset == "default" else f" · {subset}")
    heads = [f"{PAIRING_NAMES.get(p, p)} {n}" for p, n in columns]
    return SiteTable(title + " (%)", ["model", *heads], rows)


def _is_score(value: Any) -> bool:
    """A number, NaN included (an undefined score: shown as missing, never dropped)."""
    return not isinstance(value, bool) and isinstance(value, int | float)


def undefined_scores(record: dict[str, Any]) -> list[str]:
    """The declared scores of ``record`` that are NaN (shown as missing, worth a warning)."""
    scores = record["scores"]
    return [n for n in _score_names(record["task"]) if _is_score(scores.get(n))
            and scores[n] != scores[n]]  # fmt: skip


# -- writing -------------------------------------------------------------------------------
def write_site(
    results: str | Path, out: str | Path, warn: Callable[[str], None] | None = None
) -> Path:
    """Write the site of every result under ``results`` into the folder ``out``; returns
    ``out/index.html``. ``out`` may not overlap ``results`` (its copies would be read as results
    next time); an existing ``out`` is replaced only if this function wrote it."""
    results, out = Path(results), Path(out)
    check_not_input(out, [results])
    check_replaceable(out)
    skipped, note = noting(warn)
    found = collect_paths(results, note)
    if not found:
        raise none_found(results, len(skipped))
    check_can_create(out.parent if out.parent != Path("") else Path("."))
    staging = new_staging(out, STAGING_TAG)
    try:
        files = []
        for path, record in found:
            for name in undefined_scores(record):
                if warn is not None:
                    warn(f"warning: {path}: score {name!r} is NaN (undefined); shown as –")
            link = Path("results") / path.relative_to(results)
            (staging / link).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, staging / link)
            files.append((link.as_posix(), record))
        site = build_site(files)
        plot = plot_by_n([r for _, r in files], staging / "saber_by_n.png")
        if plot is not None:
            for table in site.tables:
                if table.title.startswith("saber ·"):
                    table.plot = plot.name
                    break
        atomic_write_text(staging / "index.html", to_html(site, str(results)))
        written = sorted(
            p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file()
        )
        marker = {"written_by": "bindkit report --out DIR/", "files": written}
        (staging / MARKER).write_text(json.dumps(marker, indent=1) + "\n", "utf-8")
        check_replaceable(out)  # again: a file may have been put there while we worked
        swap_into_place(staging, out, replace=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)  # gone already once renamed into place
    return out / "index.html"


def check_replaceable(out: Path, attempts: int = 5) -> None:
    """Refuse an ``out`` a rebuild would damage: a file, a folder this module did not write,
    or an earlier site holding a file it did not write (the rebuild replaces the folder whole,
    so that file would be lost). A site that another build swaps out while it is read (a
    folder gone mid-walk) is read again, up to ``attempts`` times.

    Raises:
        BindkitError: one line naming ``out`` or the first such file.
    """
    for _ in range(attempts):
        try:
            return _check_replaceable(out)
        except FileNotFoundError:
            continue  # another build replaced the site while it was read: read the new one
    raise BindkitError(f"--out {out}: other runs keep replacing it; run again when they end")


def _check_replaceable(out: Path) -> None:
    """:func:`check_replaceable` once; FileNotFoundError when the site was swapped out by
    another build while it was read (``out`` gone, or another folder by then)."""
    try:
        folder = out.stat().st_ino
    except FileNotFoundError:
        return

    def refuse(message: str) -> BindkitError:
        try:
            same = out.stat().st_ino == folder
        except FileNotFoundError:
            same = False
        if not same:  # what was read is another build's half-swapped site: read again
            raise FileNotFoundError(out)
        return BindkitError(message)

    if not out.is_dir() or (any(out.iterdir()) and not (out / MARKER).is_file()):
        raise refuse(
            f"--out {out}: exists and is not a bindkit site; choose a new folder or remove it"
        )
    if not (out / MARKER).is_file():
        return  # an empty folder may become the site
    ours = _site_files(out / MARKER)
    for path in sorted(out.rglob("*")):
        name = path.relative_to(out).as_posix()
        if name == MARKER or (path.is_dir() and not path.is_symlink()):
            continue
        written = name in ours if ours is not None else _legacy_site_file(name)
        if not written:
            raise refuse(
                f"--out {out}: holds {path}, which bindkit did not write and a rebuild would "
                "delete; move it out of the site first, or choose another --out"
            )


def _site_files(marker: Path) -> set[str] | None:
    """The files a site's marker lists; None for a marker of an earlier bindkit (plain text)."""
    try:
        data = json.loads(marker.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError, OSError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    return {f for f in files if isinstance(f, str)} if isinstance(files, list) else None


def _legacy_site_file(name: str) -> bool:
    """What a site of a bindkit without the file list in its marker writes."""
    return name in ("index.html", "saber_by_n.png") or name.startswith("results/")


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:.5em 0 2em}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}
td:first-child,th:first-child{text-align:left}
th{cursor:pointer;background:#f4f4f4;user-select:none}
th[aria-sort=ascending]::after{content:" ▲"}th[aria-sort=descending]::after{content:" ▼"}
td.score{cursor:pointer}td.score:hover{background:#eef}
#provenance{position:fixed;right:1em;top:1em;max-width:32em;background:#fff;
border:1px solid #888;padding:1em;box-shadow:0 2px 8px #0003;display:none}
#provenance pre{white-space:pre-wrap;font-size:12px}
nav a{margin-right:1em}img{max-width:100%}
"""

_SCRIPT = """
function sortTable(th){
  const table=th.closest('table'), i=[...th.parentNode.children].indexOf(th);
  const dir=th.getAttribute('aria-sort')==='descending'?'ascending':'descending';
  table.querySelectorAll('th').forEach(h=>h.removeAttribute('aria-sort'));
  th.setAttribute('aria-sort',dir);
  const rows=[...table.tBodies[0].rows], sign=dir==='ascending'?1:-1;
  rows.sort((a,b)=>{
    const x=a.cells[i].dataset.value, y=b.cells[i].dataset.value;
    if(x===undefined||y===undefined){
      return sign*a.cells[i].textContent.localeCompare(b.cells[i].textContent);}
    if(x==='')return y===''?0:1; if(y==='')return -1;
    return sign*(parseFloat(x)-parseFloat(y));});
  rows.forEach(r=>table.tBodies[0].appendChild(r));
}
const PROVENANCE=JSON.parse(document.getElementById('provenance-data').textContent);
function showProvenance(td){
  const box=document.getElementById('provenance'), ids=td.dataset.sources.split(' ');
  const body=box.querySelector('.body'); body.innerHTML='';
  ids.filter(Boolean).forEach(id=>{
    const p=PROVENANCE[id], a=document.createElement('a'), pre=document.createElement('pre');
    a.href=p.file; a.textContent=p.file; pre.textContent=JSON.stringify(p,null,1);
    body.appendChild(a); body.appendChild(pre);});
  box.style.display='block';
}
document.querySelectorAll('th').forEach(th=>th.addEventListener('click',()=>sortTable(th)));
document.querySelectorAll('td.score').forEach(
  td=>td.addEventListener('click',()=>showProvenance(td)));
document.getElementById('close').addEventListener(
  'click',()=>{document.getElementById('provenance').style.display='none';});
"""


def to_html(site: Site, source: str) -> str:
    """The site's one page; scripts and styles inline, so it needs no server."""
    esc = html.escape
    nav = "".join(f'<a href="#{t.anchor}">{esc(t.title)}</a>' for t in site.tables)
    body = []
    for t in site.tables:
        head = "".join(f'<th scope="col">{esc(c)}</th>' for c in t.columns)
        rows = []
        for model, cells in t.rows:
            tds = "".join(
                f'<td class="score" data-value="{"" if c.value is None else repr(c.value)}" '
                f'data-sources="{esc(" ".join(c.sources))}" '
                f'title="{esc(_tooltip(site, c))}">{esc(c.text)}</td>'
                for c in cells
            )
            rows.append(f"<tr><td>{esc(model)}</td>{tds}</tr>")
        plot = f'<img src="{esc(t.plot)}" alt="{esc(t.plot)}">' if t.plot else ""
        body.append(
            f'<section id="{esc(t.anchor)}"><h2>{esc(t.title)}</h2>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"{plot}</section>"
        )
    data = json.dumps(site.provenance, ensure_ascii=False, sort_keys=True).replace("</", "<\\/")
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>bindkit results</title><style>{_STYLE}</style></head><body>"
        f"<h1>bindkit results</h1><p>From <code>{esc(source)}</code>. Click a column to sort, "
        f"a score for what produced it. {esc(PARTIAL_MARK.strip())}: scored without some "
        f"images.</p><nav>{nav}</nav>{''.join(body)}"
        '<aside id="provenance"><button id="close">close</button><div class="body"></div>'
        "</aside>"
        f'<script type="application/json" id="provenance-data">{data}</script>'
        f"<script>{_SCRIPT}</script></body></html>\n"
    )


def _tooltip(site: Site, cell: Cell) -> str:
    parts = []
    for source in cell.sources:
        p = site.provenance[source]
        parts.append(
            f"{p['model']} ({p['fingerprint']}) on {p['data']} "
            f"sha256 {str(p['data_sha256'])[:12]}, bindkit {p['bindkit_version']}, {p['created']}"
        )
    return "; ".join(parts)
