"""Carry out a task's fetch plan into ``--to`` or ``$BINDKIT_DATA/<folder>``.

Each finished part is recorded in ``FOLDER/.bindkit-fetch.json`` (what was fetched from where,
its sha256), so a rerun skips it and resumes the part that was cut off. Archives are downloaded
into ``FOLDER/.downloads/``, extracted, and removed.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError
from bindkit.fetch.sources import SOURCES, Hub, Part, Plan, Url

STATE = ".bindkit-fetch.json"
DOWNLOADS = ".downloads"


def plan_for(task: str) -> Plan:
    """The fetch plan of ``task``; an unknown name gets a suggestion and the list."""
    if task not in SOURCES:
        close = difflib.get_close_matches(task, list(SOURCES), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise BindkitError(
            f"fetch {task!r}: no download plan{hint}; fetchable: {', '.join(sorted(SOURCES))}"
        )
    return SOURCES[task]


def target_folder(plan: Plan, to: str | Path | None) -> Path:
    """``--to``, else ``$BINDKIT_DATA/<folder>`` (the task's ``data_dir``, else the plan's)."""
    from bindkit.tasks.base import DATA_ENV, task_classes

    if to is not None:
        return Path(to)
    root = os.environ.get(DATA_ENV)
    if not root:
        raise BindkitError(f"fetch {plan.task}: pass --to DIR or set {DATA_ENV}=ROOT")
    meta = task_classes()[plan.task].metadata if plan.task in task_classes() else None
    folder = plan.folder or (meta.data_dir if meta is not None else None) or plan.task
    return Path(root) / folder


def part_key(part: Part) -> str:
    if isinstance(part, Url):
        return part.url
    return f"hf:{part.repo_id}:{','.join(part.allow)}"


def fetch(
    task: str | Plan,
    to: str | Path | None = None,
    *,
    images: bool = True,
    log: Callable[[str], None] | None = print,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Download a benchmark's files into the layout its task reads.

    Args:
        task: A task name (see :data:`~bindkit.fetch.sources.SOURCES`) or a plan.
        to: The folder (default: ``$BINDKIT_DATA/<folder>``).
        images: Also fetch the parts marked as images (large archives).
        log: Where the licence and each step go (None: silent).

    Returns:
        The record written to ``FOLDER/.bindkit-fetch.json``.
    """
    from bindkit._io import make_dirs, removed_if_failed_empty

    plan = task if isinstance(task, Plan) else plan_for(task)
    folder = target_folder(plan, to)
    say = log or (lambda message: None)
    say(f"{plan.task}: licence: {plan.license}")
    with removed_if_failed_empty(folder):  # a failure leaves no empty folder it made
        make_dirs(folder)
        return _fetch_parts(plan, folder, images, say, progress)


def _fetch_parts(
    plan: Plan,
    folder: Path,
    images: bool,
    say: Callable[[str], None],
    progress: bool | None,
) -> dict[str, Any]:
    from bindkit import __version__
    from bindkit._io import atomic_write_text

    state_path = folder / STATE
    state = _read_state(state_path)
    done: dict[str, Any] = state.setdefault("parts", {})
    skipped = []
    for part in plan.parts:
        key = part_key(part)
        if part.images and not images:
            skipped.append(key)
            continue
        if key in done:
            changed = _changed_on_disk(done[key], folder)
            if changed is None:
                say(f"  have {key}")
                continue
            say(f"  {changed}: fetching {key} again")
            _remove_recorded_file(done[key], folder)  # else the download would keep it
        say(f"  fetching {key}")
        entry = (
            _fetch_url(part, folder, progress)
            if isinstance(part, Url)
            else _fetch_hub(part, folder)
        )
        done[key] = entry
        state |= {"task": plan.task, "license": plan.license, "bindkit_version": __version__}
        atomic_write_text(state_path, json.dumps(state, indent=2) + "\n")
    downloads = folder / DOWNLOADS
    if downloads.is_dir() and not any(downloads.iterdir()):
        downloads.rmdir()
    if skipped:
        say(f"  left out (--no-images): {len(skipped)} image part(s)")
    if plan.note:
        say(f"  note: {plan.note}")
    say(f"{plan.task}: files in {folder}; licence: {plan.license}")
    if plan.use:
        say(f"  use: bindkit eval {plan.use}")
    return state


def _changed_on_disk(entry: Any, folder: Path) -> str | None:
    """Why a part the state file records as fetched must be fetched again (its file is gone,
    truncated or changed; its extracted folder holds fewer files), or None: the state file is
    a record of what was fetched, checked against the disk, never trusted alone."""
    from bindkit.fetch.download import _sha256_file

    if not isinstance(entry, dict):
        return f"{folder / STATE}: a corrupt record"
    if isinstance(entry.get("file"), str):
        path = folder / entry["file"]
        if not path.is_file():
            return f"{path} is missing"
        if _sha256_file(path) != entry.get("sha256"):
            return f"{path} changed since it was fetched"
        return None
    if isinstance(entry.get("archive"), str):
        into = folder / str(entry.get("into", "."))
        count = entry.get("files")
        found = sum(1 for p in into.rglob("*") if p.is_file()) if into.is_dir() else 0
        if not isinstance(count, int) or found < count:
            return f"{into} holds {found} of the {count} files extracted"
        return None
    return None  # a Hub snapshot: huggingface_hub checks its own files


def _remove_recorded_file(entry: Any, folder: Path) -> None:
    if isinstance(entry, dict) and isinstance(entry.get("file"), str):
        (folder / entry["file"]).unlink(missing_ok=True)


def _read_state(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        state = json.loads(path.read_text("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}  # unreadable: fetch everything again
    return state if isinstance(state, dict) else {}


def _fetch_url(part: Url, folder: Path, progress: bool | None) -> dict[str, Any]:
    from bindkit.fetch.download import _sha256_file, download, extract

    if not part.extract:
        dest = download(part.url, folder / part.to, sha256=part.sha256, progress=bool(progress))
        return {"file": part.to, "sha256": _sha256_file(dest), "pinned": part.sha256 is not None}
    name = Path(part.url.split("?")[0]).name or "archive"
    if "id=" in part.url:  # a Drive link: the id names the file
        name = part.url.rsplit("id=", 1)[1]
    archive = download(
        part.url, folder / DOWNLOADS / name, sha256=part.sha256, progress=bool(progress)
    )
    digest = _sha256_file(archive)
    count = extract(archive, folder / part.to, strip=part.strip, flatten=part.flatten)
    archive.unlink()
    return {"archive": name, "sha256": digest, "files": count, "into": part.to or "."}


def _fetch_hub(part: Hub, folder: Path) -> dict[str, Any]:
    import huggingface_hub

    from bindkit.fetch.download import extract

    try:
        snapshot = huggingface_hub.snapshot_download(
            part.repo_id,
            repo_type="dataset",
            allow_patterns=list(part.allow),
            local_dir=str(folder),
        )
    except huggingface_hub.errors.GatedRepoError:
        raise BindkitError(
            f"{part.repo_id}: a gated dataset; accept its terms at "
            f"https://huggingface.co/datasets/{part.repo_id} and log in (`hf auth login`)"
        ) from None
    except huggingface_hub.errors.RepositoryNotFoundError:
        raise BindkitError(f"{part.repo_id}: no such dataset on the Hub (or no access)") from None
    except (
        huggingface_hub.errors.HfHubHTTPError,
        huggingface_hub.errors.LocalEntryNotFoundError,
    ) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BindkitError(f"{part.repo_id}: {first}; check the network and run again") from None
    root = Path(snapshot)
    for source, target in part.moves:
        if (root / source).is_file():
            (folder / target).parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / source, folder / target)
    files = {}
    for archive, into in part.extract:
        if not (root / archive).is_file():
            raise BindkitError(f"{part.repo_id}: {archive} missing from the download; run again")
        files[archive] = extract(root / archive, folder / into)
        (root / archive).unlink()
    return {"repo_id": part.repo_id, "allow": list(part.allow), "extracted": files}
