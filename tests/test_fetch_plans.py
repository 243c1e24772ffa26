"""Each real fetch plan against its task's reader: a tiny release is written in the layout the
task reads (the task tests' own fixture writers), packed the way the publisher ships it (the
archive names and top folders its plan's ``verified`` cites), served from 127.0.0.1 under the
plan's file names, fetched with the plan's own extraction steps, and loaded with ``Task.load``:
the fetched folder must read as the release it was packed from (INSTRE also over FTP, from a
minimal FTP server on 127.0.0.1, as its host serves it). Also: ``--to`` is removed on every
kind of failure that leaves nothing to resume, and ``eval --fetch``."""

from __future__ import annotations

import dataclasses
import io
import json
import socket
import socketserver
import tarfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from tests.test_fetch import Handler, _fake_snapshot, background, serving, sha

from bindkit.cli import main
from bindkit.errors import BindkitError
from bindkit.fetch.fetcher import STATE, fetch
from bindkit.fetch.sources import SOURCES, Hub, Plan, Url
from bindkit.tasks.base import get_task


@pytest.fixture
def server() -> Iterator[str]:
    with serving() as base:
        yield base


def tar_of(folder: Path, prefix: str = "", gz: bool = True, only: str = "") -> bytes:
    """``folder``'s files (those under ``only``) as a tar(.gz), each member named
    ``prefix + its path``."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz" if gz else "w") as tf:
        for file in sorted(p for p in (folder / only).rglob("*") if p.is_file()):
            tf.add(file, prefix + file.relative_to(folder).as_posix())
    return buffer.getvalue()


def zip_of(folder: Path, prefix: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for file in sorted(p for p in folder.rglob("*") if p.is_file()):
            zf.write(file, prefix + file.relative_to(folder).as_posix())
    return buffer.getvalue()


def local(plan: Plan, base: str) -> Plan:
    """The plan with every URL served from ``base`` by its file name; a pinned hash becomes the
    served file's (the fixture is not the publisher's file), a checksum list stays a list."""

    def moved(url: str) -> str:
        return f"{base}/{Path(url.split('?')[0]).name}"

    parts = []
    for p in plan.parts:
        if isinstance(p, Url):
            name = Path(p.url).name
            served = Handler.files.get(name)
            pinned = None if p.sha256 is None or served is None else sha(served)
            lst = None if p.sha256_list is None else moved(p.sha256_list)
            p = dataclasses.replace(p, url=moved(p.url), sha256=pinned, sha256_list=lst)
        parts.append(p)
    return dataclasses.replace(plan, parts=tuple(parts))


def served_names(plan: Plan) -> set[str]:
    names = {Path(p.url).name for p in plan.parts if isinstance(p, Url)}
    return names | {
        Path(p.sha256_list).name for p in plan.parts if isinstance(p, Url) and p.sha256_list
    }


# -- the plans, each against its reader ---------------------------------------------------------
def test_oxford5k_plan_reads_as_the_release(server: str, tmp_path: Path) -> None:
    from tests.test_task_oxford_paris import _write_release

    release = tmp_path / "release"
    _write_release(release, release / "oxbuild_images", "all_souls", "oxc1_", nested=False)
    Handler.files |= {
        "gt_files_170407.tgz": tar_of(release / "gt"),  # files at the top (vissl: tar -C lab)
        "oxbuild_images-v1.tgz": tar_of(release / "oxbuild_images", "oxbuild_images/"),
    }
    assert served_names(SOURCES["oxford5k"]) == set(Handler.files)
    out = tmp_path / "oxford5k"
    fetch(local(SOURCES["oxford5k"], server), out, log=None)
    _same_oxford_dataset("oxford5k", release, out, "oxbuild_images")


def test_paris6k_plan_flattens_the_landmark_folders(server: str, tmp_path: Path) -> None:
    from tests.test_task_oxford_paris import _write_release

    release = tmp_path / "release"
    _write_release(release, release / "paris", "paris_defense", "", nested=True)
    images = sorted((release / "paris").rglob("*.jpg"))
    halves = (tmp_path / "p1", tmp_path / "p2")
    for i, image in enumerate(images):  # the two archives each hold some landmark files
        target = halves[i % 2] / "paris" / "defense" / image.name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(image.read_bytes())
    Handler.files |= {
        "paris_120310.tgz": tar_of(release / "gt"),
        "paris_1-v1.tgz": tar_of(halves[0]),
        "paris_2-v1.tgz": tar_of(halves[1]),
    }
    assert served_names(SOURCES["paris6k"]) == set(Handler.files)
    out = tmp_path / "paris6k"
    fetch(local(SOURCES["paris6k"], server), out, log=None)
    assert sorted(p.name for p in (out / "paris").iterdir()) == sorted(p.name for p in images)
    _same_oxford_dataset("paris6k", release, out, "paris")


def _same_oxford_dataset(task_name: str, release: Path, out: Path, images: str) -> None:
    from bindkit.tasks.instance._oxford import collection

    task = get_task(task_name)
    fetched, written = task.load(out), task.load(release)
    assert fetched.sha256 == written.sha256  # the same queries, boxes and lists
    assert fetched.payload[1] == out / images  # the reader's default image folder
    assert set(collection(out / images)) == set(collection(release / images))
    assert not (out / ".downloads").exists()


def test_instre_plan_reads_as_the_release(server: str, tmp_path: Path) -> None:
    from tests.test_task_instre import _write_release

    release = tmp_path / "release"
    release.mkdir()
    _write_release(release)
    Handler.files |= {
        "gnd_instre.mat": (release / "gnd_instre.mat").read_bytes(),
        "instre.tar.gz": _tar_without(release, "gnd_instre.mat"),  # INSTRE-S1/ ... at the top
    }
    assert served_names(SOURCES["instre"]) == set(Handler.files)
    out = tmp_path / "instre"
    fetch(local(SOURCES["instre"], server), out, log=None)
    task = get_task("instre")
    fetched = task.load(out)
    assert fetched.sha256 == task.load(release).sha256
    for path in (*fetched.payload[0], *fetched.payload[1]):  # qimlist, imlist: every image there
        assert (out / path).read_bytes() == (release / path).read_bytes()


def _tar_without(folder: Path, name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for file in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != name):
            tf.add(file, file.relative_to(folder).as_posix())
    return buffer.getvalue()


@pytest.mark.parametrize("task_name", ["ilias", "ilias_fine"])
def test_ilias_plan_checks_the_core_against_the_publishers_checksums(
    server: str, tmp_path: Path, task_name: str
) -> None:
    from tests.test_tasks_ilias import _write_ilias

    release = tmp_path / "release"
    _write_ilias(release, np.random.default_rng(0))
    core = tar_of(release, gz=False, only="ilias_core")  # members ilias_core/<object>/...
    published = "https://vrg.fel.cvut.cz/ilias_data/ilias_core.tar"
    Handler.files |= {
        name: (release / "image_ids" / name).read_bytes()
        for name in ("image_query_ids.txt", "text_query_ids.txt", "positive_ids.txt")
    }
    Handler.files |= {
        "taxonomy.json": (release / "taxonomy.json").read_bytes(),
        "ilias_core.tar": core,
        "checksums.txt": f"{'0' * 64} {published}.old\n{sha(core)} {published}\n".encode(),
    }
    assert served_names(SOURCES[task_name]) == set(Handler.files)
    out = tmp_path / task_name
    fetch(local(SOURCES[task_name], server), out, log=None)
    task = get_task(task_name)
    fetched = task.load(out)
    assert fetched.sha256 == task.load(release).sha256 and fetched.subsets
    assert (out / "ilias_core").is_dir() and not (out / "ilias_core.tar").exists()
    record = json.loads((out / STATE).read_text())
    assert record["parts"][f"{server}/ilias_core.tar"]["sha256"] == sha(core)


def test_a_core_unlike_the_listed_checksum_is_refused_and_nothing_is_left(
    server: str, tmp_path: Path
) -> None:
    Handler.files |= {
        "ilias_core.tar": tar_of(tmp_path, gz=False),
        "checksums.txt": f"{'1' * 64} https://vrg.fel.cvut.cz/ilias_data/ilias_core.tar\n".encode(),
    }
    core = next(p for p in SOURCES["ilias"].parts if isinstance(p, Url) and p.sha256_list)
    plan = local(dataclasses.replace(SOURCES["ilias"], parts=(core,)), server)
    with pytest.raises(BindkitError, match=r"is not the pinned 1{64}.*\(next: `bindkit fetch"):
        fetch(plan, tmp_path / "d", log=None)
    assert not (tmp_path / "d").exists()
    Handler.files["checksums.txt"] = b"# nothing for it\n"
    with pytest.raises(BindkitError, match=r"checksums.txt: lists no sha256 for ilias_core.tar"):
        fetch(plan, tmp_path / "d", log=None)


def test_pods_plan_drops_the_archives_top_folder(server: str, tmp_path: Path) -> None:
    from tests.test_tasks_pods import _write_pods

    release = tmp_path / "release"
    _write_pods(release)
    Handler.files["pods.zip"] = zip_of(release, "pods/")  # configs read ./data/pods/...
    assert served_names(SOURCES["pods"]) == set(Handler.files)
    out = tmp_path / "pods"
    fetch(local(SOURCES["pods"], server), out, log=None)
    task = get_task("pods")
    assert task.load(out).sha256 == task.load(release).sha256
    assert (out / "pods_info.json").is_file() and not (out / "pods").exists()


def test_a_fetch_that_does_not_read_as_its_task_is_reported(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.test_tasks_pods import _write_pods

    release = tmp_path / "release"
    _write_pods(release)
    Handler.files["pods.zip"] = zip_of(release)  # no top folder: the plan's strip loses a level
    out = tmp_path / "pods"
    with pytest.raises(BindkitError) as failed:
        fetch(local(SOURCES["pods"], server), out, log=None)
    assert f"{out}: the fetched files do not read as pods ({out / 'pods_info.json'}: not found" in (
        str(failed.value)
    )
    assert "has the publisher changed its layout? report it" in str(failed.value)
    assert (out / STATE).is_file()  # kept: what was fetched is recorded
    Handler.files["pods.zip"] = zip_of(release, "pods/")
    (out / STATE).unlink()
    fetch(local(SOURCES["pods"], server), out, log=print)
    assert "  checked: the files read as pods with its own reader" in capsys.readouterr().out


def test_mmeb_v2_parts_unpack_as_vlm2vecs_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import huggingface_hub

    hub = tmp_path / "hub"
    media = tmp_path / "media"
    (media / "MMEB" / "ImageNet-1K").mkdir(parents=True)
    (media / "MMEB" / "ImageNet-1K" / "0.jpg").write_bytes(b"jpg")
    v2 = hub / "TIGER-Lab" / "MMEB-V2"
    (v2 / "image-tasks").mkdir(parents=True)
    (v2 / "image-tasks" / "mmeb_v1.tar.gz").write_bytes(tar_of(media))
    frames = v2 / "video-tasks" / "frames"
    frames.mkdir(parents=True)
    clips = tmp_path / "clips"
    for group, name in (("cls", "K700"), ("ret", "MSR-VTT"), ("mret", "QVHighlight")):
        (clips / group / name / "c1").mkdir(parents=True)
        (clips / group / name / "c1" / "0.jpg").write_bytes(group.encode())
    (frames / "video_cls.tar.gz").write_bytes(tar_of(clips / "cls"))  # -C video_cls
    (frames / "video_ret.tar.gz").write_bytes(tar_of(clips / "ret"))  # -C video_ret
    (frames / "video_mret.tar.gz").write_bytes(tar_of(clips / "mret", "video_mret/"))
    qa = tar_of(clips / "cls", "video_qa/")  # cat video_qa.tar.gz-0{0..4} | tar -xz
    step = len(qa) // 5 + 1
    for i in range(5):
        (frames / f"video_qa.tar.gz-0{i}").write_bytes(qa[i * step : (i + 1) * step])
    instruct = hub / "ziyjiang" / "MMEB_Test_Instruct" / "ImageNet-1K"
    instruct.mkdir(parents=True)
    (instruct / "test-00000-of-00001.parquet").write_bytes(b"PAR1")
    (instruct.parent / "big.zip").write_bytes(b"not an annotation file")
    ucf = hub / "VLM2Vec" / "UCF101" / "data"
    ucf.mkdir(parents=True)
    (ucf / "test.jsonl").write_text('{"video_id": "c1"}\n')
    seen: list[dict[str, Any]] = []
    monkeypatch.setattr(huggingface_hub, "snapshot_download", _fake_snapshot(hub, seen))
    out = tmp_path / "mmeb_v2"
    fetch("mmeb_v2", out, parts=["image"], log=print)
    printed = capsys.readouterr().out
    assert (out / "image-tasks" / "ImageNet-1K" / "0.jpg").read_bytes() == b"jpg"  # MMEB/ gone
    assert (out / "ziyjiang/MMEB_Test_Instruct/ImageNet-1K/test-00000-of-00001.parquet").is_file()
    assert not (out / "ziyjiang/MMEB_Test_Instruct/big.zip").exists()
    assert {s["repo_id"] for s in seen} == {"TIGER-Lab/MMEB-V2", "ziyjiang/MMEB_Test_Instruct"}
    assert "note: ziyjiang/MMEB_Test_Instruct is not pinned to a revision" in printed
    assert "ImageNet-1K" in get_task("mmeb_v2").load(out).subsets
    seen.clear()
    for repo in ("Kinetics-700", "MSR-VTT", "QVHighlight"):
        (hub / "VLM2Vec" / repo).mkdir(parents=True, exist_ok=True)
    fetch("mmeb_v2", out, parts=["video"], log=None)
    assert (frames / "video_qa.tar.gz-00").exists()  # the fake hub is untouched
    got = out / "video-tasks" / "frames"
    assert (got / "video_cls" / "K700" / "c1" / "0.jpg").read_bytes() == b"cls"
    assert (got / "video_ret" / "MSR-VTT" / "c1" / "0.jpg").read_bytes() == b"ret"
    assert (got / "video_mret" / "QVHighlight" / "c1" / "0.jpg").read_bytes() == b"mret"
    assert (got / "video_qa" / "K700" / "c1" / "0.jpg").read_bytes() == b"cls"  # joined pieces
    assert not any(got.glob("*.tar.gz*")) and not (out / ".downloads").exists()
    assert "UCF101" in get_task("mmeb_v2").load(out).subsets
    assert "TIGER-Lab/MMEB-V2" in {s["repo_id"] for s in seen}
    assert all(s["repo_id"] != "ziyjiang/MMEB_Test_Instruct" for s in seen)
    with pytest.raises(BindkitError, match=r"--part audio: mmeb_v2 has parts image, video, visdoc"):
        fetch("mmeb_v2", out, parts=["audio"], log=None)
    with pytest.raises(BindkitError, match=r"--part: pods has no named parts"):
        fetch("pods", out, parts=["image"], log=None)


def test_mmeb_v2_annotation_datasets_are_those_the_readers_read() -> None:
    from bindkit.fetch.sources import MMEB_V2_ANNOTATIONS
    from bindkit.tasks.mmeb._mmeb_v2_data import SOURCES as READERS

    planned = {repo for repos in MMEB_V2_ANNOTATIONS.values() for repo in repos}
    assert planned == {source.repo for source in READERS.values()}
    hubs = [p for p in SOURCES["mmeb_v2"].parts if isinstance(p, Hub)]
    annotation = [p for p in hubs if p.repo_id != "TIGER-Lab/MMEB-V2"]
    assert all(p.to == p.repo_id for p in annotation)  # DATA/<owner>/<name>, as the readers
    assert {p.part for p in hubs} == {"image", "video", "visdoc"}
    for name, source in READERS.items():  # each reader's dataset is in the part named for it
        part = next(p.part for p in annotation if p.repo_id == source.repo)
        kind = "image" if "image-tasks" in source.media else "video" if source.media else "visdoc"
        assert part == kind, name


def test_every_hub_part_is_pinned_or_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    pinned = {
        p.repo_id: p.revision
        for plan in SOURCES.values()
        for p in plan.parts
        if isinstance(p, Hub) and p.revision
    }
    assert pinned == {
        "imirandam/BiVLC": "0c504074819f3fa83d5d3f37018f8b43c05bda82",
        "TIGER-Lab/MMEB-eval": "2f069730be515ea60778413777816b53e2d2a697",
        "facebook/PUG_SPAR": "c06d287045116b4ea056552d8c277ba4f9e75519",
    }


# -- failures leave no folder that hides the next hint ------------------------------------------
def test_an_archive_that_cannot_be_unpacked_leaves_no_folder(server: str, tmp_path: Path) -> None:
    Handler.files |= {
        "gt_files_170407.tgz": b"\x1f\x8b" + b"not really gzip" * 10,  # passes the kind check
        "oxbuild_images-v1.tgz": tar_of(tmp_path),
    }
    out = tmp_path / "data" / "oxford5k"
    with pytest.raises(BindkitError) as failed:
        fetch(local(SOURCES["oxford5k"], server), out, log=None)
    message = str(failed.value)
    assert "gt_files_170407.tgz: cannot be unpacked" in message
    assert message.endswith(f"(next: `bindkit fetch oxford5k --to {out}`)")
    assert not (tmp_path / "data").exists()  # the folder and the parent it made


def test_an_unsafe_archive_is_removed_with_what_it_unpacked(server: str, tmp_path: Path) -> None:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tf:
        for name in ("a_query.txt", "../../escape.txt"):
            info = tarfile.TarInfo(name)
            info.size = 1
            tf.addfile(info, io.BytesIO(b"x"))
    Handler.files["gt_files_170407.tgz"] = buffer.getvalue()
    plan = local(
        dataclasses.replace(SOURCES["oxford5k"], parts=SOURCES["oxford5k"].parts[:1]), server
    )
    with pytest.raises(BindkitError, match=r"leaves the folder; the archive is unsafe"):
        fetch(plan, tmp_path / "ox", log=None)
    assert not (tmp_path / "ox").exists() and not (tmp_path / "escape.txt").exists()


def test_a_failure_after_a_finished_part_keeps_the_folder_to_resume(
    server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Handler.files["gnd_instre.mat"] = b"MATLAB 5.0 MAT-file"
    out = tmp_path / "instre"
    plan = local(SOURCES["instre"], server)  # instre.tar.gz is not served: HTTP 404
    with pytest.raises(BindkitError, match=r"instre.tar.gz: HTTP 404.*\(next: `bindkit fetch"):
        fetch(plan, out, log=None)
    assert (out / "gnd_instre.mat").is_file() and (out / STATE).is_file()
    capsys.readouterr()


def test_a_failed_fetch_names_the_command_with_its_options(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(SOURCES, "pods", local(SOURCES["pods"], server))  # pods.zip: 404
    monkeypatch.setenv("BINDKIT_DATA", str(tmp_path / "data"))
    assert main(["fetch", "pods", "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("pods.zip: HTTP 404 Not Found; check the URL or try later "
                        "(next: `bindkit fetch pods`)")  # fmt: skip
    assert not (tmp_path / "data").exists()
    assert main(["fetch", "sculptures6k"]) == 2
    assert "no plan; download the ground truth and the images by hand" in capsys.readouterr().err


# -- eval --fetch: download on demand -----------------------------------------------------------
def _local_sugarcrepe(server: str) -> tuple[Plan, set[str]]:
    """SugarCrepe's plan with its seven annotation files served locally (images left out)."""
    rows = {"0": {"filename": "1.jpg", "caption": "a red cube", "negative_caption": "a cube red"}}
    parts = [p for p in SOURCES["sugarcrepe"].parts if isinstance(p, Url) and not p.images]
    Handler.files |= {p.to: json.dumps(rows).encode() for p in parts}
    plan = local(dataclasses.replace(SOURCES["sugarcrepe"], parts=tuple(parts)), server)
    return plan, {p.to.removesuffix(".json") for p in parts}


def test_eval_fetch_downloads_missing_data_once_and_prints_the_licence(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    header = "pair_ID\tsentence_A\tsentence_B\trelatedness_score\n"
    rows = [("a red cube", "a red cube", 5.0), ("a red cube", "a blue ball", 1.5)]
    rows += [("a small dog", "a small dog runs", 4.1), ("a cat", "the sky", 1.0)]
    sick = header + "".join(f"{i}\t{a}\t{b}\t{g}\n" for i, (a, b, g) in enumerate(rows))
    for name in ("SICK_train.txt", "SICK_trial.txt", "SICK_test_annotated.txt"):
        Handler.files[name] = sick.encode()
    monkeypatch.setitem(SOURCES, "sts", local(SOURCES["sts"], server))
    monkeypatch.setenv("BINDKIT_DATA", str(tmp_path / "data"))
    args = ["eval", "--model", "bow", "--task", "sts", "--out", str(tmp_path / "r")]
    args += ["--no-report", "--no-cache", "-q"]  # the licence is printed even so
    pods = [*args[:4], "pods", *args[5:]]
    assert main(pods) == 2  # without --fetch: the error names both ways to get the data
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("`bindkit fetch pods` downloads it (or add --fetch to bindkit eval)")
    )
    assert not (tmp_path / "data").exists() and not Handler.requests
    assert main([*args, "--fetch"]) == 0
    err = capsys.readouterr().err
    folder = tmp_path / "data" / "sick"
    assert err.count("licence: CC BY-NC-SA 3.0") == 1
    assert f"sts: fetching into {folder}; licence: CC BY-NC-SA 3.0 (SICK)" in err
    (record,) = [json.loads(p.read_text()) for p in (tmp_path / "r").rglob("tt.json")]
    assert record["data"]["source"].endswith("sick/SICK_test_annotated.txt")
    served = len(Handler.requests)
    assert main([*args, "--fetch"]) == 0  # the data is there: nothing is fetched again
    assert len(Handler.requests) == served and "fetching" not in capsys.readouterr().err


def test_fetch_if_missing_resumes_an_unfinished_fetch(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.fetch import sources
    from bindkit.fetch.fetcher import fetch_if_missing

    plan, subsets = _local_sugarcrepe(server)
    folder = tmp_path / "sc"
    first = dataclasses.replace(plan, task="demo", parts=plan.parts[:1])
    fetch(first, folder, log=None)  # a fetch that got 1 file of 7
    said: list[str] = []
    original = sources.SOURCES["sugarcrepe"]
    sources.SOURCES["sugarcrepe"] = plan
    try:
        assert fetch_if_missing("sugarcrepe", folder, log=said.append) == folder
        assert fetch_if_missing("sugarcrepe", folder, log=said.append) == folder
    finally:
        sources.SOURCES["sugarcrepe"] = original
    assert {p.stem for p in folder.glob("[!.]*.json")} == subsets
    assert said == [f"sugarcrepe: fetching into {folder}; licence: {plan.license}"]
    notes: list[str] = []  # a fetch's notes reach the caller; its other lines do not
    monkeypatch.setitem(sources.SOURCES, "sugarcrepe", dataclasses.replace(plan, note="no images"))
    fetch_if_missing("sugarcrepe", tmp_path / "sc2", log=notes.append)
    monkeypatch.setattr("huggingface_hub.snapshot_download", lambda *a, **k: k["local_dir"])
    with pytest.raises(BindkitError, match=r"do not read as colorswap"):  # an empty snapshot
        fetch_if_missing("colorswap", tmp_path / "cs", log=notes.append)
    assert notes == [
        f"sugarcrepe: fetching into {tmp_path / 'sc2'}; licence: {plan.license}",
        "note: no images",
        f"colorswap: fetching into {tmp_path / 'cs'}; licence: MIT (see the dataset card)",
        "note: stanfordnlp/colorswap is not pinned to a revision: its latest commit is fetched",
    ]
    assert set(get_task("sugarcrepe").load(folder).subsets) == subsets


def test_eval_fetch_needs_a_place_and_skips_tasks_without_a_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.fetch.fetcher import fetch_if_missing

    monkeypatch.delenv("BINDKIT_DATA", raising=False)
    with pytest.raises(BindkitError, match=r"--fetch pods: pass --data DIR to fill or set BINDK"):
        fetch_if_missing("pods")
    assert fetch_if_missing("saber") is None and fetch_if_missing("sculptures6k") is None
    sick = tmp_path / "mine.txt"
    with pytest.raises(
        BindkitError,
        match=r"names a file, and it is missing; drop --data to "
        r"fetch into \$\{BINDKIT_DATA\}/sick, or run `bindkit fetch sts --to DIR`",
    ):
        fetch_if_missing("sts", sick)
    sick.write_text("sentence_A\tsentence_B\trelatedness_score\na\tb\t1\n")
    assert fetch_if_missing("sts", sick) == sick  # --data names the file: read as given


def test_an_interrupted_unpacking_keeps_the_archive_and_the_next_run_unpacks_it(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.test_tasks_pods import _write_pods

    from bindkit.fetch import download

    release = tmp_path / "release"
    _write_pods(release)
    Handler.files["pods.zip"] = zip_of(release, "pods/")
    plan = local(SOURCES["pods"], server)
    real = download.extract

    def interrupted(*args: Any, **kwargs: Any) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(download, "extract", interrupted)
    out = tmp_path / "new" / "pods"
    with pytest.raises(KeyboardInterrupt):
        fetch(plan, out, log=None)
    assert (out / ".downloads" / "pods.zip").is_file()  # kept: the download is not lost
    assert not (out / ".downloads" / "pods.zip.unpacking").exists()
    monkeypatch.setattr(download, "extract", real)
    served = len(Handler.requests)
    fetch(plan, out, log=None)
    assert len(Handler.requests) == served  # unpacked from the kept archive
    assert (out / "pods_info.json").is_file() and not (out / ".downloads").exists()


@pytest.mark.parametrize("name", sorted(SOURCES))
def test_every_plan_leaves_no_folder_when_its_first_part_fails(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    import huggingface_hub

    def unreachable(repo_id: str, **kwargs: Any) -> str:
        raise huggingface_hub.errors.LocalEntryNotFoundError("the Hub cannot be reached")

    monkeypatch.setattr(huggingface_hub, "snapshot_download", unreachable)
    out = tmp_path / "new" / name  # nothing is served: every URL answers 404
    with pytest.raises(BindkitError, match=rf"\(next: `bindkit fetch {name} --to "):
        fetch(local(SOURCES[name], server), out, log=None)
    assert not (tmp_path / "new").exists()


class FtpHandler(socketserver.StreamRequestHandler):
    """The few FTP commands urllib's FTP client sends (login, TYPE, CWD, PASV, RETR), serving
    ``files`` by name from any folder; one passive data connection per RETR."""

    files: ClassVar[dict[str, bytes]] = {}
    retrieved: ClassVar[list[str]] = []

    def reply(self, line: str) -> None:
        self.wfile.write(f"{line}\r\n".encode())

    def handle(self) -> None:
        self.reply("220 test server")
        passive: socket.socket | None = None
        for raw in self.rfile:
            command, _, arg = raw.decode().strip().partition(" ")
            command = command.upper()
            if command == "USER":
                self.reply("331 password please")
            elif command == "PASS":
                self.reply("230 logged in")
            elif command in ("TYPE", "CWD"):
                self.reply("200 ok" if command == "TYPE" else "250 ok")
            elif command == "PASV":
                passive = socket.create_server(("127.0.0.1", 0))
                port = passive.getsockname()[1]
                self.reply(f"227 Entering Passive Mode (127,0,0,1,{port >> 8},{port & 255})")
            elif command == "RETR" and passive is not None:
                name = Path(arg).name
                if name not in self.files:
                    self.reply("550 no such file")
                    continue
                self.reply(
                    f"150 Opening BINARY mode data connection ({len(self.files[name])} bytes)"
                )
                passive.settimeout(5)
                data, _ = passive.accept()
                with data:
                    data.sendall(self.files[name])
                passive.close()
                passive = None
                self.retrieved.append(name)
                self.reply("226 transfer complete")
            elif command == "QUIT":
                self.reply("221 bye")
                return
            else:
                self.reply("502 not implemented")


@pytest.fixture
def ftp() -> Iterator[str]:
    FtpHandler.files, FtpHandler.retrieved = {}, []
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), FtpHandler)
    server.daemon_threads = True
    with background(server) as port:
        yield f"ftp://127.0.0.1:{port}"


def test_instre_plan_over_ftp_as_its_host_serves_it(ftp: str, tmp_path: Path) -> None:
    from tests.test_task_instre import _write_release

    release = tmp_path / "release"
    release.mkdir()
    _write_release(release)
    FtpHandler.files |= {
        "gnd_instre.mat": (release / "gnd_instre.mat").read_bytes(),
        "instre.tar.gz": _tar_without(release, "gnd_instre.mat"),
    }
    real = SOURCES["instre"]
    base = f"{ftp}/local/texmex/corpus/instre"
    parts = tuple(
        dataclasses.replace(
            p, url=p.url.replace("ftp://ftp.irisa.fr/local/texmex/corpus/instre", base)
        )
        for p in real.parts
        if isinstance(p, Url)
    )
    assert all(p.url.startswith(base) for p in parts)
    out = tmp_path / "instre"
    fetch(dataclasses.replace(real, parts=parts), out, log=None)  # read back by the reader
    assert FtpHandler.retrieved == ["gnd_instre.mat", "instre.tar.gz"]
    task = get_task("instre")
    assert task.load(out).sha256 == task.load(release).sha256
    FtpHandler.files["gnd_instre.mat"] = b"<html>login required</html>"
    with pytest.raises(BindkitError, match=r"gnd_instre.mat: the server sent an HTML page"):
        fetch(dataclasses.replace(real, parts=parts[:1]), tmp_path / "again", log=None)
    assert not (tmp_path / "again").exists()
