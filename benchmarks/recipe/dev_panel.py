"""The dev panel of issue 18's recipe search (``search.py prepare``; docs/experiments/).

SugarCrepe (text side) as triplets: query = another COCO caption of the same image (from another
SugarCrepe subset), positive = the item's caption, negative = its hard negative; swap_att,
replace_att, replace_rel, at most DEV_CAP each. Dev STS: SICK_DEV shuffled pairs of SICK_train.
Nothing of the held-out panel is here.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

DEV_SUBSETS = ("swap_att", "replace_att", "replace_rel")
DEV_CAP = 400  # dev triplets per subset at most (swap_att has fewer)
SICK_DEV = 1000  # SICK_train pairs of the dev panel


def dev_panel(shared: Path, out: Path, seed: int = 0) -> None:
    """The dev panel files: SugarCrepe text triplets (query: another caption of the same COCO
    image) and ``SICK_DEV`` shuffled SICK_train pairs."""
    from bindkit.support import atomic_write_text
    from bindkit.tasks.pairs.sugarcrepe import read_sugarcrepe

    items, _ = read_sugarcrepe(shared / "sugarcrepe")
    captions: dict[str, list[str]] = {}
    for rows in items.values():
        for row in rows:
            known = captions.setdefault(row["filename"], [])
            if row["caption"] not in known:
                known.append(row["caption"])
    out.mkdir(parents=True, exist_ok=True)
    for subset in DEV_SUBSETS:
        triplets = [
            {"query": others[0], "positive": row["caption"], "negative": row["negative_caption"]}
            for row in items[subset]
            if (others := [c for c in captions[row["filename"]] if c != row["caption"]])
        ]
        random.Random(f"{seed}/{subset}").shuffle(triplets)
        text = "".join(json.dumps(t) + "\n" for t in triplets[:DEV_CAP])
        atomic_write_text(out / f"sc_{subset}.jsonl", text)
    head, *body = (shared / "sick2014" / "SICK_train.txt").read_text("utf-8").splitlines()
    random.Random(f"{seed}/sick").shuffle(body)
    atomic_write_text(out / "sick_train_1000.txt", "\n".join([head, *body[:SICK_DEV]]) + "\n")
