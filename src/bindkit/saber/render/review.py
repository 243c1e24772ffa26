"""``bindkit saber review``: a static HTML contact sheet for screening rendered images.

One row per MCQ: the query and its four candidates, each with its image, role and
generation-form caption. Every image can be accepted or rejected with the mouse or the keyboard
(arrow keys or j/k to move, r to reject, a to accept, e to export); the decisions live in the
browser's local storage, and "Export rejects" downloads ``rejects.json`` (``{"rejected": [item
ids]}``), which ``bindkit saber render DIR --redo rejects.json`` renders again.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from bindkit._io import atomic_write_text
from bindkit.errors import BindkitError
from bindkit.saber.io import read_saber

_ROLE_LABELS = {
    "query": "query",
    "binding_preserving": "1 · binding-preserving (correct)",
    "attribute_swap": "2 · attribute swap",
    "object_swap": "3 · object swap",
    "joint_swap": "4 · joint swap",
}

_STYLE = """
body { font: 14px system-ui, sans-serif; margin: 1em; background: #fafafa; }
header { position: sticky; top: 0; background: #fafafa; padding: .5em 0; z-index: 1; }
.mcq { display: grid; grid-template-columns: repeat(5, 1fr); gap: .6em; margin: 1em 0;
       padding-top: .4em; border-top: 1px solid #ccc; }
.mcq h2 { grid-column: 1 / -1; font-size: 1em; margin: 0; }
figure { margin: 0; padding: .4em; border: 3px solid transparent; border-radius: 6px;
         background: white; }
figure:focus { outline: 3px solid #4a90d9; }
figure.rejected { border-color: #d33; background: #fee; }
figure.accepted { border-color: #3a3; }
figure img { width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; }
.role { font-weight: 600; }
.missing { aspect-ratio: 1; display: flex; align-items: center; justify-content: center;
           background: #eee; color: #888; }
"""

_SCRIPT = """
const KEY = "bindkit-review:" + document.body.dataset.key;
const state = JSON.parse(localStorage.getItem(KEY) || "{}");
const cells = Array.from(document.querySelectorAll("figure[data-id]"));
function show(cell) {
  const mark = state[cell.dataset.id];
  cell.classList.toggle("rejected", mark === "reject");
  cell.classList.toggle("accepted", mark === "accept");
}
function mark(cell, value) {
  state[cell.dataset.id] = value;
  localStorage.setItem(KEY, JSON.stringify(state));
  show(cell);
  count();
}
function rejected() { return cells.map(c => c.dataset.id).filter(id => state[id] === "reject"); }
function count() {
  document.getElementById("count").textContent = rejected().length + " rejected";
  document.getElementById("rejects-out").value = JSON.stringify({rejected: rejected()});
}
function exportRejects() {
  const text = JSON.stringify({rejected: rejected()}, null, 1);
  const link = document.createElement("a");
  link.href = URL.createObjectURL(new Blob([text], {type: "application/json"}));
  link.download = "rejects.json";
  document.body.appendChild(link);
  link.click();
  link.remove();
}
cells.forEach((cell, i) => {
  show(cell);
  cell.querySelector(".reject").addEventListener("click", () => mark(cell, "reject"));
  cell.querySelector(".accept").addEventListener("click", () => mark(cell, "accept"));
  cell.addEventListener("keydown", (event) => {
    const step = {ArrowRight: 1, j: 1, ArrowLeft: -1, k: -1, ArrowDown: 5, ArrowUp: -5}[event.key];
    if (step) {
      const next = cells[Math.min(cells.length - 1, Math.max(0, i + step))];
      next.focus();
      event.preventDefault();
    } else if (event.key === "r") {
      mark(cell, "reject");
    } else if (event.key === "a") {
      mark(cell, "accept");
    }
  });
});
document.getElementById("export").addEventListener("click", exportRejects);
document.addEventListener("keydown", (event) => { if (event.key === "e") exportRejects(); });
count();
if (cells.length) cells[0].focus();
"""


def review_html(directory: str | Path) -> str:
    """The contact sheet of a SABER directory as one HTML string (images linked, not copied)."""
    data = read_saber(directory)
    manifest = data.manifest or {}
    key = (manifest.get("images") or {}).get("sha256") or str(Path(directory).resolve())
    rows = []
    for mcq in data.mcqs:
        cells = []
        for item in mcq.items:
            caption = html.escape(item.generation_text)
            if item.image is None:
                picture = '<div class="missing">no image</div>'
            else:
                picture = f'<img src="{html.escape(item.image)}" alt="{caption}" loading="lazy">'
            cells.append(
                f'<figure tabindex="0" data-id="{html.escape(item.id)}">{picture}'
                f'<figcaption><span class="role">{_ROLE_LABELS[item.role]}</span><br>{caption}'
                f'<br><button class="accept" type="button">accept (a)</button> '
                f'<button class="reject" type="button">reject (r)</button></figcaption></figure>'
            )
        title = f"{html.escape(mcq.id)} · N = {mcq.n} · {mcq.kind}"
        rows.append(f'<section class="mcq"><h2>{title}</h2>{"".join(cells)}</section>')
    images = manifest.get("images") or {}
    made_by = html.escape(f"{images.get('backend', 'no renderer')} {images.get('model') or ''}")
    return (
        "<!doctype html>\n<html lang='en'><head><meta charset='utf-8'>"
        f"<title>SABER review: {html.escape(str(directory))}</title><style>{_STYLE}</style>"
        f"</head><body data-key='{html.escape(json.dumps(key)[1:-1])}'><header>"
        f"<b>SABER review</b> · {len(data.mcqs)} MCQs · images by {made_by} · "
        "keys: ←/→ or j/k move, ↑/↓ row, r reject, a accept, e export · "
        "<span id='count'></span> <button id='export' type='button'>Export rejects</button>"
        "<textarea id='rejects-out' readonly rows='1' cols='30' aria-label='rejects as JSON'>"
        f"</textarea></header>{''.join(rows)}<script>{_SCRIPT}</script></body></html>\n"
    )


def write_review(directory: str | Path, out: str | Path | None = None) -> Path:
    """Write the contact sheet (default ``DIR/review.html``) and return its path.

    Raises:
        BindkitError: ``out`` is not an ``.html`` file directly in ``directory`` (image links
            are relative to it); so the page never replaces ``saber.jsonl`` or ``manifest.json``.
    """
    directory = Path(directory)
    path = Path(out) if out is not None else directory / "review.html"
    if path.suffix.lower() not in (".html", ".htm"):
        raise BindkitError(f"--out {path}: give an .html file name, e.g. {directory}/review.html")
    if path.resolve().parent != directory.resolve():
        raise BindkitError(
            f"--out {path}: must be a file directly in {directory} (image links are relative)"
        )
    atomic_write_text(path, review_html(directory))
    return path
