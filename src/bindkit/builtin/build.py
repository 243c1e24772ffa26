"""The frame both shipped models are built in: options, loss, schedule, scores, files.

``tiny-clip`` and ``tiny-vlm`` differ in model, data and loss terms; what they share is here
once: the command line generated from a frozen config dataclass (one ``--flag`` per field), the
multi-positive InfoNCE, the warm-up + cosine learning-rate factor, the SABER scores of the
result through :func:`bindkit.evaluation.evaluate`, and the ``training.json`` + ``README.md``
written next to the weights.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError

#: the scores a tiny-clip training record keeps per pairing
SCORES = ("mcq_accuracy", "mcq_accuracy_by_n", "map_independent", "map_nested")


def option(name: str) -> str:
    """A config field's ``--flag``: ``per_n`` → ``--per-n``."""
    return "--" + name.replace("_", "-")


def parser(description: str, config_type: type) -> argparse.ArgumentParser:
    """``--out``, ``--eval``, ``-q`` and one ``--flag`` per field of ``config_type`` (its
    default as the flag's default; a tuple field takes as many values as its default has)."""
    result = argparse.ArgumentParser(description=description)
    result.add_argument("--out", type=Path, required=True, help="checkpoint folder to write")
    result.add_argument(
        "--eval", type=Path, help="rendered SABER directory to score the result on (optional)"
    )
    result.add_argument("-q", "--quiet", action="store_true")
    for f in fields(config_type):
        default = f.default
        if isinstance(default, tuple):
            result.add_argument(
                option(f.name), type=type(default[0]), nargs=len(default), default=list(default)
            )
        else:
            result.add_argument(option(f.name), type=type(default), default=default)
    return result


def config_from_args(args: argparse.Namespace, config_type: type) -> Any:
    """The config the parsed flags name (list values back to the field's tuple)."""
    values = {f.name: getattr(args, f.name) for f in fields(config_type)}
    return config_type(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def multi_positive_nce(logits: Any, positives: Any) -> Any:
    """Cross-entropy of each row against the uniform distribution over its positives; rows
    without a positive are left out. Pure: tested on hand-computed cases."""
    import torch

    has = positives.any(dim=1)
    target = positives.float() / positives.float().sum(dim=1, keepdim=True).clamp(min=1.0)
    log_p = torch.log_softmax(logits, dim=1)
    per_row = -(target * log_p.masked_fill(~positives, 0.0)).sum(dim=1)
    if not bool(has.any()):
        return torch.zeros((), dtype=logits.dtype, device=logits.device)
    return per_row[has].mean()


def optimizer_step(
    loss: Any,
    optimizer: Any,
    scheduler: Any,
    losses: list[float],
    *,
    step: int,
    steps: int,
    every: int,
    scale: Any,
    started: float,
    progress: bool,
) -> None:
    """One step of a builder's loop: backward, the optimizer and schedule step, the loss kept in
    ``losses``; every ``every`` steps (and at the last) a line with the mean recent loss and the
    temperature ``1 / scale``."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()
    scheduler.step()
    losses.append(float(loss.detach()))
    if progress and ((step + 1) % every == 0 or step + 1 == steps):
        recent = sum(losses[-every:]) / len(losses[-every:])
        print(
            f"step {step + 1}/{steps} loss {recent:.3f} "
            f"T {1 / float(scale.detach()):.4f} ({time.perf_counter() - started:.0f} s)",
            file=sys.stderr,
        )


def warmup_cosine(step: int, warmup: int, steps: int) -> float:
    """The learning-rate factor at ``step``: linear warm-up over ``warmup`` steps, then cosine
    decay to 0 at ``steps``.

    Example:
        >>> [round(warmup_cosine(s, 2, 6), 3) for s in range(8)]  # 0 after the last step
        [0.5, 1.0, 1.0, 0.854, 0.5, 0.146, 0.0, 0.0]
    """
    if step < warmup:
        return (step + 1) / warmup
    done = (step - warmup) / max(1, steps - warmup)
    return 0.5 * (1 + math.cos(math.pi * min(done, 1.0)))


def evaluate_checkpoint(
    out: Path,
    saber_dir: Path,
    results: Path,
    model: str = "tiny-clip",
    scores: Sequence[str] = SCORES,
) -> dict[str, Any]:
    """``scores`` (MCQ accuracy overall and by N, mAP) of the checkpoint in ``out`` of built-in
    ``model`` on a rendered SABER directory, in all four pairings, through bindkit's own
    evaluation."""
    from bindkit.evaluation import evaluate

    records = evaluate(
        [f"builtin:{model}+weights={out}"],
        data=saber_dir,
        out=results,
        overwrite="always",
        cache=False,
        report=False,
        verbose=False,
    )
    return {r["pairing"]: {key: r["scores"][key] for key in scores} for r in records}


def evaluate_bow(saber_dir: Path, results: Path) -> dict[str, Any]:
    """The bag-of-words baseline on the same set (text→text only: it embeds no images)."""
    from bindkit.evaluation import evaluate

    records = evaluate(
        ["bow"], data=saber_dir, out=results, cache=False, report=False, verbose=False
    )
    return {
        r["pairing"]: {k: r["scores"][k] for k in ("mcq_accuracy", "mcq_accuracy_by_n")}
        for r in records
    }


def main(
    argv: Sequence[str] | None,
    *,
    description: str,
    config_type: type,
    train: Callable[..., dict[str, Any]],
    card: Callable[[dict[str, Any]], str],
    model: str,
    scores: Sequence[str] = SCORES,
    check_paths: Callable[[Path, Path | None], None] | None = None,
    count_eval_mcqs: bool = False,
) -> int:
    """One build command: parse, check the options (and paths) before any work, train into
    ``--out``, score on ``--eval`` (with the bow baseline), write ``training.json`` and the
    card; a :class:`BindkitError` is one ``error:`` line and exit status 2."""
    args = parser(description, config_type).parse_args(argv)
    config = config_from_args(args, config_type)
    try:
        config.check()
        if check_paths is not None:
            check_paths(args.out, args.eval)
        summary = train(config, args.out, progress=not args.quiet)
        if args.eval is not None:
            with tempfile.TemporaryDirectory() as results:
                summary["eval"] = evaluate_checkpoint(
                    args.out, args.eval, Path(results) / "a", model=model, scores=scores
                )
                summary["bow"] = evaluate_bow(args.eval, Path(results) / "b")
            summary["eval_data"] = args.eval.name
            if count_eval_mcqs:
                from bindkit.saber.io import read_saber

                summary["eval_mcqs"] = len(read_saber(args.eval).mcqs)
    except BindkitError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    from bindkit._io import atomic_write_text

    atomic_write_text(args.out / "training.json", json.dumps(summary, indent=1) + "\n")
    atomic_write_text(args.out / "README.md", card(summary))
    if not args.quiet:
        print(json.dumps({k: v for k, v in summary.items() if k != "config"}, indent=1))
    return 0
