"""``bindkit.synth.run`` and ``synth generate``: the manifest, resume refusals, the lock, option
bounds, corrupt files on resume, and directories that are not synth runs."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bindkit._lock import LockedError, directory_lock
from bindkit.cli import main
from bindkit.errors import BindkitError, DataFormatError
from bindkit.synth import run
from bindkit.synth.backends import BACKENDS, make_backend
from bindkit.synth.generate import EXAMPLES, REJECTED
from bindkit.synth.rundir import MANIFEST


@pytest.fixture(scope="module")
def base_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("base")
    run(out, 60, seed=4, progress=False)
    return out


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_the_python_function_equals_the_cli(base_run: Path, tmp_path: Path) -> None:
    argv = ["synth", "generate", "--n", "60", "--seed", "4", "--out", str(tmp_path), "-q"]
    assert main(argv) == 0
    for name in (EXAMPLES, MANIFEST, "train.jsonl", "test.jsonl", "splits.json"):
        assert (tmp_path / name).read_bytes() == (base_run / name).read_bytes(), name


def test_the_manifest_records_what_produced_the_run(base_run: Path) -> None:
    from bindkit import __version__

    manifest = json.loads((base_run / MANIFEST).read_text())
    assert manifest["format"] == "bindkit-synth-run"
    assert manifest["bindkit_version"] == __version__
    identity = manifest["identity"]
    assert identity["seed"] == 4 and identity["backend"] == "template"
    assert len(identity["controls_sha256"]) == 64 and len(identity["data_sha256"]) == 64
    assert manifest["options"]["n"] == 60 and manifest["options"]["splits"] is True
    splits = json.loads((base_run / "splits.json").read_text())
    from bindkit._io import sha256_file

    assert splits["examples"]["sha256"] == sha256_file(base_run / EXAMPLES)
    assert splits["options"]["seed"] == 4 and splits["exclude_vocab"] is None


@pytest.mark.parametrize(
    ("change", "option"),
    [({"seed": 5}, "--seed"), ({"backend": "openai"}, "--backend")],
)
def test_resuming_with_other_options_is_refused(
    base_run: Path, tmp_path: Path, change: dict[str, object], option: str
) -> None:
    out = _copy(base_run, tmp_path / "run")
    before = (out / EXAMPLES).read_bytes()
    if "backend" in change:
        change = {**change, "base_url": "http://127.0.0.1:9/v1", "llm_model": "m"}
    with pytest.raises(BindkitError, match=f"^{option}: this run was started with") as info:
        run(out, 80, progress=False, **{"seed": 4, **change})  # type: ignore[arg-type]
    assert "\n" not in str(info.value)
    assert (out / EXAMPLES).read_bytes() == before
    # the same options continue to the larger target
    result = run(out, 80, seed=4, progress=False)
    assert result.controller.accepted == 80 and result.stats.resumed == 60


def test_changed_synth_data_refuses_a_resume(
    base_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bindkit.synth import command

    out = _copy(base_run, tmp_path / "run")
    real = command._synth_data_hashes()
    monkeypatch.setattr(command, "_synth_data_hashes", lambda: {**real, "data_sha256": "0" * 64})
    with pytest.raises(BindkitError, match="the packaged synth data files"):
        run(out, 60, seed=4, progress=False)


def test_the_cli_names_the_option_in_one_line(
    base_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(base_run, tmp_path / "run")
    assert main(["synth", "generate", "--n", "60", "--seed", "1", "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bindkit: error: --seed: this run was started with 4, not 1")
    assert len(err.splitlines()) == 1


def test_a_second_writer_is_refused_with_the_holders_pid(tmp_path: Path) -> None:
    with (
        directory_lock(tmp_path, "bindkit synth generate"),
        pytest.raises(LockedError, match=rf"PID {os.getpid()}"),
    ):
        run(tmp_path, 10, progress=False)
    assert not (tmp_path / EXAMPLES).exists()
    from bindkit.synth.splits import write_splits

    (tmp_path / EXAMPLES).write_text("")
    with (
        directory_lock(tmp_path, "bindkit synth generate"),
        pytest.raises(LockedError, match=rf"PID {os.getpid()}"),
    ):
        write_splits(tmp_path)


def test_stray_temporary_files_of_a_killed_run_are_cleaned(base_run: Path, tmp_path: Path) -> None:
    out = _copy(base_run, tmp_path / "run")
    strays = [out / ".train.jsonl.k1w2.tmp", out / ".manifest.json.x9.tmp"]
    for path in strays:
        path.write_text("half")
    (out / ".splits-0123.tmp").mkdir()
    (out / ".splits-0123.tmp" / "val.jsonl").write_text("half")
    run(out, 60, seed=4, progress=False)
    assert not any(p.name.endswith(".tmp") for p in out.iterdir())


BAD_OPTIONS = [
    (["--n", "0"], "--n 0: must be at least 1"),
    (["--n", "10000001"], "--n 10000001: must be at least 1 and at most 10,000,000"),
    (["--n", "5", "--concurrency", "0"], "--concurrency 0"),
    (["--n", "5", "--concurrency", "5000"], "--concurrency 5000"),
    (["--n", "5", "--timeout", "0"], "--timeout 0.0: must be at least 0.001"),
    (["--n", "5", "--timeout", "nan"], "--timeout nan"),
    (["--n", "5", "--max-retries", "-1"], "--max-retries -1"),
    (["--n", "5", "--max-failures", "0"], "--max-failures 0"),
    (["--n", "5", "--max-attempts", "0"], "--max-attempts 0"),
    (["--n", "5", "--exclude-vocab", "/no/such/vocab"], "--exclude-vocab /no/such/vocab"),
    (
        ["--n", "5", "--backend", "openai", "--base-url", "ftp://x/v1", "--llm-model", "m"],
        "--base-url 'ftp://x/v1': must be an http:// or https:// URL",
    ),
    (["--n", "5", "--backend", "openai", "--llm-model", "m"], "--base-url (or OPENAI_BASE_URL)"),
]


@pytest.mark.parametrize(("argv", "message"), BAD_OPTIONS, ids=[m for _, m in BAD_OPTIONS])
def test_bad_options_fail_up_front(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    pytest.importorskip("httpx")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    out = tmp_path / "new"
    assert main(["synth", "generate", *argv, "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not out.exists()  # refused before any work


def test_a_mistyped_backend_gets_the_close_match() -> None:
    from bindkit.synth.backends import BackendOptions

    with pytest.raises(BindkitError, match="did you mean template"):
        make_backend("templat", BackendOptions())
    assert set(BACKENDS) == {"template", "openai"}


def _corrupt(out: Path, name: str, line: int, data: bytes) -> None:
    lines = (out / name).read_bytes().splitlines(keepends=True)
    lines[line - 1] = data
    (out / name).write_bytes(b"".join(lines))


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [
        (EXAMPLES, b'{"id": "x", broken\n', "corrupt JSON"),
        (EXAMPLES, b"\xff\xfe\x00garbage\x80\n", "not UTF-8 text"),
        (EXAMPLES, b"[1, 2]\n", "not a JSON object"),
        (REJECTED, b"{nope\n", "corrupt JSON"),
        (REJECTED, b'{"rule": 3}\n', "'rule' must be a string"),
    ],
)
def test_resume_over_a_corrupt_line_names_file_and_line(
    tmp_path: Path, name: str, data: bytes, message: str
) -> None:
    from bindkit.synth.backends.template import TemplateBackend
    from bindkit.synth.generate import generate

    class Sloppy(TemplateBackend):
        def produce(self, plan):  # type: ignore[no-untyped-def]
            ex = super().produce(plan)
            if plan.attempt % 4 == 0:
                ex.positive += " " + ex.objects[0]  # rejected: the object appears twice
            return ex

    generate(tmp_path, 20, Sloppy(seed=0), progress=False)
    assert len((tmp_path / REJECTED).read_bytes().splitlines()) >= 3
    _corrupt(tmp_path, name, 2, data)
    with pytest.raises(DataFormatError, match=rf"{name}:2: {message}") as info:
        run(tmp_path, 30, progress=False)
    assert "\n" not in str(info.value)


def test_duplicate_ids_on_resume_are_an_error(base_run: Path, tmp_path: Path) -> None:
    out = _copy(base_run, tmp_path / "run")
    lines = (out / EXAMPLES).read_bytes().splitlines(keepends=True)
    (out / EXAMPLES).write_bytes(b"".join([*lines, lines[3]]))
    with pytest.raises(DataFormatError, match=rf"{EXAMPLES}:61: duplicate id .* line 4\)"):
        run(out, 70, seed=4, progress=False)


def test_out_must_be_a_synth_run_or_empty(tmp_path: Path) -> None:
    saber = tmp_path / "saber"
    saber.mkdir()
    (saber / "saber.jsonl").write_text("")
    with pytest.raises(BindkitError, match="is a SABER directory"):
        run(saber, 5, progress=False)
    other = tmp_path / "other"
    other.mkdir()
    (other / "manifest.json").write_text(json.dumps({"format": "saber"}))
    with pytest.raises(BindkitError, match=r"holds another kind of data \(saber\)"):
        run(other, 5, progress=False)
    papers = tmp_path / "papers"
    papers.mkdir()
    (papers / "notes.txt").write_text("mine")
    with pytest.raises(BindkitError, match=r"not empty \(notes.txt, ...\) and not a synth run"):
        run(papers, 5, progress=False)
    (tmp_path / "file").write_text("x")
    with pytest.raises(BindkitError, match="is a file"):
        run(tmp_path / "file", 5, progress=False)
    assert sorted(p.name for p in papers.iterdir()) == ["notes.txt"]


def test_a_run_from_before_manifests_is_adopted(base_run: Path, tmp_path: Path) -> None:
    out = _copy(base_run, tmp_path / "run")
    (out / MANIFEST).unlink()
    result = run(out, 70, seed=4, progress=False)
    assert result.stats.resumed == 60 and (out / MANIFEST).is_file()


@pytest.mark.slow
def test_two_concurrent_generators_the_second_refuses(tmp_path: Path) -> None:
    import subprocess
    import sys
    import time

    command = [sys.executable, "-m", "bindkit", "synth", "generate", "--n", "3000", "-q"]
    command += ["--out", str(tmp_path), "--no-splits"]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while not (tmp_path / EXAMPLES).exists() and time.time() < deadline:
        time.sleep(0.05)
    second = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert first.wait(timeout=300) == 0
    assert second.returncode == 2
    assert f"(PID {first.pid})" in second.stderr and len(second.stderr.strip().splitlines()) == 1
    rows = (tmp_path / EXAMPLES).read_text().splitlines()
    assert len(rows) == 3000 and len({json.loads(r)["id"] for r in rows}) == 3000


def test_unwritable_or_impossible_out_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(BindkitError, match=r"--out .*file/s: cannot create it \(Not a directory\)"):
        run(tmp_path / "file" / "s", 5, progress=False)
    if os.geteuid() != 0:  # root writes anywhere
        (tmp_path / "ro").mkdir(mode=0o500)
        with pytest.raises(BindkitError, match="cannot create it"):
            run(tmp_path / "ro" / "s", 5, progress=False)


def test_a_full_disk_is_one_line_and_resumable(
    base_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    from bindkit.synth import generate as module

    out = _copy(base_run, tmp_path / "run")
    real = module._append

    def full(handle: object, row: dict[str, object]) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(out / EXAMPLES))

    monkeypatch.setattr(module, "_append", full)
    with pytest.raises(BindkitError, match=r"examples.jsonl: No space left on device; fix that"):
        run(out, 70, seed=4, progress=False)
    monkeypatch.setattr(module, "_append", real)
    assert run(out, 70, seed=4, progress=False).controller.accepted == 70


def test_a_smaller_target_keeps_what_is_there_and_says_so(
    base_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = _copy(base_run, tmp_path / "run")
    assert main(["synth", "generate", "--n", "10", "--seed", "4", "--out", str(out), "-q"]) == 0
    assert "already held 60 examples, more than --n 10" in capsys.readouterr().err


def test_bindkit_progress_0_silences_the_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BINDKIT_PROGRESS", "0")
    assert main(["synth", "generate", "--n", "5", "--out", str(tmp_path / "a")]) == 0
    assert "examples:" not in capsys.readouterr().err
    monkeypatch.setenv("BINDKIT_PROGRESS", "1")
    assert main(["synth", "generate", "--n", "5", "--out", str(tmp_path / "b")]) == 0
    assert "examples:" in capsys.readouterr().err
