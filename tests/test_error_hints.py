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
