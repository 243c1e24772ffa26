"""Write the docs site's results pages (``docs/results/*.md``) from the result files they show.

The current measured tables live here and only here; the guides and the README link to them, and
the dated studies behind them are the experiments pages. The pages are made from the files in
``docs/results/data/``:

- ``main-job-tt.json``: the result file ``bindkit eval --model st:default --out results`` (the
  README's main job) wrote, as it wrote it;
- ``finetune.json``, ``benchmarks.json``, ``performance.json``: tables whose runs' own files
  (``DIR/recipe.json``, ``DIR/demo.json``, the benchmark scripts' output) are not in the
  repository; their numbers were transcribed from the measured reports, each table names its
  command, date, machine and experiment page, and each page says so.

Run ``python scripts/results_pages.py`` after changing a data file (it rewrites the pages and the
plot); ``--check`` writes nothing and exits 1 naming the first page that disagrees with its files
(``tests/test_results_pages.py`` runs it).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "docs" / "results"
DATA = RESULTS / "data"
MAIN_JOB = "main-job-tt.json"
TRANSCRIBED = (
    "The numbers below were transcribed from each run's measured report: the result files its "
    "command wrote are not in the repository. Each table names its command, date and machine, "
    "and links the experiment page with the protocol and the history."
)
PAGES = {
    "finetune.json": ("finetune.md", "Finetuning results", "finetune.png"),
    "benchmarks.json": ("benchmarks.md", "Benchmark results", None),
    "performance.json": ("performance.md", "Performance against the peers", None),
}


def _number(value: float | None, digits: int) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _pct(fraction: float) -> str:
    return f"{100 * fraction:.1f}"


def main_job_page(result: dict[str, Any]) -> str:
    """The main job's page, from the result file ``bindkit eval`` wrote."""
    scores, libraries = result["scores"], result["libraries"]
    by_n = scores["mcq_accuracy_by_n"]
    lines = [
        "# The main job: `st:default` on the default SABER set",
        "",
        "`bindkit eval --model st:default --out results` (the README's main job), made from the",
        f"result file it wrote (`data/{MAIN_JOB}`, schema `{result['schema']}`), as written:",
        f"bindkit {result['bindkit_version']}, {result['created']}, "
        f"{result['seconds']:.0f} s on 2 CPU cores shared with other jobs,",
        f"torch {libraries['torch']}, sentence-transformers {libraries['sentence-transformers']}, "
        f"transformers {libraries['transformers']}.",
        "",
        f"Data: `{result['data']['source']}` ({result['counts']['mcqs']:,} MCQs, "
        f"sha256 `{result['data']['sha256'][:12]}…`); model `{result['model']['spec']}` "
        f"(fingerprint `{result['model']['fingerprint']}`); pairing {result['pairing']}.",
        "",
        "| score | % |",
        "|---|---|",
        f"| MCQ accuracy | {_pct(scores['mcq_accuracy'])} |",
        f"| mAP independent | {_pct(scores['map_independent'])} |",
        f"| mAP nested | {_pct(scores['map_nested'])} |",
        "",
        "MCQ accuracy by the number of bindings N (chance 25 %):",
        "",
        "| N | " + " | ".join(by_n) + " |",
        "|---|" + "---|" * len(by_n),
        "| MCQ % | " + " | ".join(_pct(v) for v in by_n.values()) + " |",
        "",
        "![MCQ accuracy per N with the chance line](../images/quickstart-report_saber_by_n.png)",
        "",
    ]
    return "\n".join(lines)


def tables_page(title: str, document: dict[str, Any], plot: str | None) -> str:
    """A page of transcribed tables (``finetune.json`` and its kind)."""
    lines = [f"# {title}", "", TRANSCRIBED, ""]
    for table in document["tables"]:
        columns = table["columns"]
        lines += [
            f"## {table['title']} {{#{table['id']}}}",
            "",
            f"`{table['command']}`; {table['date']}; {table['machine']}; {table['versions']}; "
            f"from `{table['source']}`. Unit: {table['unit']}.",
            "",
            "| | " + " | ".join(columns) + " |",
            "|---|" + "---|" * len(columns),
        ]
        for row, values in table["rows"].items():
            if len(values) != len(columns):
                raise ValueError(f"{table['id']}: row {row!r} has {len(values)} values")
            lines.append(
                f"| {row} | " + " | ".join(_number(v, table["digits"]) for v in values) + " |"
            )
        lines += [
            "",
            table["note"],
            "",
            f"Protocol and history: [experiment](../experiments/{table['experiment']}).",
            "",
        ]
        if plot is not None and table is document["tables"][0]:
            lines += [f"![{table['title']}]({plot})", ""]
    return "\n".join(lines)


def index_page(documents: dict[str, dict[str, Any]]) -> str:
    lines = [
        "# Results",
        "",
        "The current measured tables, each made from its result files by",
        "`scripts/results_pages.py` (a test fails when a page and its files disagree). The",
        "dated studies behind them, current and superseded, are the",
        "[experiments](../experiments/index.md).",
        "",
        "- [The main job](main-job.md): `st:default` on the default SABER set.",
    ]
    for name, (page, title, _) in PAGES.items():
        tables = ", ".join(t["title"] for t in documents[name]["tables"])
        lines.append(f"- [{title}]({page}): {tables}.")
    return "\n".join(lines) + "\n"


def read_data(data: Path = DATA) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    result = json.loads((data / MAIN_JOB).read_text(encoding="utf-8"))
    documents = {n: json.loads((data / n).read_text(encoding="utf-8")) for n in PAGES}
    return result, documents


# `bindkit demo finetune --recipe NAME` runs whose recipe.json is committed as written
DEMOS = {
    "demo-binding-v1.recipe.json": "binding-v1",
    "demo-binding-v2.recipe.json": "binding-v2",
}
DEMO_COMMAND = (
    "bindkit demo finetune --recipe {name} --out DIR --sts SICK_trial.txt --scpp sugarcrepe_pp "
    "--sugarcrepe sugarcrepe"
)


def demo_section(name: str, file: str, record: dict[str, Any]) -> str:
    """A demo's table and its changes vs base with paired intervals, from the ``recipe.json``
    its run wrote (``data/<file>``, as written)."""
    from bindkit.demo.finetune import COLUMN_LABELS
    from bindkit.recipes.runner import change_cell

    recipe = record["identity"]["recipe"]["name"]
    if recipe != name:
        raise ValueError(f"{file}: a run of recipe {recipe}, not {name}")
    table, changes = record["table"], record["changes"]
    columns = [c for c in COLUMN_LABELS if c in table["base"]]
    versions = ", ".join(
        f"{k} {record['versions'][k]}"
        for k in ("torch", "transformers", "sentence-transformers", "peft")
    )
    lines = [
        f"## `{name}` on the test halves {{#{name}-test}}",
        "",
        f"`{DEMO_COMMAND.format(name=name)}`; {record['seconds'] / 60:.1f} min wall on 2 CPU "
        f"cores shared with other jobs; {versions}; from `data/{file}` (the run's "
        "`DIR/recipe.json`, as written). Every column is the fixed, hashed **test half** of its "
        "set; the recipe was chosen on dev halves only. Unit: %.",
        "",
        "| | " + " | ".join(COLUMN_LABELS[c] for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row, scores in table.items():
        lines.append(f"| {row} | " + " | ".join(f"{100 * scores[c]:.2f}" for c in columns) + " |")
    lines += [
        "",
        "Change vs base in points, with its 95 % paired bootstrap interval (the same items "
        "resampled for both models):",
        "",
        "| | " + " | ".join(COLUMN_LABELS[c] for c in columns) + " |",
        "|---|" + "---|" * len(columns),
    ]
    for row, by_column in changes.items():
        cells = [change_cell(by_column.get(c)) for c in columns]
        lines.append(f"| {row} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"`{record['shipped']}` raw is the shipped adapter. Protocol, selection and history: "
        "[binding-v2 search](../experiments/binding-v2-search.md).",
        "",
    ]
    return "\n".join(lines)


def render(data: Path = DATA) -> dict[str, str]:
    """``{page name under docs/results/: markdown}`` from the files in ``data``."""
    result, documents = read_data(data)
    pages = {"index.md": index_page(documents), "main-job.md": main_job_page(result)}
    for name, (page, title, plot) in PAGES.items():
        pages[page] = tables_page(title, documents[name], plot)
    demos = [
        demo_section(name, file, json.loads((data / file).read_text(encoding="utf-8")))
        for file, name in DEMOS.items()
        if (data / file).is_file()
    ]
    if demos:  # the current demo tables first, on the finetuning page
        head, _, rest = pages["finetune.md"].partition("\n\n")
        pages["finetune.md"] = "\n\n".join([head, *demos, rest])
    return pages


def write_plot(document: dict[str, Any], path: Path) -> None:
    """A grouped bar chart of the first table of ``document`` (rows × columns)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    table = document["tables"][0]
    rows, columns = table["rows"], table["columns"]
    figure, axes = plt.subplots(figsize=(11, 3.8))
    width = 0.8 / len(rows)
    for i, (row, values) in enumerate(rows.items()):
        xs = [c + i * width for c in range(len(columns))]
        axes.bar(xs, [v or 0 for v in values], width, label=row)
    axes.set_xticks([c + width * (len(rows) - 1) / 2 for c in range(len(columns))])
    labels = [textwrap.fill(c.replace("SC++ TOT ", "SC++ "), 12) for c in columns]
    axes.set_xticklabels(labels, fontsize=8)
    axes.set_ylabel(table["unit"])
    axes.set_ylim(0, 100)
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes.set_title(table["title"].replace("`", ""), fontsize=10)
    figure.tight_layout()
    temporary = path.with_suffix(".tmp.png")
    figure.savefig(temporary, dpi=110)
    plt.close(figure)
    temporary.replace(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 when a page disagrees"
    )
    args = parser.parse_args(argv)
    pages = render()
    if args.check:
        for name, text in pages.items():
            path = RESULTS / name
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                print(
                    f"docs/results/{name}: disagrees with docs/results/data/; "
                    "run python scripts/results_pages.py",
                    file=sys.stderr,
                )
                return 1
        return 0
    for name, text in pages.items():
        temporary = RESULTS / f".{name}.tmp"
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(RESULTS / name)
    _, documents = read_data()
    for name, (_, _, plot) in PAGES.items():
        if plot is not None:
            write_plot(documents[name], RESULTS / plot)
    print(f"wrote {', '.join(pages)} under {RESULTS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
