"""The model card written next to each adapter: what produced it and what it scores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text

SCORE_NAMES = {"val_triplet_accuracy": "val triplet accuracy", "sts_spearman": "STS Spearman"}


def render_card(record: dict[str, Any], variant: str | None) -> str:
    """Markdown: base model, data, scores before/after, LiNeS factors and the full config."""
    base = record["base_model"]
    name = base.get("model") or base.get("path") or record["config"]["model"]
    examples = ", ".join(f"{n} {kind}" for kind, n in record["examples"].items())
    title = {"raw": "raw LoRA update", "lines": "LiNeS-scaled LoRA update", None: "training run"}
    lines = [
        f"# bindkit binding adapter: {name} ({title[variant]})",
        "",
        f"- base model: `{record['config']['model']}` (fingerprint {record['base_fingerprint']})",
        f"- bindkit {record['version']}; {record['objective']}: {examples}; "
        f"{record['optimizer_steps']} optimizer steps on {record['world']} process(es), "
        f"{record['train_seconds']} s",
    ]
    for key, data in record["data"].items():
        lines.append(f"- {key}: `{data['path']}` (sha256 {data['sha256'][:16]}…)")
    if record["lines"]:
        lines_record = record["lines"]
        lines.append(
            f"- LiNeS: alpha {lines_record['alpha']}, beta {lines_record['beta']:.2f} over "
            f"{lines_record['num_layers']} layers"
        )
    scores = record["scores"]
    columns = [c for c in ("base", "raw", "lines") if c in scores]
    names = sorted({k for c in columns for k in scores[c]})
    if names:
        lines += ["", "| score | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
        for key in names:
            values = [scores[c].get(key) for c in columns]
            cells = ["" if v is None else f"{100 * v:.2f}" for v in values]
            lines.append(f"| {SCORE_NAMES.get(key, key)} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Load it with `bindkit eval --model '" + record["config"]["model"] + "+adapter=DIR'` or "
        "`peft.PeftModel.from_pretrained(base, DIR)`.",
        "",
        "## Config",
        "",
        "```json",
        json.dumps(record["config"], indent=2),
        "```",
        "",
    ]
    return "\n".join(lines)


def write_card(folder: Path, record: dict[str, Any], variant: str | None) -> None:
    """Write ``README.md`` (an adapter's card) or ``model_card.md`` (the run's) into ``folder``."""
    name = "model_card.md" if variant is None else "README.md"
    atomic_write_text(folder / name, render_card(record, variant))
