"""Bad input files for SABER, triplets and STS: one line naming the file (and row)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.tasks.text.sts import read_sts
from bindkit.tasks.text.triplets import read_triplets

HEADER = "sentence_A\tsentence_B\trelatedness_score\n"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (HEADER + "a\tb\tnan\nc\td\t2\n", r"row 2: score 'nan' is not finite"),
        (HEADER + "a\tb\t1\nc\td\tinf\n", r"row 3: score 'inf' is not finite"),
        (HEADER + "a\tb\t3\nc\td\t3\n", r"every gold score is 3.0; Spearman is undefined"),
        (HEADER + "a\tb\t3\n", r"only one pair; Spearman needs at least two"),
        (HEADER, r"no rows found"),
        ("", r"empty file"),
        (HEADER + "a\tb\n", r"row 2: no 'relatedness_score' value"),
    ],
)
def test_sts_rejects_unusable_scores(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "s.tsv"
    path.write_text(body)
    with pytest.raises(DataFormatError, match=message):
        read_sts(path)


def test_sts_decoding_and_jsonl_shapes(tmp_path: Path) -> None:
    latin = tmp_path / "latin.tsv"
    latin.write_bytes((HEADER + "caf\xe9\tb\t1\nc\td\t2\n").encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"latin\.tsv:2: not UTF-8 \(byte 0xe9\)"):
        read_sts(latin)
    binary = tmp_path / "bin.tsv"
    binary.write_bytes(b"\x00\x01\x02")
    with pytest.raises(DataFormatError, match="binary data"):
        read_sts(binary)
    arrays = tmp_path / "a.jsonl"
    arrays.write_text('["x", "y", 1]\n["z", "w", 2]\n')
    with pytest.raises(DataFormatError, match="row 1: must be a JSON object"):
        read_sts(arrays)
    missing = tmp_path / "m.jsonl"
    missing.write_text('{"s1": "x", "s2": "y", "score": 1}\n{"s1": "z", "score": 2}\n')
    with pytest.raises(DataFormatError, match="row 2: no 's2' value"):
        read_sts(missing)
    bom = tmp_path / "bom.tsv"
    bom.write_bytes(b"\xef\xbb\xbf" + (HEADER + "a\tb\t1\nc\td\t2\n").encode())
    assert read_sts(bom)[2].tolist() == [1.0, 2.0]


def test_triplets_refuse_latin1_instead_of_replacing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes('{"query": "caf\xe9", "positive": "a", "negative": "b"}\n'.encode("latin-1"))
    with pytest.raises(DataFormatError, match=r"t\.jsonl:1: not UTF-8"):
        read_triplets(path)


def test_saber_duplicate_mcq_ids_are_an_error(tmp_path: Path, small_saber: Path) -> None:
    data = tmp_path / "dup"
    data.mkdir()
    lines = (small_saber / "saber.jsonl").read_text().splitlines()
    (data / "saber.jsonl").write_text("\n".join([*lines, lines[0]]) + "\n")
    first = json.loads(lines[0])["id"]
    with pytest.raises(BindkitError, match=f"MCQ id '{first}' appears twice"):
        evaluate(["bow"], data=data, out=tmp_path / "r", cache=False, verbose=False)
