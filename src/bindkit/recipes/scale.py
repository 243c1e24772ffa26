"""The learning rate a recipe trains with: the recipe's ``train.lr``, else a rule by model size.

The rule (recorded in ``OUT/recipe.json``): models under :data:`LARGE` parameters train at
:data:`SMALL_LR` = 2e-3, the rate issue 18's search found for the 22M-parameter all-MiniLM-L6-v2
(the paper's 5e-5 barely moves it). **Its scope is all-MiniLM-L6-v2**: it was measured on no
other small model, and the one other small model searched since, ``builtin:tiny-vlm`` (0.65M
parameters), needed 5e-4 or less (docs/benchmarks.md, the tiny-vlm base search) — give another
small model its own ``train.lr``. Models of :data:`LARGE` parameters and more (2B+ multimodal LLM
embedders) train at :data:`LARGE_LR` = 5e-5, seed 000's rate for them (Appendix: "a constant
learning rate of 5e-5"). The number of steps is the recipe's ``train.max_steps`` for every
size. A recipe that sets ``train.lr`` overrides the rule.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SMALL_LR = 2e-3
LARGE_LR = 5e-5
LARGE = 1_000_000_000
SIZE_FILE = "model-size.json"


def scaled_lr(parameters: int) -> float:
    """The rule's learning rate for a model of ``parameters`` weights.

    Example:
        >>> scaled_lr(22_700_000), scaled_lr(2_100_000_000)
        (0.002, 5e-05)
    """
    return SMALL_LR if parameters < LARGE else LARGE_LR


def model_parameters(spec: str, out: Path) -> int:
    """The parameter count of ``spec``'s trainable module, cached in ``OUT/model-size.json``
    (loading a 2B model twice per rerun would cost more than the count)."""
    from bindkit._io import atomic_write_text
    from bindkit.identity import as_stored, model_weights

    path = out / SIZE_FILE
    weights = as_stored(model_weights(spec))  # the spec's folder edited in place: count again
    try:
        cached = json.loads(path.read_text(encoding="utf-8"))
        if (
            cached.get("model") == spec
            and cached.get("weights") == weights
            and isinstance(cached.get("parameters"), int)
        ):
            return int(cached["parameters"])
    except (OSError, ValueError, AttributeError):
        pass
    import gc

    from bindkit.train.model import load_trainable

    embedder = load_trainable(spec, None)
    count = int(sum(p.numel() for p in embedder.module.parameters()))
    del embedder
    gc.collect()
    record = {"model": spec, "weights": weights, "parameters": count}
    atomic_write_text(path, json.dumps(record) + "\n")
    return count


def learning_rate(recipe: Any, out: Path) -> dict[str, Any]:
    """``{"lr", "rule", "parameters"}``: the recipe's lr, or the size rule's."""
    if recipe.train.get("lr") is not None:
        return {
            "lr": float(recipe.train["lr"]),
            "rule": "train.lr of the recipe",
            "parameters": None,
        }
    parameters = model_parameters(recipe.model, out)
    return {
        "lr": scaled_lr(parameters),
        "rule": f"size rule: {parameters:,} parameters, "
        + (
            f"under {LARGE:,}: {SMALL_LR:g}, measured on all-MiniLM-L6-v2 only"
            if parameters < LARGE
            else f"{LARGE:,}+: {LARGE_LR:g}, seed 000's rate"
        ),
        "parameters": parameters,
    }
