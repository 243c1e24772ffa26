"""Every "missing X" error names the command that makes X."""

from __future__ import annotations

from pathlib import Path

import pytest

from bindkit.cli import main


def _error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["eval", "--model", "bow", "--task", "sts"], "`bindkit fetch sts`"),
        (["eval", "--model", "bow", "--task", "triplets"], "`bindkit synth generate"),
        (["eval", "--model", "bow", "--task", "sts", "--data", "SICK.txt"], "`bindkit fetch sts`"),
    ],
)
def test_missing_data_names_the_command(
    argv: list[str], command: str, capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("BINDKIT_DATA", raising=False)
    assert command in _error([*argv, "--out", "r", "-q"], capsys)


def test_missing_training_files_name_the_command(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["train", "triplets", "--model", "st:default", "--out", str(tmp_path / "run")]
    assert "`bindkit synth generate" in _error([*args, "--train", "nothere.jsonl"], capsys)
    (tmp_path / "t.jsonl").write_text('{"query": "a", "positive": "b", "negative": "c"}\n')
    sts = [*args, "--train", str(tmp_path / "t.jsonl"), "--sts", "SICK_trial.txt"]
    assert "`bindkit fetch sts`" in _error(sts, capsys)


def test_a_model_not_downloaded_names_the_download_command() -> None:
    from bindkit.embed.weights import require_checkpoint
    from bindkit.errors import BindkitError

    with pytest.raises(BindkitError, match=r"`hf download someone/no-such-model`"):
        require_checkpoint("someone/no-such-model", "st")


def test_eval_device_maps_to_each_spec() -> None:
    from bindkit.cli.eval import with_device

    assert with_device("st:default", "cpu") == "st:default+device=cpu"
    assert (
        with_device("builtin:tiny-clip+dim=8", "cuda:1") == "builtin:tiny-clip+dim=8+device=cuda:1"
    )
    assert with_device("st:default+device=cuda:1", "cpu") == "st:default+device=cuda:1"
    assert with_device("bow", "cuda") == "bow"  # no torch model: nothing to place
    assert with_device("st:default", None) == "st:default"


def test_eval_device_runs_and_refuses_in_one_line(
    small_saber: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torch = pytest.importorskip("torch")
    args = ["eval", "--model", "builtin:tiny-clip", "--model", "bow", "--data", str(small_saber)]
    args += ["--pairings", "tt", "--no-cache", "--no-report", "-q"]
    assert main([*args, "--device", "cpu", "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    if not torch.cuda.is_available():
        err = _error([*args, "--device", "cuda", "--out", str(tmp_path / "r2")], capsys)
        assert "device='cuda'" in err and "CUDA build of torch" in err


def test_render_against_nothing_listening_stops_at_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A refused connection is not retried (5 retries would take 62 s per image)."""
    import socket
    import time

    pytest.importorskip("httpx")
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    saber = tmp_path / "saber"
    assert main(["saber", "generate", "--out", str(saber), "--per-n", "2", "-q"]) == 0
    started = time.monotonic()
    args = ["saber", "render", str(saber), "--backend", "openai", "--model", "m", "-q"]
    err = _error([*args, "--base-url", f"http://127.0.0.1:{port}/v1"], capsys)
    assert time.monotonic() - started < 20
    assert "cannot connect" in err and "rerun the same command to resume" in err


def test_open_clip_weights_not_downloaded_name_the_download(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from bindkit.embed.backends.open_clip import OpenClipEmbedder, import_open_clip
    from bindkit.errors import BindkitError

    open_clip = import_open_clip()

    def offline(*_args: object, **_kwargs: object) -> None:
        logging.error("Failed to download weights for tag 'openai'")  # as open_clip does
        raise RuntimeError("Failed to download weights for tag 'openai'")

    monkeypatch.setattr(open_clip, "create_model", offline)
    with pytest.raises(BindkitError, match=r"`hf download timm/vit_base_patch32_clip_224\.openai`"):
        OpenClipEmbedder("ViT-B-32/openai", device="cpu", spec="open_clip:ViT-B-32/openai")
    # the library's own "ERROR:root:" line is not printed beside bindkit's
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
