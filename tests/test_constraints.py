"""The install reproduces: the README and CI install with constraints.txt, which pins every
dependency and agrees with the versions bindkit compares a rerun against."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import bindkit._environment as environment

ROOT = Path(__file__).resolve().parents[1]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[canonicalize_name(name)] = version
    return pins


def _install_line(text: str) -> str:
    return next(
        line for line in text.splitlines() if line.startswith("pip install") and "-e" in line
    )


@pytest.mark.parametrize("where", ["README.md", ".ci/run"])
def test_every_pip_install_of_the_setup_uses_the_constraints_file(where: str) -> None:
    line = _install_line((ROOT / where).read_text(encoding="utf-8"))
    commands = [part.strip() for part in line.split("&&")]
    assert len(commands) == 2
    for command in commands:
        argv = shlex.split(command)
        assert argv[:2] == ["pip", "install"]
        assert "-c" in argv and argv[argv.index("-c") + 1] == "constraints.txt", command


def test_ci_installs_exactly_as_the_readme_says() -> None:
    readme = _install_line((ROOT / "README.md").read_text(encoding="utf-8"))
    ci = _install_line((ROOT / ".ci/run").read_text(encoding="utf-8"))
    assert ci == readme


def test_every_dependency_of_the_readme_extras_is_pinned() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    line = _install_line((ROOT / "README.md").read_text(encoding="utf-8"))
    extras = re.search(r'-e "\.\[([^\]]+)\]"', line)
    assert extras is not None
    wanted = list(project["dependencies"])
    for extra in extras.group(1).split(","):
        wanted += project["optional-dependencies"][extra]
    pins = _pins()
    missing = sorted(
        {Requirement(r).name for r in wanted if canonicalize_name(Requirement(r).name) not in pins}
    )
    assert not missing, f"not in constraints.txt: {missing} (python scripts/write_constraints.py)"
    for requirement in map(Requirement, wanted):  # each pin satisfies pyproject's range
        version = pins[canonicalize_name(requirement.name)]
        assert requirement.specifier.contains(version, prereleases=True), (requirement, version)


def test_the_versions_bindkit_compares_against_are_the_pins() -> None:
    pins = _pins()
    assert set(environment.PINNED) == {
        "torch",
        "transformers",
        "sentence-transformers",
        "peft",
        "tokenizers",
        "numpy",
    }
    for name, version in environment.PINNED.items():
        assert pins[canonicalize_name(name)] == version, name


def _installed(monkeypatch: pytest.MonkeyPatch, **versions: str) -> None:
    fake = {"python": "3.11.7", **environment.PINNED, **versions}
    monkeypatch.setattr(environment, "library_versions", lambda: fake)


def test_a_rerun_under_other_versions_names_them_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed(monkeypatch, **{"sentence-transformers": "6.4.0", "numpy": "2.5.0"})
    line = environment.note_version_drift()
    assert line is not None
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "sentence-transformers 6.4.0 (table: 6.3.0)" in err
    assert "numpy 2.5.0 (table: 2.4.6)" in err
    assert "torch" not in err and "constraints.txt" in err


def test_the_pinned_install_and_local_labels_print_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _installed(monkeypatch, torch=environment.PINNED["torch"] + "+cu128")
    assert environment.note_version_drift() is None
    assert capsys.readouterr().err == ""


def test_a_folder_made_under_other_versions_is_compared_with_its_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _installed(monkeypatch)
    earlier = {**environment.PINNED, "peft": "0.20.0", "accelerate": "0.1"}
    line = environment.version_drift(earlier)
    assert line is not None and "peft 0.21.2 (table: 0.20.0)" in line
    assert "earlier run" in line and "accelerate" not in line
    assert environment.version_drift(dict(environment.PINNED)) is None
