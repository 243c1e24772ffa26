from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from bindkit.cli import main


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_generate_then_validate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "saber"
    code, stdout, _ = run(["saber", "generate", "--out", str(out), "--per-n", "4"], capsys)
    assert code == 0
    assert "36 MCQs" in stdout and "144 candidates" in stdout
    code, stdout, _ = run(["saber", "validate", str(out)], capsys)
    assert code == 0 and "every rule holds" in stdout


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--per-n", "5"], "--per-n 5: must be a positive even number"),
        (["--n-max", "80"], "N = 80 needs at least 80"),
        (["--n-min", "1"], "--n-min 1: must be at least 2"),
        (["--vocab", "/nonexistent/vocab"], "/nonexistent/vocab: vocabulary directory not found"),
    ],
)
def test_bad_generate_input_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = run(["saber", "generate", "--out", str(tmp_path / "o"), *argv], capsys)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("bindkit: error: ")
    assert message in err
    assert not (tmp_path / "o" / "saber.jsonl").exists()


def test_non_empty_output_and_malformed_vocab(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], vocab_copy: Path
) -> None:
    out = tmp_path / "o"
    assert run(["saber", "generate", "--out", str(out), "--per-n", "2"], capsys)[0] == 0
    code, _, err = run(["saber", "generate", "--out", str(out), "--per-n", "2"], capsys)
    assert code == 2 and "pass --overwrite" in err
    (vocab_copy / "objects.txt").write_text("cube\ncube\n")
    code, _, err = run(
        ["saber", "generate", "--out", str(tmp_path / "p"), "--vocab", str(vocab_copy)], capsys
    )
    assert code == 2 and "objects.txt:2: duplicate object 'cube'" in err
    assert err.count("\n") == 1


def test_validate_reports_violations_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "o"
    run(["saber", "generate", "--out", str(out), "--per-n", "2", "--n-max", "3"], capsys)
    lines = (out / "saber.jsonl").read_text().splitlines()
    lines[1] = lines[1][:40]
    (out / "saber.jsonl").write_text("\n".join(lines) + "\n")
    code, stdout, err = run(["saber", "validate", str(out)], capsys)
    assert code == 1
    assert "saber.jsonl:2: [format] corrupt JSON" in stdout
    assert "format" in err and "manifest" in err


def test_validate_missing_data_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["saber", "validate", str(tmp_path)], capsys)
    assert code == 2 and "saber.jsonl: not found" in err and err.count("\n") == 1


def test_console_script_help() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "bindkit", "saber", "generate", "--help"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--per-n" in result.stdout and "--overwrite" in result.stdout
