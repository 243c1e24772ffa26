"""File-level rules of ``bindkit synth validate``, triplet files, the reviewers' fidelity cases,
bad inputs, the multi-process path, and reproducible generation."""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bindkit.cli import main
from bindkit.errors import DataFormatError
from bindkit.synth.backends.template import TemplateBackend
from bindkit.synth.constructions import CONSTRUCTIONS
from bindkit.synth.diversity import Controller
from bindkit.synth.example import Example, complete
from bindkit.synth.example_rules import anaphoric_order
from bindkit.synth.generate import EXAMPLES, generate
from bindkit.synth.rejection import count_rules
from bindkit.synth.rowkinds import TRIPLET_RULES
from bindkit.synth.splits import read_examples
from bindkit.synth.validate import DATASET_RULES, validate_file

# ../shared next to the repository root (BINDKIT_SHARED overrides it)
SHARED = Path(os.environ.get("BINDKIT_SHARED", Path(__file__).parents[2] / "shared"))
CASES_DIR = SHARED / "reviews" / "fidelity-cases"

# the rule each reviewer's case must be rejected with (the planted versions of the T cases are
# in test_synth.py's CASES)
FIDELITY: dict[str, str] = {
    "T1_negative_not_permutation": "permutation",
    "T2a_predicative_positive_contradicts_bindings": "text_bindings",
    "T2b_anaphoric_positive_contradicts_bindings": "text_bindings",
    "T2c_respective_positive_contradicts_bindings": "structure",
    "T4_triple_swap_different_kept_pair": "kept_pair",
    "T5_attr_bundle_cross_slot_swap": "slot_swap",
    "T5b_attr_bundle_cross_slot_swap_no_intended": "slot_swap",
    "T11_anaphoric_ambiguous_one_other": "anaphora",
    "T17_predicative_without_copula": "predication",
    "T18_negative_with_extra_punctuation": "punctuation",
    "T20_hyphenated_attribute": "single_word",
    "T21_two_word_object": "single_word",
    "T22_attribute_repeated_in_hyphenated_token": "once",
    "T23_plural_noun_with_a_(generated)": "agreement",
}
FILES = {"dup.jsonl": "duplicate_set", "cap.jsonl": "frequency_cap"}


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """700 generated examples as JSON rows (112 of each of five types, 70 of each deferred)."""
    out = tmp_path_factory.mktemp("run")
    generate(out, 700, TemplateBackend(seed=5), seed=5, progress=False)
    return [json.loads(x) for x in (out / EXAMPLES).read_text().splitlines()]


def write(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def rules_of(failures: list[Any]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for where, example_id, rejection in failures:
        out.setdefault(example_id if example_id != "?" else where, set()).add(rejection.rule)
    return out


# -- the reviewers' cases --------------------------------------------------------------------
@pytest.mark.skipif(not CASES_DIR.is_dir(), reason=f"no fidelity cases at {CASES_DIR}")
def test_every_shared_fidelity_case_is_rejected_with_its_rule() -> None:
    _, failures = validate_file(CASES_DIR / "synth_adv.jsonl")
    per_line: dict[str, list[str]] = {}
    for _where, example_id, rejection in failures:
        per_line.setdefault(example_id, []).append(rejection.rule)
    rows = [json.loads(x) for x in (CASES_DIR / "synth_adv.jsonl").read_text().splitlines()]
    assert {r["id"] for r in rows} == set(FIDELITY)
    for case, rule in FIDELITY.items():
        assert per_line[case][0] == rule, case
    for name, rule in FILES.items():
        _, failures = validate_file(CASES_DIR / name, dataset=True)
        assert rule in count_rules(r for _, _, r in failures), name
    _, failures = validate_file(CASES_DIR / "train_with_deferred.jsonl")
    assert {r.rule for _, _, r in failures} == {"heldout_in_split"}


def test_planted_file_level_cases(tmp_path: Path, run: list[dict[str, Any]]) -> None:
    """Planted versions of dup.jsonl, cap.jsonl and train_with_deferred.jsonl."""
    row = run[0]
    _, failures = validate_file(write(tmp_path / "dup.jsonl", [row, row]))
    assert [(w, r.rule) for w, _, r in failures] == [
        ("dup.jsonl:2", "duplicate_id"),
        ("dup.jsonl:2", "duplicate_set"),
    ]
    copies = [dict(row, id=f"c{i}") for i in range(40)]
    _, failures = validate_file(write(tmp_path / "cap.jsonl", copies), dataset=True)
    counts = count_rules(r for _, _, r in failures)
    assert counts["duplicate_set"] == 39 and counts["frequency_cap"] == 30  # 11th copy on
    triplets = [
        {
            "query": r["query"],
            "positive": r["positive"],
            "negative": r["negatives"]["object"],
            "type": r["type"],
            "negative_kind": "object",
        }
        for r in run[:14]
    ]
    _, failures = validate_file(write(tmp_path / "train.jsonl", triplets))
    deferred = sum(r["type"].startswith("deferred") for r in run[:14])
    assert deferred and [r.rule for _, _, r in failures] == ["heldout_in_split"] * deferred
    _, failures = validate_file(write(tmp_path / "heldout_x.jsonl", triplets))
    assert failures == []
    _, failures = validate_file(write(tmp_path / "rows.jsonl", triplets), split="val")
    assert len(failures) == deferred


# -- file-level rules -----------------------------------------------------------------------
def test_a_generated_run_is_valid_as_a_dataset(tmp_path: Path, run: list[dict[str, Any]]) -> None:
    checked, failures = validate_file(write(tmp_path / "run.jsonl", run), dataset=True)
    assert checked == 700 and failures == []


def test_mix_and_anaphoric_balance(tmp_path: Path, run: list[dict[str, Any]]) -> None:
    cycles = [r for r in run if r["type"] == "triple_bind_cycle"][:40]
    skewed = [r for r in run if r not in cycles]
    _, failures = validate_file(write(tmp_path / "mix.jsonl", skewed))
    assert failures == []  # mix is a --dataset rule
    _, failures = validate_file(tmp_path / "mix.jsonl", dataset=True)
    mix = [r.message for _, _, r in failures if r.rule == "mix"]
    assert mix == ["72 triple_bind_cycle examples of 660, expected 106"]
    anaphoric = [r for r in run if r["type"] == "deferred_bind_anaphoric"]
    orders = [anaphoric_order(Example.from_json(r, "x")) for r in anaphoric]
    assert orders.count("second_first") == len(orders) // 2  # generation balances exactly
    firsts = [r for r, o in zip(anaphoric, orders, strict=True) if o == "first_first"]
    unbalanced = copy.deepcopy([r for r in run if r["type"] != "deferred_bind_anaphoric"])
    unbalanced += copy.deepcopy(firsts * 2)
    for i, r in enumerate(unbalanced):
        r["id"] = f"u{i}"
    _, failures = validate_file(write(tmp_path / "unbalanced.jsonl", unbalanced), dataset=True)
    assert "anaphoric_balance" in count_rules(r for _, _, r in failures)


def test_rule_tables_are_documented() -> None:
    assert set(DATASET_RULES) == {
        "duplicate_id",
        "duplicate_set",
        "frequency_cap",
        "mix",
        "anaphoric_balance",
    }
    assert set(TRIPLET_RULES) == {"schema", "permutation", "negative_distinct", "heldout_in_split"}


# -- bad inputs -----------------------------------------------------------------------------
def test_bad_inputs_are_one_line_errors(tmp_path: Path, run: list[dict[str, Any]]) -> None:
    (tmp_path / "empty.jsonl").write_text("\n\n")
    with pytest.raises(DataFormatError, match="empty"):
        validate_file(tmp_path / "empty.jsonl")
    with pytest.raises(DataFormatError, match="is a directory"):
        validate_file(tmp_path)
    (tmp_path / "binary.jsonl").write_bytes(b'{"id": 1}\n\x89PNG\xff\xfe\n')
    with pytest.raises(DataFormatError, match=r"binary.jsonl:2: not UTF-8"):
        validate_file(tmp_path / "binary.jsonl")
    bom = tmp_path / "bom.jsonl"
    bom.write_bytes(b"\xef\xbb\xbf" + json.dumps(run[0]).encode() + b"\n")
    assert validate_file(bom) == (1, [])
    wrong = []
    for key, value in (("targets", "x"), ("intended", "x"), ("slots", [1]), ("source", 3)):
        wrong.append(dict(run[0], id=f"w-{key}", **{key: value}))
    wrong.append(dict(run[1], targets=dict(run[1]["targets"], length_band="10-15")))
    _, failures = validate_file(write(tmp_path / "wrong.jsonl", wrong))
    assert [r.rule for _, _, r in failures] == ["schema"] * 5


def test_cli_validate(tmp_path: Path, run: list[dict[str, Any]], capsys: Any) -> None:
    path = write(tmp_path / "run.jsonl", run)
    assert main(["synth", "validate", str(path), "--dataset"]) == 0
    assert "700 rows, 700 valid, 0 rejected" in capsys.readouterr().err
    write(path, [*run, run[0]])
    assert main(["synth", "validate", str(path)]) == 1
    captured = capsys.readouterr()
    assert "run.jsonl:701 ex-00000000: [duplicate_id]" in captured.out
    assert "duplicate_set" in captured.err
    assert main(["synth", "validate", str(tmp_path)]) == 2
    assert "is a directory" in capsys.readouterr().err


# -- multi-process path ---------------------------------------------------------------------
def test_multi_process_equals_single_process(tmp_path: Path, run: list[dict[str, Any]]) -> None:
    broken = copy.deepcopy(run[3])
    broken["negatives"]["attribute"] += " extra"
    rows: list[Any] = [*run[:300], "{corrupt", "", broken, *run[:50], *run[300:]]
    path = write(tmp_path / "big.jsonl", rows)
    single = validate_file(path, workers=1, chunk=64, dataset=True)
    multi = validate_file(path, workers=2, chunk=64, dataset=True)
    assert single == multi
    counts = count_rules(r for _, _, r in single[1])
    assert counts["duplicate_set"] == 51 and counts["schema"] == 1 and counts["permutation"] == 1
    assert single[0] == len(rows) - 1  # the blank line is skipped


# -- reproducibility ------------------------------------------------------------------------
def test_generation_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Two processes with one --seed and different PYTHONHASHSEED write the same bytes."""
    src = Path(__file__).parents[1] / "src"
    outputs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / hash_seed
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, PYTHONPATH=str(src))
        command = [sys.executable, "-m", "bindkit", "synth", "generate", "--n", "400"]
        command += ["--out", str(out), "--seed", "3", "-q", "--no-splits"]
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, timeout=120)
        outputs.append((out / EXAMPLES).read_bytes())
    assert outputs[0] == outputs[1]


# -- template text --------------------------------------------------------------------------
def test_template_text_claims_only_what_it_holds(tmp_path: Path) -> None:
    from bindkit.synth.backends.template import VERBS, scene_phrase
    from bindkit.synth.example_rules import plural_only
    from bindkit.synth.rowkinds import linking_words

    controller, backend = Controller(), TemplateBackend(seed=1)
    verbs = set(VERBS) | linking_words()
    for attempt in range(350):
        kind = sorted(CONSTRUCTIONS)[attempt % 7]
        ex = complete(backend.produce(controller.plan(attempt, 1, kind)), random.Random(0))
        text = ex.positive
        tokens = [w.strip(',.?"').lower() for w in text.split()]
        if ex.targets["register"]:  # a register it claims is named in the text
            assert ex.targets["register"] in text
        if ex.targets["context"]:
            assert " ".join(scene_phrase(ex.targets["context"])) in text
        assert not plural_only() & set(tokens)
        assert verbs & set(tokens), text  # a main verb (measured with a parser in benchmarks)
        sentences = [s for s in text.replace("?", ".").split(". ") if s]
        assert all(s[0].isupper() or s[0] == '"' for s in sentences), text


def test_read_examples_still_reads_generated_files(tmp_path: Path, run: list[Any]) -> None:
    assert len(read_examples(write(tmp_path / "e.jsonl", run))) == 700
