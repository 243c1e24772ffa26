"""Issue 21: an output path never replaces or lands inside an input (`_io.check_not_input`)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bindkit._io import check_not_input
from bindkit.errors import BindkitError


def test_the_same_file_by_another_spelling_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "d" / "p.jsonl"
    data.parent.mkdir()
    data.write_text("{}\n")
    (tmp_path / "link").symlink_to(tmp_path / "d")
    for out in (data, tmp_path / "d" / ".." / "d" / "p.jsonl", tmp_path / "link" / "p.jsonl"):
        with pytest.raises(BindkitError, match=r"--out .*: is the input .*p\.jsonl; choose"):
            check_not_input(out, [data])


def test_a_hard_link_is_the_same_file(tmp_path: Path) -> None:
    data = tmp_path / "p.jsonl"
    data.write_text("{}\n")
    os.link(data, tmp_path / "q.jsonl")
    with pytest.raises(BindkitError, match="is the input"):
        check_not_input(tmp_path / "q.jsonl", [data])


def test_inside_an_input_directory_and_holding_an_input_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    data = tmp_path / "s"
    data.mkdir()
    with pytest.raises(BindkitError, match=r"--data-out s/x\.html: is inside the input directory"):
        check_not_input(Path("s/x.html"), [Path("s")], option="--data-out")
    with pytest.raises(BindkitError, match="holds the input"):
        check_not_input(tmp_path, [data / "saber.jsonl"])
    (tmp_path / "link").symlink_to(data)
    with pytest.raises(BindkitError, match="is inside the input directory"):
        check_not_input(tmp_path / "link" / "new" / "x.html", [data])


def test_unrelated_and_sibling_paths_pass(tmp_path: Path) -> None:
    data = tmp_path / "s" / "saber.jsonl"
    check_not_input(tmp_path / "s" / "review.html", [data, tmp_path / "s" / "images"])
    check_not_input(tmp_path / "s2", [tmp_path / "s"])  # a shared name prefix is not nesting
