# ruff: noqa: E501 - the matrix reads best as a table, one row per line
"""A training mix in a synth run (``bindkit synth mix``, ``synth.mixes.write_mix``): the demo's
training set, checked row by row and against the run's other splits before it is written, and
guarded by the split-set check afterwards; bad inputs as reliability-matrix rows
(``tests/_matrix.py``)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from _matrix import C, Cell, check_outcome, run_matrix_case
from bindkit.cli import main
from bindkit.errors import BindkitError, DataFormatError
from bindkit.synth.mixes import MIXES, mix_file, mix_record, training_triplets, write_mix
from bindkit.synth.splits import no_overlap, read_examples, saber_words, split, verify_splits
from bindkit.synth.splitset import check_split_set, require_split_set
from bindkit.synth.validate import validate_file

MIX = "fullpararelnegLEOR"
FILE = mix_file(MIX)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A template synth run of 300 examples with its split set (seed 3), and a copy of it with
    the shipped mix written."""
    root = tmp_path_factory.mktemp("mix-base")
    argv = ["synth", "generate", "--backend", "template", "-q", "--n", "300", "--seed", "3"]
    assert main([*argv, "--out", str(root / "synth")]) == 0
    shutil.copytree(root / "synth", root / "mixed")
    write_mix(root / "mixed", MIX)
    return root


def _run(base: Path, tmp_path: Path, name: str = "mixed") -> Path:
    run = tmp_path / name
    shutil.copytree(base / name, run)
    return run


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_the_mix_file_holds_the_mix_of_the_no_overlap_train_pool(base: Path) -> None:
    run = base / "mixed"
    train = no_overlap(split(read_examples(run / "examples.jsonl"), 3)["train"], saber_words(None))
    assert _rows(run / FILE) == training_triplets(train, 3, MIX)  # the split set's seed
    record = json.loads((run / mix_record(MIX)).read_text())
    assert (record["mix"], record["seed"], record["split_seed"]) == (MIX, 3, 3)
    assert record["kinds"] == list(MIXES[MIX]) and record["rows"] == len(_rows(run / FILE))
    assert record["examples"]["train_pool"] == len(train)
    assert sum(record["row_kinds"].values()) == record["rows"] and len(record["row_kinds"]) >= 6
    assert record["exclude_vocab"]["source"] == "builtin"
    checked, failures = validate_file(run / FILE)
    assert (checked, failures) == (record["rows"], [])
    verify_splits(run)  # the set stays whole: the mix is no file of it
    assert check_split_set(run)[1] == []
    require_split_set(run / FILE)


def test_the_cli_writes_the_demo_s_training_set(tmp_path: Path) -> None:
    """`bindkit synth mix` / `synth preserve` on the demo's data folder (the packaged recipe's
    data step, :func:`bindkit.recipes.data.build_data`) write its training and preservation
    files byte for byte."""
    from bindkit.demo.finetune import DemoOptions, demo_recipe
    from bindkit.recipes.data import build_data

    recipe = demo_recipe(DemoOptions(out=str(tmp_path), examples=200, progress=False))
    made = build_data(recipe, tmp_path / "data", progress=False)
    data, mix = made.folder, recipe.data.mix
    demo = made.train.read_bytes()
    assert main(["synth", "mix", str(data), "--mix", mix, "--overwrite"]) == 0
    assert (data / mix_file(mix)).read_bytes() == demo
    # and its preservation sets (the demo keeps the first steps x batch sentences of each)
    assert len(made.sentences) == 2, made.sentences
    for name, size in made.sentences.items():
        demo = made.preserve[name].read_bytes()
        argv = ["synth", "preserve", str(data), "--set", name, "--max-rows", str(size)]
        assert main([*argv, "--overwrite"]) == 0
        assert (data / f"preserve-{name}.jsonl").read_bytes() == demo


def test_a_mix_file_leaking_a_test_caption_is_refused_naming_file_and_line(
    base: Path, tmp_path: Path
) -> None:
    run = _run(base, tmp_path)
    rows = _rows(run / FILE)
    leaked = _rows(run / "test.jsonl")[0]  # a swap row: valid, its positive a test caption
    rows.insert(4, leaked)
    (run / FILE).write_text("".join(json.dumps(r) + "\n" for r in rows))
    (run / mix_record(MIX)).unlink()  # no record: the rows alone must tell
    failures = check_split_set(run)[1]
    assert [(f[0], f[2].rule) for f in failures] == [(f"{FILE}:5", "split_leak")]
    with pytest.raises(
        DataFormatError,
        match=rf"{FILE}:5: \[split_leak\] the text .* is also in test.jsonl:1; rewrite it with `bindkit synth mix .* --mix {MIX} --overwrite`",
    ):
        require_split_set(run / FILE)


def test_a_caption_query_leaking_into_a_mix_is_refused(base: Path, tmp_path: Path) -> None:
    """A listed relation row made from a test example: its query (the test caption) leaks,
    though its positive (a listing) and negative (a contradicted caption) are in no split."""
    from bindkit.synth.augment import relation_triplets

    run = _run(base, tmp_path)
    test = split(read_examples(run / "examples.jsonl"), 3)["test"]
    row = relation_triplets(test, 0, listed=True)[0]
    failures = check_split_set(run, extra={FILE: [row]})[1]
    assert [(f[0], f[2].rule) for f in failures] == [(f"{FILE}:1", "split_leak")]
    assert failures[0][2].message == f"the text {row['query'][:60]!r} is also in " + next(
        f"test.jsonl:{n}"
        for n, r in enumerate(_rows(run / "test.jsonl"), 1)
        if r["positive"] == row["query"]
    )


def test_a_mix_file_edited_or_made_from_another_split_is_refused(
    base: Path, tmp_path: Path
) -> None:
    run = _run(base, tmp_path)
    text = (run / FILE).read_text()
    (run / FILE).write_text(text.replace("\n", "\n\n", 1))  # same rows, other bytes
    with pytest.raises(DataFormatError, match=f"{FILE}: not the file .*{mix_record(MIX)} records"):
        require_split_set(run / FILE)
    (run / FILE).write_text(text)
    require_split_set(run / FILE)
    assert main(["synth", "split", str(run), "--seed", "4"]) == 0
    with pytest.raises(
        DataFormatError, match="made from the split of seed 3, the split set's is 4"
    ):
        require_split_set(run / FILE)


def test_the_written_file_passes_a_row_kind_rule_check_before_it_is_written(
    base: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A maker that broke its rows would be caught before the file exists."""
    import bindkit.synth.mixes as mixes

    run = _run(base, tmp_path, "synth")
    real = mixes.training_triplets

    def broken(examples: list[Any], seed: int, mix: str) -> list[dict[str, Any]]:
        rows = real(examples, seed, mix)
        kind = next(i for i, r in enumerate(rows) if r.get("row_kind") == "negation_listed")
        rows[kind] = {**rows[kind], "negative": rows[kind]["query"]}
        return rows

    monkeypatch.setattr(mixes, "training_triplets", broken)
    with pytest.raises(
        BindkitError,
        match=rf"{FILE}:\d+: \[negation_listed\] the negative is not the query with one verb negated; nothing written",
    ):
        write_mix(run, MIX)
    assert not (run / FILE).exists() and not (run / mix_record(MIX)).exists()


# -------------------------------------------------------------------------------------------
def _build(cell: Cell, name: str) -> None:
    kind, _, arg = name.partition(":")
    assert kind == "y", name
    y = cell.dir / "y"
    shutil.copytree(cell.base / ("mixed" if arg == "mixed" else "synth"), y)
    if arg == "nosplit":
        (y / "splits.json").unlink()
    elif arg == "noexamples":
        (y / "examples.jsonl").unlink()


# fmt: off
ROWS = [
    C("mix_ok", f"synth mix y --mix {MIX} --max-rows 40", "y", 0, f"40 rows of mix {MIX} in y/{FILE}", unchanged=("y/examples.jsonl", "y/train.jsonl", "y/splits.json")),
    C("mix_unknown", "synth mix y --mix fullpararelnegLEO1", "y", 2, "mix 'fullpararelnegLEO1': did you mean 'fullpararelnegLEO'? use one of fullpara, "),
    C("mix_unknown_far", "synth mix y --mix nope", "y", 2, "mix 'nope': use one of fullpara, "),
    C("mix_no_run", f"synth mix nowhere --mix {MIX}", "", 2, "nowhere: not a synth run (no examples.jsonl); run `bindkit synth generate --out nowhere --n N` first"),
    C("mix_not_a_run", f"synth mix y --mix {MIX}", "y:noexamples", 2, "y: not a synth run (no examples.jsonl)"),
    C("mix_no_split", f"synth mix y --mix {MIX}", "y:nosplit", 2, "y/splits.json: missing, so the split files are not a complete set; rerun `bindkit synth split y`"),
    C("mix_exists", f"synth mix y --mix {MIX}", "y:mixed", 2, f"y/{FILE}: exists; pass --overwrite to replace it"),
    C("mix_overwrite", f"synth mix y --mix {MIX} --overwrite --seed 5 --max-rows 10", "y:mixed", 0, f"10 rows of mix {MIX}", unchanged=("y/examples.jsonl", "y/splits.json")),
    C("mix_rows_zero", f"synth mix y --mix {MIX} --max-rows 0", "y", 2, "--max-rows 0: give at least 1"),
    C("mix_vocab", f"synth mix y --mix {MIX} --exclude-vocab nodir", "y", 2, "--exclude-vocab nodir: not a directory; give a SABER vocabulary directory or 'builtin'"),
    C("mix_no_name", "synth mix y", "y", 2, "the following arguments are required: --mix"),
    C("mix_validate", f"synth validate y/{FILE}", "y:mixed", 0, "0 rejected"),
    C("preserve_ok", "synth preserve y --set ctxgenD --max-rows 30", "y", 0, "30 sentences of preservation set ctxgenD in y/preserve-ctxgenD.jsonl", unchanged=("y/examples.jsonl", "y/splits.json")),
    C("preserve_unknown", "synth preserve y --set ctxgen2", "y", 2, "preservation set 'ctxgen2': did you mean 'ctxgenD2'? use one of contexts, ctxgen, "),
    C("preserve_no_split", "synth preserve y --set ctxgen", "y:nosplit", 2, "y/splits.json: missing"),
    C("preserve_no_run", "synth preserve nowhere --set ctxgen", "", 2, "nowhere: not a synth run (no examples.jsonl)"),
]
# fmt: on


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in ROWS])
def test_matrix_row(case: Any, cell: Cell, monkeypatch: pytest.MonkeyPatch) -> None:
    check_outcome(case, run_matrix_case(case, cell, monkeypatch, _build, ("y",)))


def test_the_help_lists_the_mixes_and_the_row_kinds(capsys: pytest.CaptureFixture[str]) -> None:
    from bindkit.synth.rowkinds import ROW_KINDS

    with pytest.raises(SystemExit):
        main(["synth", "mix", "--help"])
    text = capsys.readouterr().out
    assert all(f"  {mix} " in text for mix in MIXES)
    assert all(f"  {kind} " in text for kind in ROW_KINDS)
