"""``run_recipe``: a :class:`~bindkit.recipes.recipe.Recipe` end to end, resumable.

data (:func:`~bindkit.recipes.data.build_data`) → each ``[[runs]]`` entry trained
(:func:`bindkit.train.trainer.train_triplets` with ``reuse=True``: the trainer's run identity
— every option and the sha256 of every input file — is the one reuse rule; a killed run resumes
from its checkpoint) → soup (:func:`bindkit.adapters.soup.average_adapters`) → LiNeS
(:func:`bindkit.adapters.lines.apply_lines`, α fixed or chosen by the val-tolerance rule) →
panel (:func:`bindkit.recipes.panel.score_panel`) → ``OUT/recipe.json``, ``OUT/report.md``,
``OUT/adapter/`` (the shipped adapter, with the recipe's LiNeS α; at α 1 LiNeS is off and it
equals the raw update) and ``OUT/adapter-raw/`` (its raw update).

``OUT/recipe.json`` is written when a run starts (status ``running``) and when it ends
(``done``); it holds the recipe, the threads, the sha256 of every input the recipe names (panel
files, the NoOverlap vocabulary), every run's identity digest, the learning-rate rule, the
panel's scores and the versions. A rerun into the same ``OUT`` with anything changed is refused
with one line naming the first change, or (``overwrite``) goes ahead: each run whose identity
changed trains again, the others are reused.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bindkit._io import atomic_write_text, canonical_json, sha256_bytes, sha256_file
from bindkit._lock import directory_lock
from bindkit.errors import BindkitError
from bindkit.identity import content_digest, identity_change, model_weights, versions
from bindkit.recipes.data import RecipeData, build_data
from bindkit.recipes.panel import PanelEntry, panel_changes, score_panel
from bindkit.recipes.recipe import Recipe
from bindkit.recipes.scale import learning_rate

RECORD = "recipe.json"
SCHEMA = 1


@contextlib.contextmanager
def pinned(threads: int | None) -> Iterator[None]:
    """Fix what makes a CPU run vary, for the block: the thread count (the order of float sums
    in matmuls) and nondeterministic kernels (an error instead, should one be used). ``None``
    leaves torch as it is."""
    if threads is None:
        yield
        return
    import torch

    before = torch.get_num_threads(), torch.are_deterministic_algorithms_enabled()
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.set_num_threads(before[0])
        torch.use_deterministic_algorithms(before[1])


def input_paths(recipe: Recipe) -> dict[str, Path]:
    """The files and folders a recipe names (panel data, the NoOverlap vocabulary), by key."""
    paths = {
        f"panel.{entry.name}.data": Path(entry.data)
        for entry in recipe.panel
        if entry.data and not entry.data.startswith("{") and Path(entry.data).exists()
    }
    if recipe.data.exclude_vocab != "builtin":
        paths["data.exclude_vocab"] = Path(recipe.data.exclude_vocab)
    return paths


def recipe_identity(recipe: Recipe, threads: int | None) -> dict[str, Any]:
    """What a recipe run's result depends on beyond its runs' own identities
    (:mod:`bindkit.identity`): the recipe, the thread pin, the base model's weights digest and
    the content digest of every input the recipe names."""
    return {
        "recipe": recipe.to_dict(),
        "threads": threads,
        "model": model_weights(recipe.model),
        "inputs": {k: content_digest(p) for k, p in sorted(input_paths(recipe).items())},
    }


def recipe_change(recipe: Recipe, old: Any, new: dict[str, Any]) -> str | None:
    """The first difference between two recipe identities, in the recipe's words
    (``train.lr 0.001 then, 0.002 now``); None if equal."""

    def shown(key: str) -> str:
        if key.startswith("model."):
            return f"model {recipe.model} (its weights)"
        return key.removeprefix("recipe.").removeprefix("inputs.")

    return identity_change(old, new, shown=shown)


def run_recipe(
    recipe: Recipe,
    out: str | Path,
    *,
    overwrite: bool = False,
    progress: bool = True,
    threads: int | None = None,
) -> dict[str, Any]:
    """Run ``recipe`` into ``out``; returns the record written to ``OUT/recipe.json``.

    Args:
        threads: Pin torch to this many CPU threads with deterministic kernels (a CPU rerun
            then gives the same bytes); None leaves torch as it is (a GPU run).
        overwrite: Go ahead when ``OUT`` holds a run of this recipe made otherwise (runs whose
            identity changed train again); without it that is refused with one line.

    Raises:
        BindkitError: ``OUT`` overlaps an input, holds a run made otherwise, or a step fails.
    """
    from bindkit._io import check_can_create, check_not_input
    from bindkit.recipes.preflight import check_before_work

    out = Path(out)
    check_not_input(out, list(input_paths(recipe).values()))
    check_can_create(out)
    if threads is not None and not 1 <= threads <= 1024:
        raise BindkitError(f"--threads {threads}: must be from 1 to 1024")
    # before any data is generated: the model, every panel entry, the output folder
    check_before_work([recipe.model], recipe.panel, out, where=f"recipe {recipe.name}")
    with directory_lock(out, "bindkit finetune"), pinned(threads):
        return _Runner(recipe, out, overwrite, progress, threads).run()


class _Runner:
    def __init__(
        self, recipe: Recipe, out: Path, overwrite: bool, progress: bool, threads: int | None
    ) -> None:
        self.recipe, self.out, self.overwrite = recipe, out, overwrite
        self.progress, self.threads = progress, threads
        self.changes: dict[str, dict[str, Any]] = {}  # row → panel name → change vs base

    def say(self, text: str) -> None:
        if self.progress:
            print(text, file=sys.stderr, flush=True)

    def run(self) -> dict[str, Any]:
        started = time.perf_counter()
        recipe = self.recipe
        if recipe.lines_rule == "wang-tradeoff" and recipe.train.get("sts") is None:
            raise BindkitError(
                "lines.rule wang-tradeoff: needs a control set, the STS file of train.sts "
                "(`bindkit fetch sts`, then --set train.sts=FILE)"
            )
        identity = recipe_identity(recipe, self.threads)
        self.check_earlier(identity)
        self.note_versions()
        record: dict[str, Any] = {"schema": SCHEMA, "status": "running", "identity": identity}
        self.write(record)
        data = build_data(recipe, self.out / "data", progress=self.progress)
        self.say(f"data: {data.counts} triplets, preservation sentences {data.sentences}")
        lr = learning_rate(recipe, self.out)
        saber = None
        if recipe.data.saber_per_n is not None:
            from bindkit.saber.build import generate_saber

            saber = self.out / "saber"
            generate_saber(saber, per_n=recipe.data.saber_per_n, overwrite=True)
        runs = {run.name: self.train(run, data, lr["lr"]) for run in recipe.runs}
        if recipe.lines_rule == "wang-tradeoff":
            runs = {name: self.wang_tradeoff(name, run) for name, run in runs.items()}
        alphas = {name: run["lines"]["alpha"] for name, run in runs.items() if run["lines"]}
        if recipe.soup is not None:
            alphas[recipe.soup.name] = self.soup(data)
        shipped = self.out / "runs" / recipe.shipped
        self.publish(shipped / "adapter-lines", self.out / "adapter")
        self.publish(shipped / "adapter-raw", self.out / "adapter-raw")
        table = self.panel(data, saber, alphas)
        record |= {
            "status": "done",
            "data": {"counts": data.counts, "sentences": data.sentences, "files": self.files(data)},
            "learning_rate": lr,
            "runs": {
                name: {
                    "identity": sha256_bytes(canonical_json(run["identity"]).encode()),
                    "optimizer_steps": run["optimizer_steps"],
                    "train_seconds": run["train_seconds"],
                    "lines": run["lines"],
                }
                for name, run in runs.items()
            },
            "lines_alpha": alphas,
            "shipped": recipe.shipped,
            "adapter": {
                p.name: sha256_file(p)
                for p in sorted((self.out / "adapter").glob("*"))
                if p.is_file()
            },
            "table": table,
            "changes": self.changes,
            "seconds": round(time.perf_counter() - started, 1),
            "versions": versions(),
        }
        self.write(record)
        atomic_write_text(self.out / "report.md", render_report(recipe, record))
        self.warn_at_chance(table)
        return record

    def warn_at_chance(self, table: dict[str, dict[str, float]]) -> None:
        """One line on stderr (also under -q) when the shipped row scores at or below chance."""
        from bindkit.recipes.chance import at_chance, chance_warning

        shipped = self.recipe.shipped
        row = next((r for r in (f"{shipped} lines", f"{shipped} raw") if r in table), None)
        if row is None:  # the shipped run is not scored (select.score leaves it out)
            return
        line = chance_warning(self.recipe.name, row, at_chance(self.recipe.panel, table[row]))
        if line is not None:
            print(line, file=sys.stderr, flush=True)

    def write(self, record: dict[str, Any]) -> None:
        atomic_write_text(self.out / RECORD, json.dumps(record, indent=2) + "\n")

    def check_earlier(self, identity: dict[str, Any]) -> None:
        path = self.out / RECORD
        if not path.is_file():
            return
        try:
            earlier = json.loads(path.read_text(encoding="utf-8")).get("identity")
        except (OSError, ValueError, AttributeError):
            earlier = None
        change = recipe_change(self.recipe, earlier, identity)
        if change is not None and not self.overwrite:
            raise BindkitError(
                f"{self.out}: holds a run of a recipe made otherwise ({change}); pass "
                "--overwrite to run it again (changed runs retrain), or another --out"
            )
        if change is not None and _synth_options(earlier) != _synth_options(identity):
            # other synth options: generation would resume the old examples; start it over
            shutil.rmtree(self.out / "data", ignore_errors=True)

    def note_versions(self) -> None:
        """One line when the libraries that move numbers differ from the pinned install, and
        one when they differ from the versions a finished run in ``OUT`` recorded."""
        from bindkit._environment import note_version_drift

        note_version_drift()
        try:
            earlier = json.loads((self.out / RECORD).read_text(encoding="utf-8")).get("versions")
        except (OSError, ValueError, AttributeError):
            earlier = None
        if isinstance(earlier, dict):
            note_version_drift({str(k): str(v) for k, v in earlier.items()})

    def files(self, data: RecipeData) -> dict[str, str]:
        paths = [data.train, data.val, data.test, *data.preserve.values()]
        return {p.name: sha256_file(p) for p in paths}

    def train(self, run: Any, data: RecipeData, lr: float) -> dict[str, Any]:
        from bindkit.train.config import TrainConfig
        from bindkit.train.trainer import train_triplets

        recipe = self.recipe
        config = TrainConfig(
            **{**recipe.train, "lr": lr},
            model=recipe.model,
            train=str(data.train),
            val=str(data.val),
            out=str(self.out / "runs" / run.name),
            lines=True,
            lines_alpha=recipe.lines_alpha if recipe.lines_rule == "fixed" else None,
            preserve=str(data.preserve[run.preservation]) if run.preserved else None,
            seed=run.seed,
            progress=self.progress,
            overwrite=self.overwrite,
        )
        self.say(f"run `{run.name}`: seed {run.seed}, preservation {run.preservation}")
        from bindkit.train.memory import TrainingOutOfMemoryError, out_of_memory_advice

        try:
            # a finished run of this identity is reused, a killed one resumes from its checkpoint
            return train_triplets(config, reuse=True)
        except TrainingOutOfMemoryError as exc:
            # training has no batch back-off (the batch is the loss's negatives); say what to set
            raise BindkitError(
                out_of_memory_advice(f"run {run.name}", exc.config, prefix="train.")
            ) from None

    def wang_tradeoff(self, name: str, run: dict[str, Any]) -> dict[str, Any]:
        """Re-choose the run's LiNeS α by Wang et al.'s trade-off over the trainer's own sweep
        (val triplets = target, STS = control) and rewrite its ``adapter-lines`` at that α."""
        from bindkit.adapters.lines import apply_lines
        from bindkit.recipes.select import WANG_TARGET_WEIGHT, wang_tradeoff_alpha

        points = {
            float(p["alpha"]): (float(p["val_triplet_accuracy"]), float(p["sts_spearman"]))
            for p in run["lines"]["sweep"]
        }
        scores = run["scores"]
        alpha = wang_tradeoff_alpha(
            points, scores["raw"]["val_triplet_accuracy"], scores["base"]["sts_spearman"]
        )
        folder = self.out / "runs" / name
        apply_lines(folder / "adapter-raw", folder / "adapter-lines", alpha=alpha, overwrite=True)
        self.say(f"run `{name}`: LiNeS alpha {alpha:g} by wang-tradeoff")
        lines = {
            **run["lines"],
            "alpha": alpha,
            "beta": 1.0 - alpha,
            "rule": "wang-tradeoff",
            "target_weight": WANG_TARGET_WEIGHT,
            "trainer_alpha": run["lines"]["alpha"],
        }
        return {**run, "lines": lines}

    def soup(self, data: RecipeData) -> float:
        """Average the soup's runs (raw adapters) and apply LiNeS; returns its α."""
        from bindkit.adapters.lines import apply_lines
        from bindkit.adapters.soup import average_adapters

        soup = self.recipe.soup
        assert soup is not None
        folder = self.out / "runs" / soup.name
        sources = [self.out / "runs" / n / "adapter-raw" for n in soup.runs]
        average_adapters(sources, folder / "adapter-raw", soup.weights, overwrite=True)
        if self.recipe.lines_rule == "fixed":
            alpha = self.recipe.lines_alpha
            assert alpha is not None
        else:
            from bindkit.recipes.select import val_tolerance_alpha

            tolerance = float(self.recipe.train.get("lines_tolerance", _default_tolerance()))
            alpha = val_tolerance_alpha(
                self.recipe.model, folder / "adapter-raw", data.val, tolerance, folder
            )
        if (folder / "adapter-lines").exists():
            shutil.rmtree(folder / "adapter-lines")
        if alpha == 1.0:  # the whole update: the same files
            shutil.copytree(folder / "adapter-raw", folder / "adapter-lines")
        else:
            apply_lines(folder / "adapter-raw", folder / "adapter-lines", alpha=alpha)
        return alpha

    def publish(self, source: Path, target: Path) -> None:
        """Copy an adapter folder into place whole (staging, then one rename)."""
        from bindkit._staging import new_staging, swap_into_place

        staging = new_staging(target, "recipe")
        shutil.copytree(source, staging, dirs_exist_ok=True)
        swap_into_place(staging, target, replace=True)

    def panel(
        self, data: RecipeData, saber: Path | None, alphas: dict[str, float]
    ) -> dict[str, dict[str, float]]:
        recipe = self.recipe
        places = {"{val}": str(data.val), "{test}": str(data.test)}
        places["{saber}"] = str(saber) if saber is not None else None  # type: ignore[assignment]
        panel = tuple(
            replace(e, data=places[e.data]) if e.data in places else e for e in recipe.panel
        )
        models = {"base": recipe.model}
        for name in recipe.panel_rows:
            folder = self.out / "runs" / name
            models[f"{name} raw"] = f"{recipe.model}+adapter={folder / 'adapter-raw'}"
            if alphas.get(name, 1.0) != 1.0 or recipe.lines_rule != "fixed":
                models[f"{name} lines"] = f"{recipe.model}+adapter={folder / 'adapter-lines'}"
        table = {}
        for label, spec in models.items():
            table[label] = score_panel(spec, panel, self.out / "results", cache=False)
            shown = ", ".join(f"{k} {100 * v:.2f}" for k, v in table[label].items())
            self.say(f"{label}: {shown}")
        self.changes = {  # each row against base on the same items, with a paired interval
            label: {
                name: None if c is None else asdict(c)
                for name, c in panel_changes(
                    recipe.model, spec, panel, self.out / "results", cache=False
                ).items()
            }
            for label, spec in models.items()
            if label != "base"
        }
        return table


def _synth_options(identity: Any) -> Any:
    """What the generated examples and their split set depend on."""
    try:
        data = identity["recipe"]["data"]
        return [data.get(k) for k in ("examples", "seed", "exclude_vocab")]
    except (KeyError, TypeError, AttributeError):
        return None


def _default_tolerance() -> float:
    from bindkit.train.config import TrainConfig

    return float(TrainConfig.__dataclass_fields__["lines_tolerance"].default)  # type: ignore[arg-type]


def change_table(columns: list[str], changes: dict[str, dict[str, Any]]) -> list[str]:
    """Markdown lines: each row's change vs base in points with its 95 % paired bootstrap
    interval (``+68.1 [+65.2, +71.0]``); empty without changes."""
    if not changes:
        return []
    lines = [
        "",
        "Change vs base in points, with its 95 % paired bootstrap interval (the same items "
        "resampled for both models, 10,000 draws):",
        "",
        "| model | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for label, row in changes.items():
        lines.append(f"| {label} | " + " | ".join(change_cell(row.get(c)) for c in columns) + " |")
    return lines


def change_cell(change: dict[str, Any] | None) -> str:
    """A change in points with its interval, ``+68.10 [+65.20, +71.00]``; ``–`` for none."""
    if change is None:
        return "–"
    d, lo, hi = (100 * change[k] for k in ("delta", "low", "high"))
    return f"{d:+.2f} [{lo:+.2f}, {hi:+.2f}]"


def render_report(recipe: Recipe, record: dict[str, Any]) -> str:
    """``OUT/report.md``: the panel table and what the recipe did."""
    from bindkit.adapters.lines import lines_state

    table: dict[str, dict[str, float]] = record["table"]
    columns = [e.name for e in recipe.panel]
    lines = [
        f"# bindkit finetune: recipe `{recipe.name}` on `{recipe.model}`",
        "",
        "| model | " + " | ".join(columns) + " |",
        "|---" * (len(columns) + 1) + "|",
    ]
    for label, row in table.items():
        lines.append(f"| {label} | " + " | ".join(f"{100 * row[c]:.2f}" for c in columns) + " |")
    lines += change_table(columns, record.get("changes") or {})
    lr = record["learning_rate"]
    lines += [
        "",
        f"- data: {recipe.data.examples} template examples (seed {recipe.data.seed}), mix "
        f"`{recipe.data.mix}`: {record['data']['counts']}; preservation sentences "
        f"{record['data']['sentences']}.",
        f"- learning rate {lr['lr']:g} ({lr['rule']}).",
    ]
    for name, run in record["runs"].items():
        lines.append(
            f"- run `{name}`: {run['optimizer_steps']} steps, {run['train_seconds']} s, "
            f"identity {run['identity'][:12]}."
        )
    if recipe.soup is not None:
        lines.append(
            f"- soup `{recipe.soup.name}`: {', '.join(recipe.soup.runs)} averaged in weight "
            "space (`bindkit soup`)."
        )
    lines.append(
        f"- LiNeS ({recipe.lines_rule}): "
        + ", ".join(f"{k} {lines_state(v)}" for k, v in record["lines_alpha"].items())
        + "."
    )
    shipped = record["lines_alpha"].get(recipe.shipped, 1.0)
    lines.append(
        f"- shipped: `{recipe.shipped}` as `adapter/` ({lines_state(shipped)}"
        + (": the same bytes as the raw update" if shipped == 1.0 else "")
        + f") and `adapter-raw/`; wall time {record['seconds'] / 60:.1f} min."
    )
    return "\n".join(lines) + "\n"


__all__ = ["PanelEntry", "pinned", "render_report", "run_recipe"]
