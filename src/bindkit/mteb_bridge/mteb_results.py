"""bindkit result files in mteb's results layout (``bindkit export-results --format mteb``).

``OUT/results/<model name as path>/<revision>/<Task>.json`` (mteb's ``TaskResult`` as its
``to_disk`` writes it) plus ``model_meta.json`` and ``run_settings.jsonl`` per revision folder:
what ``mteb run --output-folder OUT`` writes and ``ResultCache(OUT)`` reads
(``load_results``, ``TaskResult.from_disk``). Task names are those of
:mod:`bindkit.mteb_bridge.mteb_tasks`; a model is ``bindkit/<spec>`` at its fingerprint (an
``mteb:`` model keeps mteb's name and revision), its metadata from
:mod:`bindkit.mteb_bridge.mteb_models`. Each entry holds the task's declared main score under
its own key (``mcq_accuracy``, ``map_at_1000``, ``triplet_accuracy``) and as ``main_score``:
the number seed 000 reports for it (MCQ accuracy; independent mAP and nested mAP, each its own
task: :data:`SUBSETS`), never a mean of the two. Every score bindkit computed for the subset
comes along, under mteb's name where mteb has the metric (the task's ``TaskMetadata.mteb_names``:
``accuracy``, ``map_at_1000``) and under bindkit's own beside it (per-N breakdowns, top-4
occupancy, containment, …): bindkit's numbers throughout (see ``mteb_tasks`` for where mteb's
pytrec_eval scores differ on ties; ``map_at_1000`` holds bindkit's mAP, which ranks the whole
gallery). Each file is checked with mteb's own ``TaskResult.validate_and_filter_scores`` against the
bindkit task it belongs to (built from the result, no data or registration needed): a file mteb
would filter or fill is never written; :func:`exported_tasks` gives those tasks to
``ResultCache(OUT).load_results(tasks=..., validate_and_filter=True)``.
Provenance goes where mteb has fields (``dataset_revision`` = the data's sha256,
``evaluation_time``, ``date``, library versions in ``run_settings.jsonl``; ``kg_co2_emissions``
is null: not measured), the rest into each subset's ``bindkit`` entry.
"""

from __future__ import annotations

import datetime
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError
from bindkit.mteb_bridge.mteb_models import model_name
from bindkit.mteb_bridge.mteb_tasks import KINDS, task_name
from bindkit.tasks.base import get_task

EXPORTABLE = ("saber", "triplets")
# per bindkit task: (mteb task kind, subset, the bindkit score that is its main score, the
# prefixes of the bindkit scores it carries; "": every score no other row of the task takes)
SUBSETS: dict[str, list[tuple[str, str, str, tuple[str, ...]]]] = {
    "saber": [
        ("SABERMCQ", "default", "mcq_accuracy", ("",)),
        (
            "SABERRetrievalIndependent",
            "independent",
            "map_independent",
            ("map_independent", "top4_occupancy"),
        ),
        ("SABERRetrievalNested", "nested", "map_nested", ("map_nested", "containment_")),
    ],
    "triplets": [("BindkitTriplets", "default", "triplet_accuracy", ("",))],
}


def subset_scores(task: str, scores: dict[str, Any], prefixes: tuple[str, ...]) -> dict[str, Any]:
    """The scores of ``scores`` (one bindkit result) that one mteb subset carries: those whose
    name starts with one of ``prefixes``; the prefix "" takes every score no other subset of
    the task claims."""
    claimed = [p for *_, own in SUBSETS[task] for p in own if p]
    return {
        name: value
        for name, value in scores.items()
        if any(name.startswith(p) for p in prefixes if p)
        or ("" in prefixes and not any(name.startswith(p) for p in claimed))
    }


def _finite(value: Any) -> bool:
    import math

    if isinstance(value, dict):
        return all(_finite(v) for v in value.values())
    return not isinstance(value, float) or math.isfinite(value)


def _model(record: dict[str, Any]) -> tuple[str, str]:
    model = record["model"]
    description = model.get("description") or {}
    if description.get("backend") == "mteb":
        return str(description["model"]), str(description["revision"])
    return model_name(str(model["spec"])), str(model["fingerprint"])


def export_problem(record: dict[str, Any]) -> str | None:
    """What keeps a (well-formed) result out of mteb's files, or None: the fields the export
    reads must be there with their types, and every score it writes a finite number (mteb's
    files are JSON, which has no NaN; a NaN main score would also rank nowhere)."""
    model, data = record["model"], record["data"]
    description = model.get("description")
    if description is not None and not isinstance(description, dict):
        return "field 'model.description' is not an object"
    if isinstance(description, dict) and description.get("backend") == "mteb":
        for key in ("model", "revision"):
            if not isinstance(description.get(key), str) or not description[key]:
                return f"field 'model.description.{key}' is missing"
    else:
        for key in ("spec", "fingerprint"):
            if not isinstance(model.get(key), str) or not model[key]:
                return f"field 'model.{key}' is missing"
    if not isinstance(data.get("sha256"), str) or not data["sha256"]:
        return "field 'data.sha256' is missing (mteb's dataset_revision)"
    seconds = record.get("seconds")
    if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int | float)):
        return f"field 'seconds' is {seconds!r}, not a number"
    for name, value in record["scores"].items():
        if not _finite(value):
            return f"score {name!r} is {value!r}; mteb's files hold finite numbers only"
    return None


def check_tasks(tasks: Sequence[str] | None) -> list[str] | None:
    """``tasks`` checked against :data:`EXPORTABLE` (None: all of them).

    Raises:
        BindkitError: an empty list, or a name that is not exportable (with the closest one).
    """
    import difflib

    if tasks is None:
        return None
    names = [t.strip() for t in tasks if t.strip()]
    if not names:
        raise BindkitError(
            f"--tasks {','.join(tasks)!r}: empty; give a comma list of {', '.join(EXPORTABLE)}, "
            "or leave --tasks out to export all"
        )
    for name in names:
        if name not in EXPORTABLE:
            close = difflib.get_close_matches(name, EXPORTABLE, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise BindkitError(
                f"--tasks {name}: not an exportable task ({hint}exportable: "
                f"{', '.join(EXPORTABLE)})"
            )
    return names


def _records(results: Path, tasks: Sequence[str] | None) -> list[tuple[Path, dict[str, Any]]]:
    from bindkit.results.store import NOT_A_RESULT, inspect_result, is_partial

    if results.is_file():
        raise BindkitError(
            f"{results}: a file; pass the --out directory of `bindkit eval` (a folder)"
        )
    if not results.is_dir():
        raise BindkitError(f"{results}: not found; pass the --out directory of `bindkit eval`")
    found = []
    for path in sorted(results.rglob("*.json")):
        record, problem = inspect_result(path)
        if problem == NOT_A_RESULT:  # some other JSON (a list, ...): not ours
            continue
        if record is not None and tasks is not None and record["task"] not in tasks:
            continue
        problem = problem or (export_problem(record) if record is not None else None)
        if problem is not None:  # exporting publishes: a broken result is never left out quietly
            raise BindkitError(
                f"{path}: cannot export it: {problem}; rerun `bindkit eval` for it, or move it "
                "out of the folder"
            )
        if record is None:
            continue
        if tasks is not None and record["task"] not in tasks:
            continue
        if record["task"] not in EXPORTABLE:
            raise BindkitError(
                f"{path}: task {record['task']} has no mteb task in bindkit (exportable: "
                f"{', '.join(EXPORTABLE)}); pass --tasks {','.join(EXPORTABLE)} to export those"
            )
        if is_partial(record):
            raise BindkitError(
                f"{path}: a partial result (scored without some images); rerun "
                "`bindkit eval` with every image present before exporting"
            )
        found.append((path, record))
    if not found:
        which = ", ".join(tasks) if tasks else ", ".join(EXPORTABLE)
        raise BindkitError(f"{results}: no complete results of {which} to export")
    return found


def _same_result(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Two results are one measurement: the same model, data (its sha256), pairing, options
    and scores, e.g. a folder and its `bindkit export` evaluated both."""
    keys = ("task", "pairing", "subset", "options", "scores")
    return (
        all(a.get(k) == b.get(k) for k in keys)
        and _model(a) == _model(b)
        and a["data"]["sha256"] == b["data"]["sha256"]
    )


def export_mteb(
    results: str | Path, out: str | Path, *, tasks: Sequence[str] | None = None
) -> list[Path]:
    """Write every saber/triplets result under ``results`` in mteb's results layout under
    ``out`` (``out/results/<model>/<revision>/<Task>.json``, what ``ResultCache(out)`` and
    ``mteb run --output-folder out`` use); returns the task files written. Refuses (one line)
    partial results, tasks mteb has no counterpart for (unless left out by ``tasks``) and two
    different results for one mteb file; two results that are the same measurement (the same
    data evaluated as a folder and as its export) are written once, the other path listed in
    the entry's ``bindkit.same_as``."""
    import mteb
    from mteb.results import TaskResult

    from bindkit import __version__
    from bindkit._io import atomic_write_text, check_not_input, make_dirs
    from bindkit._outputs import check_own_output
    from bindkit.mteb_bridge.mteb_models import model_meta

    results, out = Path(results), Path(out)
    tasks = check_tasks(tasks)
    check_not_input(out, [results])
    check_own_output(out, "mteb-results")  # not into a synth run, a finetune run, ...
    files: dict[Path, dict[str, Any]] = {}
    tasks_of: dict[Path, Any] = {}  # the mteb task of each file (metadata only)
    entries: dict[tuple[Path, str], tuple[Path, dict[str, Any], dict[str, Any]]] = {}
    metas: dict[Path, dict[str, Any]] = {}
    settings: dict[Path, dict[str, dict[str, Any]]] = {}
    for path, record in _records(results, tasks):
        name, revision = _model(record)
        data = record["data"]
        data_name = None if str(data.get("source", "")).startswith("builtin:") else data["name"]
        folder = out / "results" / name.replace("/", "__").replace(" ", "_") / revision
        modalities = sorted({"text", *(["image"] if "i" in record["pairing"] else [])})
        known = metas.setdefault(folder, {"record": record, "modalities": set()})
        known["modalities"] |= set(modalities)
        for kind, subset, main, prefixes in SUBSETS[record["task"]]:
            scores = record["scores"]
            if not isinstance(scores.get(main), int | float):
                continue  # e.g. a set without nested queries
            if record["task"] == "triplets":
                data_name = data["name"]
            task = task_name(kind, record["pairing"], data_name)
            target = folder / f"{task}.json"
            previous = entries.get((target, subset))
            if previous is not None:
                first_path, first_record, first_entry = previous
                if not _same_result(first_record, record):
                    raise BindkitError(
                        f"{path} and {first_path}: both are {task} ({subset}) of {name} with "
                        "different data or scores; export one (e.g. copy the results you want "
                        "into their own folder)"
                    )
                first_entry["bindkit"]["same_as"].append(str(path.relative_to(results)))
                continue
            value = float(scores[main])
            carried = subset_scores(record["task"], scores, prefixes)
            mteb_task = tasks_of.get(target) or task_for(kind, record["pairing"], data_name, data)
            names = get_task(record["task"]).metadata.mteb_names
            entry = {
                "hf_subset": subset,
                "languages": ["eng-Latn"],
                "main_score": value,
                mteb_task.metadata.main_score: value,  # under the name the mteb task declares
                **{names[k]: float(v) for k, v in carried.items() if k in names},
                **carried,
                "bindkit": {
                    "pairing": record["pairing"],
                    "version": record.get("bindkit_version"),
                    "result": str(path.relative_to(results)),
                    "same_as": [],
                    "model_spec": record["model"].get("spec"),
                    "model_fingerprint": record["model"].get("fingerprint"),
                    "data": {k: data.get(k) for k in ("name", "source", "sha256")},
                    "options": record.get("options"),
                    "counts": record.get("counts"),
                    "libraries": record.get("libraries"),
                    "exported_by": __version__,
                },
            }
            entries[(target, subset)] = (path, record, entry)
            tasks_of[target] = mteb_task
            current = files.setdefault(
                target,
                {
                    "dataset_revision": data["sha256"],
                    "task_name": task,
                    "mteb_version": mteb.__version__,
                    "scores": {"test": []},
                    "evaluation_time": 0.0,
                    "kg_co2_emissions": None,
                    "date": _date(record.get("created")),
                },
            )
            current["scores"]["test"].append(entry)
            current["evaluation_time"] += float(record.get("seconds") or 0.0)
            run = settings.setdefault(folder, {}).setdefault(
                task, {"task": task, "splits": ["test"], "subsets": []}
            )
            run["subsets"] = sorted({*run["subsets"], subset})
            run["version"] = _versions(record)
            run["encode_kwargs"] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for target, fields in files.items():
            make_dirs(target.parent)
            staged = Path(scratch) / target.name
            result = TaskResult.model_validate(fields)
            check_with_mteb(result, tasks_of[target], target)
            result.to_disk(staged)
            atomic_write_text(target, staged.read_text(encoding="utf-8"))
    for folder, known in metas.items():
        record = known["record"]
        meta = model_meta(
            str(record["model"].get("spec") or ""),
            str(record["model"].get("fingerprint") or ""),
            record["model"].get("description"),
            modalities=sorted(known["modalities"]),
        )
        text = json.dumps(meta.to_dict(), default=str, indent=4)
        atomic_write_text(folder / "model_meta.json", text)
        lines = [json.dumps(run) for run in settings.get(folder, {}).values()]
        atomic_write_text(folder / "run_settings.jsonl", "".join(f"{x}\n" for x in lines))
    return sorted(files)


def task_for(kind: str, pairing: str, data_name: str | None, data: dict[str, Any]) -> Any:
    """The bindkit mteb task of an exported file, from what the result records of its data
    (name, source, sha256): its metadata only, for mteb's checks (it loads no data)."""
    from bindkit.mteb_bridge.mteb_tasks import kind_task
    from bindkit.tasks.base import Dataset

    dataset = Dataset(str(data["name"]), str(data["sha256"]), str(data.get("source") or ""), None)
    return kind_task(kind, dataset, pairing, data_name)


def check_with_mteb(result: Any, task: Any, target: Path) -> None:
    """mteb's own ``validate_and_filter_scores`` against the file's task: every split and
    subset the task declares is there, nothing else is (mteb would drop it), the main score is
    a number. A failure is bindkit's bug, never the user's data: refused, not written."""
    import math

    checked = result.validate_and_filter_scores(task=task)
    if checked.scores != result.scores or any(
        not isinstance(s.get("main_score"), float) or not math.isfinite(s["main_score"])
        for s in checked.scores.get("test", [])
    ):
        raise BindkitError(
            f"{target}: mteb's validate_and_filter_scores changes this export (task "
            f"{task.metadata.name}, subsets {task.hf_subsets}); please report it"
        )


def exported_tasks(out: str | Path) -> list[Any]:
    """The bindkit mteb tasks of every file exported under ``out``, built from the files
    themselves (metadata only): what ``ResultCache(out).load_results(tasks=...,
    validate_and_filter=True)`` needs to check them, with nothing registered in mteb."""
    from mteb.results import TaskResult

    found: dict[str, Any] = {}
    for path in sorted(Path(out).glob("results/*/*/*.json")):
        if path.name == "model_meta.json":
            continue
        result = TaskResult.from_disk(path)
        entry = result.scores["test"][0]["bindkit"]
        kind = next(
            k for k in sorted(KINDS, key=len, reverse=True) if result.task_name.startswith(k)
        )
        data_name = str(entry["data"]["name"])
        name = data_name if result.task_name.endswith(f"-{data_name}") else None
        found.setdefault(result.task_name, task_for(kind, entry["pairing"], name, entry["data"]))
    return list(found.values())


def register_models(out: str | Path) -> list[str]:
    """Add the models of an export under ``out`` (their ``model_meta.json``) to mteb's model
    registry, for this process; the names added. mteb's benchmark tables
    (``BenchmarkResults.get_benchmark_result``, the leaderboard) keep only registered models,
    so a ``bindkit/<spec>`` row appears once this ran; mteb's own models are left as mteb has
    them. Drops mteb's cached registry views so a table built earlier in the process sees them."""
    import importlib

    from mteb.models.model_meta import ModelMeta

    registry = importlib.import_module("mteb.models.model_implementations").MODEL_REGISTRY
    added = []
    for path in sorted(Path(out).glob("results/*/*/model_meta.json")):
        try:
            fields = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise BindkitError(f"{path}: unreadable ({exc}); export the results again") from None
        name = fields.get("name") if isinstance(fields, dict) else None
        if not isinstance(name, str) or name in registry:
            continue
        fields = {k: v for k, v in fields.items() if k not in ("loader", "is_cross_encoder")}
        try:
            registry[name] = ModelMeta.model_validate(fields | {"loader": None})
        except ValueError as exc:  # pydantic's ValidationError
            problem = str(exc).splitlines()[0]
            raise BindkitError(f"{path}: not mteb model metadata ({problem})") from None
        added.append(name)
    table = importlib.import_module("mteb.benchmarks._create_table")
    for cached in ("_static_model_meta", "_meta_df_no_zs", "_meta_df_with_zs"):
        clear = getattr(getattr(table, cached, None), "cache_clear", None)
        if callable(clear):
            clear()
    return added


def _versions(record: dict[str, Any]) -> dict[str, Any]:
    """mteb's run_settings ``version`` block from the result's recorded library versions."""
    libraries = record.get("libraries")
    libraries = libraries if isinstance(libraries, dict) else {}
    names = ("mteb", "torch", "sentence-transformers", "flash-attn", "transformers")
    return {name: libraries.get(name) for name in names} | {
        "bindkit": record.get("bindkit_version")
    }


def _date(created: Any) -> datetime.datetime | None:
    if not isinstance(created, str):
        return None
    try:
        return datetime.datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.UTC
        )
    except ValueError:
        return None
