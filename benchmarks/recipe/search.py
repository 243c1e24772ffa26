"""Issue 18's recipe search: a thin runner of the recipes in ``trials.toml`` (docs/experiments/).

    python benchmarks/recipe/search.py prepare --work W    # the dev panel (dev_panel.py)
    python benchmarks/recipe/search.py run all --work W    # or trial names; then `table --work W`

Each trial's recipe runs through :func:`bindkit.recipes.run_recipe` into ``W/trials/NAME`` (a
rerun reuses every run whose identity is unchanged); its shipped adapter is scored at each α on
the dev panel, and the dev-sts-slack rule's α on the held-out panel (evaluations reused by
``bindkit.evaluate``'s rule). ``W/results.csv`` and ``results.md`` are rewritten each run.
"""

from __future__ import annotations

import argparse
import csv
import io
import tomllib
from dataclasses import replace
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

HERE = Path(__file__).resolve().parent
RUNNER_KEYS = ("alphas", "threads")  # a trial's keys that are not recipe keys


def load_study(path: Path) -> dict[str, Any]:
    """``trials.toml``: the base recipe, the select rule, the dev and held-out panels, and each
    trial as ``{"recipe": Recipe, "alphas": […], "threads": n}``; one line naming a bad key."""
    from bindkit.recipes.panel import as_table, known_keys, read_panel
    from bindkit.recipes.recipe import recipe_from_dict

    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
        known_keys("", "", document, ("recipe", "select", "dev", "heldout", "trials"))
        base = recipe_from_dict(as_table("", "recipe", document.get("recipe")), base=path.parent)
        select = as_table("", "select", document.get("select"))
        known_keys("", "select.", select, ("rule", "alphas", "sts", "slack", "binding"))
        dev = read_panel("[[dev]]", None, document.get("dev"))
        heldout = read_panel("[[heldout]]", None, document.get("heldout"))
        names = {e.name for e in dev}
        if not (
            select.get("rule") == "dev-sts-slack"
            and isinstance(select.get("alphas"), list)
            and isinstance(select.get("slack"), float | int)
            and isinstance(select.get("binding"), list)
            and {select.get("sts"), *select["binding"]} <= names
            and select["binding"]
        ):
            raise BindkitError('[select]: give rule "dev-sts-slack", alphas, slack, sts, binding')
        trials = {}
        for name, table in as_table("", "trials", document.get("trials", {})).items():
            table = dict(as_table("", f"trials.{name}", table))
            options = {k: table.pop(k) for k in RUNNER_KEYS if k in table}
            try:
                # the shipped adapter: the trial's own soup, else its first run
                recipe = base.replace(name=name, **{"select.ship": None} | table)
            except BindkitError as exc:
                raise BindkitError(f"trials.{name}: {exc}") from None
            trials[name] = {"recipe": recipe, "alphas": select["alphas"], "threads": 2} | options
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, BindkitError) as exc:
        raise BindkitError(f"{path}: {exc}") from None
    return {"base": base, "select": select, "dev": dev, "heldout": heldout, "trials": trials}


def score(spec: str, panel: Any, places: dict[str, str], results: Path) -> dict[str, float]:
    """``panel`` for ``spec`` with its ``{work}``/``{shared}``/``{test}`` filled, in points."""
    from bindkit.recipes.panel import score_panel

    entries = []
    for entry in panel:
        for key, value in places.items():
            entry = replace(entry, data=entry.data and entry.data.replace(key, value))
        entries.append(entry)
    return {k: round(100 * v, 2) for k, v in score_panel(spec, tuple(entries), results).items()}


def run_trial(
    name: str, study: dict[str, Any], places: dict[str, str], work: Path
) -> list[dict[str, Any]]:
    """Run trial ``name``'s recipe, score its α on the dev panel, mark the rule's choice and
    score it on the held-out panel; returns its rows (one per α)."""
    from bindkit.adapters.lines import apply_lines
    from bindkit.recipes.runner import run_recipe
    from bindkit.recipes.select import dev_sts_slack_alpha

    trial, select = study["trials"][name], study["select"]
    recipe, out = trial["recipe"], work / "trials" / name
    run_recipe(recipe, out, overwrite=True, progress=False, threads=trial["threads"])
    places = places | {"{test}": str(out / "data" / "test-recipe.jsonl")}
    soup = recipe.soup.runs if recipe.soup and recipe.shipped == recipe.soup.name else ()
    seeds = {r.name: r.seed for r in recipe.runs}
    seed = "+".join(str(seeds[r]) for r in soup) or seeds[recipe.shipped]
    rows, specs = [], {}
    for alpha in trial["alphas"]:
        adapter = out / "adapter-raw"
        if alpha != 1.0:
            adapter = out / "search" / f"adapter-lines-{alpha}"
            apply_lines(out / "adapter-raw", adapter, alpha=alpha, overwrite=True)
        specs[alpha] = f"{recipe.model}+adapter={adapter}"
        row = {"trial": name, "seed": seed, "alpha": alpha, "chosen": ""}
        rows.append(row | score(specs[alpha], study["dev"], places, work / "results"))
    sts = {row["alpha"]: row[select["sts"]] for row in rows}
    base = study["base_row"][select["sts"]]
    alpha = dev_sts_slack_alpha(sts, base, 100 * select["slack"])  # points, as the rows
    chosen = next(row for row in rows if row["alpha"] == alpha)
    chosen["chosen"] = "yes"
    chosen.update(score(specs[alpha], study["heldout"], places, work / "results"))
    return rows


def columns(study: dict[str, Any]) -> list[str]:
    """trial, seed, alpha, chosen, the dev panel (dev_binding after its last binding entry),
    the held-out panel."""
    dev = [e.name for e in study["dev"]]
    dev.insert(max(dev.index(b) for b in study["select"]["binding"]) + 1, "dev_binding")
    return ["trial", "seed", "alpha", "chosen", *dev, *(e.name for e in study["heldout"])]


def run(names: list[str], study: dict[str, Any], work: Path, shared: Path) -> None:
    """The base row and each trial's rows → ``W/results.csv`` and ``W/results.md``."""
    from bindkit.support import atomic_write_text

    unknown = [n for n in names if n not in study["trials"]]
    if unknown or not names:
        raise BindkitError(f"run {' '.join(unknown)}: give trial names of the study, or all")
    places = {"{work}": str(work), "{shared}": str(shared)}
    model = study["base"].model
    base: dict[str, Any] = {"trial": "base", "seed": 0, "alpha": "", "chosen": "yes"}
    study["base_row"] = base | score(model, study["dev"], places, work / "results")
    rows = [row for name in names for row in run_trial(name, study, places, work)]
    # the base row's held-out template triplets: the first trial's (one split for every mix)
    test = {"{test}": str(work / "trials" / names[0] / "data" / "test-recipe.jsonl")}
    base = study["base_row"] | score(model, study["heldout"], places | test, work / "results")
    rows.insert(0, base)
    for row in rows:
        got = [row[k] for k in study["select"]["binding"]]
        row["dev_binding"] = round(sum(got) / len(got), 2)
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns(study), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(work / "results.csv", text.getvalue())
    atomic_write_text(work / "results.md", markdown(work / "results.csv") + "\n")


def markdown(path: Path) -> str:
    """results.csv as the markdown table of docs/experiments/ (the chosen α in bold)."""
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    shown = [c for c in rows[0] if c != "chosen"] if rows else []
    out = ["| " + " | ".join(c.replace("_", " ") for c in shown) + " |", "|---" * len(shown) + "|"]
    for row in rows:
        cells = [row[c] or "–" for c in shown]
        if row["chosen"] == "yes":
            cells[2] = f"**{cells[2]}**"
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("command", choices=("prepare", "run", "table"))
    parser.add_argument("trials", nargs="*", help="run: trial names of --study, or all")
    parser.add_argument("--work", default="recipe-work", type=Path)
    parser.add_argument("--shared", default="../shared/data", type=Path, help="sugarcrepe, SICK")
    parser.add_argument("--study", default=HERE / "trials.toml", type=Path)
    args = parser.parse_args(argv)
    try:
        if args.command == "prepare":
            from dev_panel import dev_panel  # beside this script

            dev_panel(args.shared, args.work / "dev")
        elif args.command == "table":
            print(markdown(args.work / "results.csv"))
        else:
            study = load_study(args.study)
            names = list(study["trials"]) if args.trials == ["all"] else args.trials
            run(names, study, args.work, args.shared)
    except BindkitError as exc:
        raise SystemExit(f"error: {exc}") from None


if __name__ == "__main__":
    main()
