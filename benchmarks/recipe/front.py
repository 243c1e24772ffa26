"""The recipe search's front: SICK trial (general quality) against SugarCrepe++ swap_att (binding
on natural captions) for every point scored on the held-out panel, as docs/experiments/ shows::

    python benchmarks/recipe/front.py --results benchmarks/recipe/results.csv \\
        --demo demo/demo.json --out docs/images/recipe-front.png

The Pareto front (``bindkit.sweep.front``) over the search's points is drawn in red, the goal's
two lines (SICK trial ≥ 79.0, swap_att ≥ 55) dashed, the base model as a star and the demo's
rows (``DIR/demo.json``, optional) as labelled diamonds.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

X, Y = "sick_trial", "scpp_swap_att"
DEMO_KEYS = {X: "sts_spearman", Y: "scpp_swap_att"}


def main(argv: list[str] | None = None) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bindkit.support import atomic_write_bytes
    from bindkit.sweep.front import pareto_front

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", default="benchmarks/recipe/results.csv")
    parser.add_argument("--demo", default=None, help="a demo run's demo.json (its rows marked)")
    parser.add_argument("--out", default="docs/images/recipe-front.png")
    args = parser.parse_args(argv)
    with open(args.results, encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r[X] and r[Y]]
    base = next(r for r in rows if r["trial"] == "base")
    points = [r for r in rows if r["trial"] != "base"]
    xy = [(float(r[X]), float(r[Y])) for r in points]
    front = sorted(p for p, keep in zip(xy, pareto_front(xy), strict=True) if keep)
    figure, axes = plt.subplots(figsize=(7, 5))
    axes.scatter(*zip(*xy, strict=True), s=16, color="0.6", label=f"search points ({len(xy)})")
    axes.plot(*zip(*front, strict=True), "o-", color="tab:red", ms=4, label="Pareto front")
    axes.scatter([float(base[X])], [float(base[Y])], marker="*", s=180, color="black")
    axes.annotate(
        "base", (float(base[X]), float(base[Y])), xytext=(4, 4), textcoords="offset points"
    )
    if args.demo:
        table = json.loads(Path(args.demo).read_text(encoding="utf-8"))["table"]
        for name, row in table.items():
            if name == "base":
                continue
            point = (100 * row[DEMO_KEYS[X]], 100 * row[DEMO_KEYS[Y]])
            axes.scatter(*point, marker="D", s=50, color="tab:blue", zorder=3)
            axes.annotate(f"demo: {name}", point, xytext=(5, -10), textcoords="offset points")
    axes.axvline(79.0, ls="--", color="tab:green", lw=1, label="goal: SICK trial ≥ 79.0")
    axes.axhline(55.0, ls=":", color="tab:green", lw=1, label="goal: swap_att ≥ 55")
    axes.set_xlabel("SICK trial Spearman × 100 (general quality)")
    axes.set_ylabel("SugarCrepe++ TOT swap_att, % (binding on natural captions)")
    axes.set_title("issue 18 recipe search: held-out panel points")
    axes.legend(loc="lower left", fontsize=8)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    import io

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    atomic_write_bytes(out, buffer.getvalue())
    print(f"{out}: {len(xy)} points, {len(front)} on the front")


if __name__ == "__main__":
    main()
