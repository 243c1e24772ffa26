"""The validator reads the text, never only the declaration (#22.3): unknown keys, slots checked
against the attribute lexicon, undeclared attribute-object pairs, held-out membership by text,
and the split-set check run by `synth validate --split-set`, `eval --task triplets` and
`train triplets`."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main
from bindkit.errors import DataFormatError
from bindkit.synth import run as synth_run
from bindkit.synth.backends.template import TemplateBackend
from bindkit.synth.controls import adjective_families
from bindkit.synth.example import Example
from bindkit.synth.example_rules import attribute_lexicon, validate_example
from bindkit.synth.generate import EXAMPLES, generate
from bindkit.synth.rowkinds import reads_deferred, validate_triplet
from bindkit.synth.splitset import check_split_set, require_split_set
from bindkit.synth.text import indefinite_article
from bindkit.synth.validate import validate_file


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    out = tmp_path_factory.mktemp("trust")
    generate(out, 300, TemplateBackend(seed=3), seed=3, progress=False)
    return [json.loads(x) for x in (out / EXAMPLES).read_text().splitlines()]


@pytest.fixture(scope="module")
def split_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("splitset") / "run"
    synth_run(out, 300, seed=2, progress=False, exclude_vocab="builtin", mixed_lengths=True)
    return out


def _first(rows: list[dict[str, Any]], kind: str, **where: Any) -> dict[str, Any]:
    return json.loads(
        json.dumps(
            next(
                r
                for r in rows
                if r["type"] == kind and all(bool(r[k]) == v for k, v in where.items())
            )
        )
    )


def _rules(row: dict[str, Any]) -> list[str]:
    return [r.rule for r in validate_example(Example.from_json(row, "x"))]


def _rename(row: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    """Replace one word everywhere in an example (texts, pairs, slots)."""
    text = json.dumps(row)
    return dict(json.loads(re.sub(rf"\b{old}\b", new, text)))


def test_unknown_keys_are_errors(rows: list[dict[str, Any]]) -> None:
    row = _first(rows, "pair_swap")
    assert _rules(row) == []
    third = dict(row, negatives={**row["negatives"], "both": row["negatives"]["object"]})
    with pytest.raises(DataFormatError, match="'negatives' must be"):
        Example.from_json(third, "x")
    with pytest.raises(DataFormatError, match="unknown key 'extra' in an example"):
        Example.from_json(dict(row, extra=1), "x")
    with pytest.raises(DataFormatError, match="unknown key 'band' in 'targets'"):
        Example.from_json(dict(row, targets={**row["targets"], "band": [1, 2]}), "x")


def _same_article_word(family: str, like: str, taken: set[str]) -> str:
    return next(
        w
        for w in adjective_families()[family]
        if w not in taken and indefinite_article(w) == indefinite_article(like) and w.isalpha()
    )


def test_bundle_slots_are_checked_against_the_lexicon(rows: list[dict[str, Any]]) -> None:
    row = _first(rows, "attr_bundle")
    assert _rules(row) == []
    family = attribute_lexicon()
    (first, _), (second, _) = row["bindings"][:2]
    taken = set(json.dumps(row).replace('"', " ").split())
    # two words of the first attribute's family on one object, the slots left as declared
    twin = _same_article_word(family[first], second, taken)
    assert _rules(_rename(row, second, twin)) == ["slot_lexicon"]  # declared a family it is not
    opaque = {"s1" if s == family[first] else "s2" for s in row["slots"].values()}
    assert len(opaque) == 2  # slot names the lexicon cannot contradict
    renamed = dict(
        row, slots={a: "s1" if s == family[first] else "s2" for a, s in row["slots"].items()}
    )
    assert _rules(renamed) == []
    assert _rules(_rename(renamed, second, twin)) == ["slot_lexicon"]  # two words of one family
    # both slots declared as each other's family: the declaration is consistent, the words not
    swap = {family[first]: family[second], family[second]: family[first]}
    mislabelled = dict(row, slots={a: swap[s] for a, s in row["slots"].items()})
    assert _rules(mislabelled) == ["slot_lexicon"]
    # an attribute the lexicon does not know: accepted, counted as unverifiable
    unknown = _rename(row, second, "zorbish" if indefinite_article(second) == "a" else "ozbish")
    assert _rules(unknown) == []


def test_unverifiable_slots_are_counted(rows: list[dict[str, Any]], tmp_path: Path) -> None:
    row = _first(rows, "attr_bundle")
    second = row["bindings"][1][0]
    unknown = _rename(row, second, "zorbish" if indefinite_article(second) == "a" else "ozbish")
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps(dict(unknown, id="other")) + "\n" + json.dumps(row) + "\n")
    notes: Counter[str] = Counter()
    _, failures = validate_file(path, notes=notes)
    assert failures == [] and notes["unverifiable_slots"] == 1


def test_an_undeclared_pair_in_the_text_is_rejected(rows: list[dict[str, Any]]) -> None:
    row = _first(rows, "pair_swap", distractors=True)
    assert _rules(row) == []
    a, o = row["distractors"][0]
    assert f"{a} {o}" in row["positive"]
    assert _rules(dict(row, distractors=row["distractors"][1:])) == ["text_pairs"]


def test_heldout_membership_is_read_from_the_text(rows: list[dict[str, Any]]) -> None:
    for kind in ("deferred_bind_anaphoric", "deferred_bind_respective"):
        row = _first(rows, kind)
        assert reads_deferred(row["positive"])
        triplet = {
            "query": row["query"],
            "positive": row["positive"],
            "negative": row["negatives"]["object"],
            "type": "predicative",  # relabelled
            "negative_kind": "object",
        }
        assert [r.rule for r in validate_triplet(triplet, "train")] == ["heldout_in_split"]
        assert validate_triplet(triplet, "heldout") == []
    for row in rows:
        if not row["type"].startswith("deferred"):
            assert not reads_deferred(row["positive"]), row["positive"]


def _append(path: Path, line: str) -> None:
    with path.open("a") as handle:
        handle.write(line)


def test_the_split_set_check_catches_a_row_crossing_splits(
    split_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checked, failures = check_split_set(split_run)
    assert checked > 0 and failures == []
    require_split_set(split_run / "no_overlap" / "train.jsonl")
    assert main(["synth", "validate", "--split-set", str(split_run)]) == 0
    for target in ("train.jsonl", "no_overlap/train.jsonl", "val.jsonl"):
        copy = tmp_path / target.replace("/", "_")
        import shutil

        shutil.copytree(split_run, copy)
        source = "test.jsonl" if target != "val.jsonl" else "heldout_deferred_bind_anaphoric.jsonl"
        _append(copy / target, (copy / source).read_text().splitlines()[0] + "\n")
        _, failures = check_split_set(copy)
        assert [r.rule for _, _, r in failures] in (
            ["split_leak"],
            ["heldout_in_split"],
        ), target
        assert failures[0][0] == f"{target}:{len((copy / target).read_text().splitlines())}"
        assert main(["synth", "validate", "--split-set", str(copy)]) == 1
        assert "[split_leak]" in capsys.readouterr().out or target == "val.jsonl"
        with pytest.raises(DataFormatError):
            require_split_set(copy / target)


def test_an_id_crossing_splits_is_a_leak(split_run: Path, tmp_path: Path) -> None:
    import shutil

    copy = tmp_path / "ids"
    shutil.copytree(split_run, copy)
    for name, value in (("train.jsonl", "ex-1"), ("test.jsonl", "ex-1")):
        lines = (copy / name).read_text().splitlines()
        lines[0] = json.dumps(dict(json.loads(lines[0]), id=value))
        (copy / name).write_text("\n".join(lines) + "\n")
    _, failures = check_split_set(copy)
    assert [r.rule for _, _, r in failures] == ["split_leak"]
    assert "the id 'ex-1'" in failures[0][2].message


def test_eval_refuses_a_leaking_split_file(split_run: Path, tmp_path: Path) -> None:
    import shutil

    from bindkit.tasks.text.triplets import TripletTask

    copy = tmp_path / "leak"
    shutil.copytree(split_run, copy)
    # a leak that keeps the recorded hashes: splits.json is rewritten to match
    _append(copy / "val.jsonl", (copy / "train.jsonl").read_text().splitlines()[0] + "\n")
    summary = json.loads((copy / "splits.json").read_text())
    from bindkit._io import sha256_file

    summary["files"]["val.jsonl"]["sha256"] = sha256_file(copy / "val.jsonl")
    (copy / "splits.json").write_text(json.dumps(summary))
    with pytest.raises(DataFormatError, match=r"val\.jsonl:\d+: \[split_leak\]"):
        TripletTask().load(copy / "test.jsonl")
    TripletTask().load(split_run / "mixed_lengths" / "train.jsonl")


def test_validate_needs_a_file_or_a_split_set(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["synth", "validate"]) == 2
    assert "give a FILE or --split-set DIR" in capsys.readouterr().err


def test_train_reads_its_data_through_the_split_set_check(split_run: Path, tmp_path: Path) -> None:
    import shutil

    from bindkit.tasks.text import triplets
    from bindkit.train.config import TrainConfig
    from bindkit.train.inputs import check_inputs

    copy = tmp_path / "leak"
    shutil.copytree(split_run, copy)
    _append(copy / "train.jsonl", (copy / "test.jsonl").read_text().splitlines()[0] + "\n")
    with pytest.raises(DataFormatError, match=r"split|splits\.json"):
        triplets.read_triplets(copy / "train.jsonl")
    assert triplets.read_triplets(split_run / "train.jsonl")
    # `train triplets` refuses the leaky file before any model loads
    config = TrainConfig(
        model="st:default", train=str(copy / "train.jsonl"), out=str(tmp_path / "o")
    )
    with pytest.raises(DataFormatError, match=r"split|splits\.json"):
        check_inputs(config)


def test_validating_one_split_file_reports_its_leaks(
    split_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import shutil

    copy = tmp_path / "one"
    shutil.copytree(split_run, copy)
    assert main(["synth", "validate", str(copy / "train.jsonl")]) == 0
    _append(copy / "train.jsonl", (copy / "test.jsonl").read_text().splitlines()[0] + "\n")
    capsys.readouterr()
    assert main(["synth", "validate", str(copy / "train.jsonl")]) == 1
    assert "[split_leak]" in capsys.readouterr().out
