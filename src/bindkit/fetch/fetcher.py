"""Carry out a task's fetch plan into ``--to`` or ``$BINDKIT_DATA/<folder>``.

Each finished part is recorded in ``FOLDER/.bindkit-fetch.json`` (what was fetched from where,
its sha256), so a rerun skips it and resumes the part that was cut off. Archives are downloaded
into ``FOLDER/.downloads/``, unpacked into a staging folder there, moved into place once whole,
and removed; an archive that cannot be unpacked is removed too, so the next run fetches it again.
A whole fetch (no part left out) is read back with the task's own reader (:func:`read_back`).

A failed fetch leaves a folder it created only when it holds something to resume (a finished
part, or a cut-off download's ``.part``); otherwise the folder is removed, so the next
``bindkit eval`` still says how to fetch the data. Its one-line error ends with the command to
run next.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from bindkit.errors import BindkitError
from bindkit.fetch.sources import MANUAL, SOURCES, Archive, Hub, Part, Plan, Url

STATE = ".bindkit-fetch.json"
DOWNLOADS = ".downloads"


def plan_for(task: str) -> Plan:
    """The fetch plan of ``task``; an unknown name gets a suggestion and the list."""
    if task in MANUAL:
        raise BindkitError(f"fetch {task}: {MANUAL[task]}")
    if task not in SOURCES:
        folders = {plan.folder: name for name, plan in SOURCES.items() if plan.folder}
        close = difflib.get_close_matches(task, list(SOURCES), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        if task in folders:  # the data's name, not the task's: `fetch sick` is `fetch sts`
            hint = f" (did you mean {folders[task]}? it fetches {task})"
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
    revision = f"@{part.revision}" if part.revision else ""
    into = f"->{part.to}" if part.to else ""
    return f"hf:{part.repo_id}{revision}:{','.join(part.allow)}{into}"


def chosen_parts(plan: Plan, parts: Sequence[str] | None) -> set[str] | None:
    """The ``--part`` names asked for (None: every part), each checked against the plan."""
    if not parts:
        return None
    names = plan.part_names
    if not names:
        raise BindkitError(f"--part: {plan.task} has no named parts; fetch it whole")
    unknown = [p for p in parts if p not in names]
    if unknown:
        raise BindkitError(f"--part {unknown[0]}: {plan.task} has parts {', '.join(names)}")
    return set(parts)


def command(plan: Plan, to: str | Path | None, images: bool, parts: Sequence[str] | None) -> str:
    """The ``bindkit fetch`` command line that repeats this fetch."""
    words = ["bindkit fetch", plan.task]
    if to is not None:
        words.append(f"--to {shlex.quote(str(to))}")
    if not images:
        words.append("--no-images")
    words += [f"--part {p}" for p in parts or ()]
    return " ".join(words)


def fetch(
    task: str | Plan,
    to: str | Path | None = None,
    *,
    images: bool = True,
    parts: Sequence[str] | None = None,
    log: Callable[[str], None] | None = print,
    progress: bool | None = None,
) -> dict[str, Any]:
    """Download a benchmark's files into the layout its task reads.

    Args:
        task: A task name (see :data:`~bindkit.fetch.sources.SOURCES`) or a plan.
        to: The folder (default: ``$BINDKIT_DATA/<folder>``).
        images: Also fetch the parts marked as images (large archives).
        parts: Only these named parts of a large plan (``--part``; mmeb_v2: image, video,
            visdoc); default: all of them.
        log: Where the licence and each step go (None: silent).

    Returns:
        The record written to ``FOLDER/.bindkit-fetch.json``.

    Raises:
        BindkitError: a part cannot be fetched; the message ends with the command to run next.
            A folder this call created is removed unless it holds something to resume.
    """
    from bindkit._io import make_dirs

    plan = task if isinstance(task, Plan) else plan_for(task)
    chosen = chosen_parts(plan, parts)
    wanted = [p for p in plan.parts if chosen is None or p.part in chosen]
    if not images and all(p.images for p in wanted):  # nothing would be fetched
        raise BindkitError(
            f"fetch {plan.task} --no-images: every part of its plan is images (nothing else to "
            f"fetch); drop --no-images: `{command(plan, to, True, parts)}`"
        )
    folder = target_folder(plan, to)
    say = log or (lambda message: None)
    say(f"{plan.task}: licence: {plan.license}")
    created = [p for p in (folder, *folder.parents) if not p.exists()]
    try:
        make_dirs(folder)
        return _fetch_parts(plan, folder, images, chosen, say, progress)
    except BaseException as exc:
        kept = _resumable_progress(folder)
        if created and not kept:
            _remove_created(created)
        if not isinstance(exc, BindkitError):
            raise
        raise BindkitError(f"{exc} (next: `{command(plan, to, images, parts)}`)") from None


def fetch_if_missing(
    task: str,
    data: str | Path | None = None,
    *,
    log: Callable[[str], None] | None = print,
    progress: bool | None = None,
) -> Path | None:
    """Download on demand (``bindkit eval --fetch``, as mteb's and CLIP_benchmark's
    ``download=True``): the path the task should read, its plan fetched first when the files are
    missing or a fetch left them unfinished (its state file lists fewer parts than the plan).

    ``data`` (``--data``) is the folder to fill; without it, ``$BINDKIT_DATA/<folder>``. Files
    that are there without a state file (a copy made by hand) are used as they are.

    Returns:
        The path to read (the folder, or the file a plan's ``data`` names), or None for a task
        without a plan (nothing to fetch: read ``data`` as given).

    Raises:
        BindkitError: no place to put the files, or the fetch failed.
    """
    from bindkit.tasks.base import DATA_ENV

    if task not in SOURCES:
        return None
    plan = SOURCES[task]
    if data is not None and plan.data:  # --data names the file itself (sts: a SICK file)
        if not Path(data).exists():
            raise BindkitError(
                f"--fetch {task}: --data {data} names a file, and it is missing; drop --data to "
                f"fetch into ${{{DATA_ENV}}}/{plan.folder or task}, or run `bindkit fetch {task} "
                "--to DIR`"
            )
        return Path(data)
    if data is None and not os.environ.get(DATA_ENV):
        raise BindkitError(f"--fetch {task}: pass --data DIR to fill or set {DATA_ENV}=ROOT")
    folder = target_folder(plan, data)
    target = folder / plan.data if plan.data else folder
    if target.exists() and _finished(plan, folder):
        return target
    if log is not None:
        log(f"{task}: fetching into {folder}; licence: {plan.license}")
    fetch(plan, folder, log=_notes_to(log), progress=progress)
    return target


def _notes_to(log: Callable[[str], None] | None) -> Callable[[str], None] | None:
    """Pass on only a fetch's notes (an unpinned Hub part, what the plan leaves out): the
    licence line is the caller's, printed once."""
    if log is None:
        return None
    return lambda message: log(message.strip()) if message.startswith("  note: ") else None


def _finished(plan: Plan, folder: Path) -> bool:
    """No fetch left ``folder`` unfinished: no state file (files put there by hand), or one
    that records every part of the plan."""
    state = folder / STATE
    if not state.is_file():
        return True
    done = _read_state(state).get("parts", {})
    return all(part_key(p) in done for p in plan.parts)


def _resumable_progress(folder: Path) -> bool:
    """The folder holds a finished part (the state file), a cut-off download to resume or a
    downloaded archive not yet unpacked (an interrupted unpacking)."""
    if not folder.is_dir():
        return False
    downloads = folder / DOWNLOADS
    return (
        (folder / STATE).is_file()
        or any(folder.rglob("*.part"))
        or (downloads.is_dir() and any(p.is_file() for p in downloads.iterdir()))
    )


def _remove_created(created: list[Path]) -> None:
    """Remove the folder a failed fetch created (all of it: nothing in it can be resumed) and
    the parents it created, deepest first, while they are empty."""
    shutil.rmtree(created[0], ignore_errors=True)
    for path in created[1:]:
        try:
            path.rmdir()
        except OSError:
            break


def _fetch_parts(
    plan: Plan,
    folder: Path,
    images: bool,
    chosen: set[str] | None,
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
        if chosen is not None and part.part not in chosen:
            continue
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
        if isinstance(part, Hub) and part.revision is None:
            say(f"  note: {part.repo_id} is not pinned to a revision: its latest commit is fetched")
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
    elif chosen is None and read_back(plan, folder):
        say(f"  checked: the files read as {plan.task} with its own reader")
    if plan.note:
        say(f"  note: {plan.note}")
    say(f"{plan.task}: files in {folder}; licence: {plan.license}")
    if plan.use:
        say(f"  use: bindkit eval {plan.use}")
    return state


def read_back(plan: Plan, folder: Path) -> bool:
    """Load a whole fetch with its task's own reader (``Task.load``), so a publisher whose
    layout changed (unpinned files are checked only for their kind) is caught here rather than
    at the first ``bindkit eval``; False for a plan whose task is not registered.

    Raises:
        BindkitError: the files do not read as the task's (the folder is kept: a state file
            records what was fetched).
    """
    from bindkit.tasks.base import get_task, task_classes

    if plan.task not in task_classes():
        return False
    try:
        get_task(plan.task).load(folder / plan.data if plan.data else folder)
    except BindkitError as exc:
        raise BindkitError(
            f"{folder}: the fetched files do not read as {plan.task} ({exc}); has the publisher "
            "changed its layout? report it"
        ) from None
    return True


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
    from bindkit.fetch.download import _sha256_file, download

    sha256 = part.sha256
    if sha256 is None and part.sha256_list is not None:
        sha256 = listed_sha256(part.sha256_list, part.url)
    if not part.extract:
        dest = download(part.url, folder / part.to, sha256=sha256, progress=bool(progress))
        return {"file": part.to, "sha256": _sha256_file(dest), "pinned": sha256 is not None}
    name = Path(part.url.split("?")[0]).name or "archive"
    if "id=" in part.url:  # a Drive link: the id names the file
        name = part.url.rsplit("id=", 1)[1]
    archive = download(part.url, folder / DOWNLOADS / name, sha256=sha256, progress=bool(progress))
    digest = _sha256_file(archive)
    count = unpack(archive, folder / part.to, folder, strip=part.strip, flatten=part.flatten)
    return {"archive": name, "sha256": digest, "files": count, "into": part.to or "."}


def listed_sha256(list_url: str, url: str) -> str:
    """The sha256 a publisher's checksum list (lines ``<sha256> <url>``, as ILIAS'
    ``checksums.txt``) gives for ``url``: the line naming it, else the one line naming a file of
    the same name."""
    import re
    import urllib.error
    import urllib.request

    from bindkit.fetch.download import TIMEOUT, _agent

    request = urllib.request.Request(list_url, headers={"User-Agent": _agent()})
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
            text = response.read(1 << 24).decode("utf-8", "replace")
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise BindkitError(
            f"{list_url}: cannot read the publisher's checksums ({reason}); check the network"
        ) from None
    rows = [line.split() for line in text.splitlines() if line.strip()]
    pairs = [
        (r[0].lower(), r[1]) for r in rows if len(r) >= 2 and re.fullmatch(r"[0-9a-fA-F]{64}", r[0])
    ]
    exact = [h for h, u in pairs if u == url]
    named = [h for h, u in pairs if Path(u).name == Path(url).name]
    found = exact or (named if len(named) == 1 else [])
    if not found:
        raise BindkitError(
            f"{list_url}: lists no sha256 for {Path(url).name}; the publisher changed its "
            "files? report it"
        )
    return str(found[0])


def unpack(
    archive: Path, into: Path, folder: Path, *, strip: int = 0, flatten: bool = False
) -> int:
    """Unpack ``archive`` into ``into`` through a staging folder under ``folder/.downloads``:
    files move into place only once the whole archive is read, and the archive is removed. An
    archive that cannot be unpacked (damaged, unsafe, not zip or tar) is removed with its
    staging folder, so the next run downloads it again; returns the file count."""
    import tarfile
    import zipfile
    import zlib

    from bindkit.fetch.download import extract

    staging = folder / DOWNLOADS / f"{archive.name}.unpacking"
    shutil.rmtree(staging, ignore_errors=True)
    try:
        count = extract(archive, staging, strip=strip, flatten=flatten)
    except (BindkitError, tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        archive.unlink(missing_ok=True)
        raise BindkitError(
            f"{archive.name}: cannot be unpacked ({exc}); it was removed, so the next run "
            "downloads it again"
        ) from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)  # the archive is kept: unpacked next run
        raise
    for file in sorted(p for p in staging.rglob("*") if p.is_file()):
        target = into / file.relative_to(staging)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(file, target)
    shutil.rmtree(staging, ignore_errors=True)
    archive.unlink()
    return count


def _fetch_hub(part: Hub, folder: Path) -> dict[str, Any]:
    import huggingface_hub

    local = folder / part.to
    try:
        snapshot = huggingface_hub.snapshot_download(
            part.repo_id,
            repo_type="dataset",
            allow_patterns=list(part.allow),
            local_dir=str(local),
            revision=part.revision,
        )
    except huggingface_hub.errors.GatedRepoError:
        raise BindkitError(
            f"{part.repo_id}: a gated dataset; accept its terms at "
            f"https://huggingface.co/datasets/{part.repo_id} and log in (`hf auth login`)"
        ) from None
    except huggingface_hub.errors.RevisionNotFoundError:
        raise BindkitError(
            f"{part.repo_id}: revision {part.revision} not found on the Hub; report it"
        ) from None
    except huggingface_hub.errors.RepositoryNotFoundError:
        raise BindkitError(f"{part.repo_id}: no such dataset on the Hub (or no access)") from None
    except (
        huggingface_hub.errors.HfHubHTTPError,
        huggingface_hub.errors.LocalEntryNotFoundError,
    ) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise BindkitError(f"{part.repo_id}: {first}; check the network") from None
    root = Path(snapshot)
    for source, target in part.moves:
        if (root / source).is_file():
            (folder / target).parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / source, folder / target)
    files = {}
    for item in part.archives:
        files["+".join(item.pieces)] = _unpack_hub_archive(part, item, root, folder)
    return {
        "repo_id": part.repo_id,
        "revision": part.revision,
        "allow": list(part.allow),
        "into": part.to or ".",
        "extracted": files,
    }


def _unpack_hub_archive(part: Hub, item: Archive, root: Path, folder: Path) -> int:
    """Unpack one archive of a snapshot (its pieces joined first) into ``root/item.into``."""
    from bindkit._io import make_dirs

    missing = [p for p in item.pieces if not (root / p).is_file()]
    if missing:
        raise BindkitError(f"{part.repo_id}: {missing[0]} missing from the download")
    if len(item.pieces) == 1:
        archive = root / item.pieces[0]
    else:  # cat piece-00 piece-01 ... > archive
        archive = folder / DOWNLOADS / Path(item.pieces[0]).name.rsplit("-", 1)[0]
        make_dirs(archive.parent)
        with archive.open("wb") as joined:
            for piece in item.pieces:
                with (root / piece).open("rb") as handle:
                    shutil.copyfileobj(handle, joined, 1 << 20)
        for piece in item.pieces:
            (root / piece).unlink()
    return unpack(archive, root / item.into, folder, strip=item.strip)
