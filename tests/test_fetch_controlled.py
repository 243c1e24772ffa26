"""The fetch plans of CLEVR-binding, PUG:SPARE and PUG:SPAR against their readers: each tiny
release (the task tests' fixture writers) is packed as its publisher ships it, served from
127.0.0.1 under the plan's own URLs (the Google Drive download path and id, or a Hub snapshot),
fetched with the plan's steps and loaded with ``Task.load``; and ``eval --fetch`` on one."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from tests.test_fetch import Handler, _fake_snapshot
from tests.test_fetch_plans import server, zip_of  # noqa: F401  (the server fixture)
from tests.test_tasks_controlled import _write_clevr, _write_pug_spar, _write_pug_spare

from bindkit.cli import main
from bindkit.fetch.fetcher import fetch
from bindkit.fetch.sources import DRIVE, PUG_SPAR_REVISION, SOURCES, Plan, Url
from bindkit.tasks.base import get_task

HOST = "https://drive.usercontent.google.com/"


def drive_local(plan: Plan, base: str) -> Plan:
    """The plan with each Google Drive URL served from ``base`` under its own path and query
    (``download?export=download&confirm=t&id=<id>``), so every file id stays its own file."""
    parts = []
    for p in plan.parts:
        assert isinstance(p, Url) and p.url.startswith(DRIVE) and p.sha256 is None
        parts.append(dataclasses.replace(p, url=p.url.replace(HOST, f"{base}/")))
    return dataclasses.replace(plan, parts=tuple(parts))


def served(plan: Plan) -> list[str]:
    return [p.url.removeprefix(HOST) for p in plan.parts if isinstance(p, Url)]


def test_clevr_binding_plan_unzips_the_2obj_set(server: str, tmp_path: Path) -> None:  # noqa: F811
    release = tmp_path / "release"
    _write_clevr(release)
    (name,) = served(SOURCES["clevr_binding"])
    Handler.files[name] = zip_of(release)  # images_2obj/ and output_2obj.csv at the top
    out = tmp_path / "clevr_binding"
    fetch(drive_local(SOURCES["clevr_binding"], server), out, log=None)
    task = get_task("clevr_binding")
    fetched, original = task.load(out), task.load(release)
    assert fetched.sha256 == original.sha256 and fetched.payload.splits == original.payload.splits
    assert (out / "images_2obj" / "CLEVR_2obj_000000.png").is_file()


def test_pug_spare_plan_fetches_the_csv_and_one_zip_per_world(
    server: str,  # noqa: F811
    tmp_path: Path,
) -> None:
    release = tmp_path / "release"
    _write_pug_spare(release)
    csv_name, *zips = served(SOURCES["pug_spare"])
    assert len(zips) == 4  # Desert, Island, MountainRange, Spaceship
    Handler.files[csv_name] = (release / "PUG_SPARE.csv").read_bytes()
    for name, world in zip(zips, ("Desert", "Island", "MountainRange", "Spaceship"), strict=True):
        folder = tmp_path / "zips" / world
        if (release / world).is_dir():
            (folder / world).parent.mkdir(parents=True)
            (release / world).rename(folder / world)
        else:  # the fixture renders two worlds; the others ship as zips of nothing of ours
            (folder / world).mkdir(parents=True)
            (folder / world / "README").write_text("empty world\n")
        Handler.files[name] = zip_of(folder)  # <world>/<file> members, unzipped into the folder
    for world in ("Desert", "Island"):  # the release, as the reader wants it, for comparison
        (tmp_path / "zips" / world / world).rename(release / world)
    out = tmp_path / "pug_spare"
    fetch(drive_local(SOURCES["pug_spare"], server), out, log=None)
    task = get_task("pug_spare")
    assert task.load(out).payload.splits == task.load(release).payload.splits
    assert task.load(out).sha256 == task.load(release).sha256
    assert sorted(p.name for p in out.iterdir() if p.is_dir()) == [
        "Desert",
        "Island",
        "MountainRange",
        "Spaceship",
    ]


def test_pug_spar_plan_snapshots_the_pinned_parquet_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    from tests.test_tasks_controlled import SPAR_COLUMNS, _png_bytes

    rows = _write_pug_spar(tmp_path / "tarball")
    table = [
        {**{c: r[c] for c in SPAR_COLUMNS if c != "filename"}, "image": _png_bytes((i, 0, 0))}
        for i, r in enumerate(rows)
    ]
    repo = tmp_path / "hub" / "facebook" / "PUG_SPAR"
    (repo / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(table), repo / "data" / "train-00000-of-00035.parquet")
    (repo / "README.md").write_text("not asked for\n")
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(
        huggingface_hub, "snapshot_download", _fake_snapshot(tmp_path / "hub", seen)
    )
    out = tmp_path / "pug_spar"
    fetch(SOURCES["pug_spar"], out, log=None)
    (call,) = seen
    assert call["revision"] == PUG_SPAR_REVISION and call["repo_type"] == "dataset"
    assert not (out / "README.md").exists()
    dataset = get_task("pug_spar").load(out)
    tarball = get_task("pug_spar").load(tmp_path / "tarball")
    assert dataset.payload.subsets == tarball.payload.subsets  # the same rows, either layout
    assert len(dataset.payload.subsets["blue_red"]) == 12


def test_eval_fetch_downloads_clevr_binding_and_scores_its_test_split(
    server: str,  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    release = tmp_path / "release"
    _write_clevr(release)
    (name,) = served(SOURCES["clevr_binding"])
    Handler.files[name] = zip_of(release)
    monkeypatch.setitem(SOURCES, "clevr_binding", drive_local(SOURCES["clevr_binding"], server))
    monkeypatch.setenv("BINDKIT_DATA", str(tmp_path / "data"))
    args = ["eval", "--model", "builtin:tiny-clip", "--task", "clevr_binding"]
    args += ["--out", str(tmp_path / "r"), "--no-report", "--no-cache", "-q"]
    assert main([*args, "--fetch"]) == 0
    err = capsys.readouterr().err
    folder = tmp_path / "data" / "clevr_binding"
    assert f"clevr_binding: fetching into {folder}; licence: not stated by the publisher" in err
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "r").rglob("it.json")]
    assert record["subset"] == "test" and record["counts"]["scored"] > 0
    assert record["data"]["source"] == str(folder)
