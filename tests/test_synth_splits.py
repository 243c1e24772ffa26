"""Splits: made once on the full run, then the training variants (NoOverlap, Random,
OverlapOnly, MixedLengths) change train only; the split files are one verifiable set."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bindkit.errors import BindkitError, DataFormatError
from bindkit.synth import run
from bindkit.synth.generate import EXAMPLES
from bindkit.synth.splits import (
    SPLITS_JSON,
    example_words,
    no_overlap,
    read_examples,
    saber_words,
    short_forms,
    split,
    subsets,
    verify_splits,
    write_splits,
)
from bindkit.synth.text import bag

SHARED = [
    "val.jsonl",
    "test.jsonl",
    "heldout_deferred_bind_anaphoric.jsonl",
    "heldout_deferred_bind_respective.jsonl",
]


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("plain")
    run(out, 400, seed=1, progress=False)
    return out


@pytest.fixture(scope="module")
def ablations(plain: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ablations") / "run"
    shutil.copytree(plain, out)
    write_splits(out, exclude_vocab="builtin", mixed_lengths=True)
    return out


def _positives(path: Path) -> list[str]:
    return [json.loads(line)["positive"] for line in path.read_text().splitlines()]


def test_every_variant_keeps_the_plain_runs_val_test_and_heldout(
    plain: Path, ablations: Path
) -> None:
    for name in [*SHARED, "train.jsonl"]:
        assert (ablations / name).read_bytes() == (plain / name).read_bytes(), name
    for variant in ("no_overlap", "random", "overlap_only", "mixed_lengths"):
        for name in SHARED:
            assert (ablations / variant / name).read_bytes() == (plain / name).read_bytes()
        assert (ablations / variant / "train.jsonl").read_bytes() != (
            plain / "train.jsonl"
        ).read_bytes()


def test_the_subsets_are_size_matched_and_drawn_from_train_only(ablations: Path) -> None:
    words = saber_words(None)
    examples = {ex.positive: ex for ex in read_examples(ablations / EXAMPLES)}
    train = set(_positives(ablations / "train.jsonl"))
    held = {p for name in SHARED for p in _positives(ablations / name)}
    sizes = {}
    for variant in ("no_overlap", "random", "overlap_only"):
        positives = _positives(ablations / variant / "train.jsonl")
        assert set(positives) <= train and not set(positives) & held
        chosen = [examples[p] for p in positives[::2]]
        sizes[variant] = len(chosen)
        overlap = [bool(example_words(ex) & words) for ex in chosen]
        if variant == "no_overlap":
            assert not any(overlap)
        if variant == "overlap_only":
            assert all(overlap)
    assert sizes["no_overlap"] == sizes["random"] == sizes["overlap_only"] > 0
    summary = json.loads((ablations / SPLITS_JSON).read_text())
    assert summary["examples_per_split"]["random"] == sizes["random"]
    assert summary["exclude_vocab"]["source"] == "builtin"
    assert summary["exclude_vocab"]["words"] == len(words)


def test_the_filter_counts_distractors(plain: Path) -> None:
    examples = read_examples(plain / EXAMPLES)
    with_distractor = next(ex for ex in examples if ex.distractors)
    attribute, obj = with_distractor.distractors[0]
    assert not {attribute, obj} & set(with_distractor.attributes + with_distractor.objects)
    assert no_overlap([with_distractor], {obj}) == []
    assert no_overlap([with_distractor], {"no-such-word"}) == [with_distractor]


def test_subsets_depend_on_train_only(plain: Path) -> None:
    examples = read_examples(plain / EXAMPLES)
    train = split(examples, seed=1)["train"]
    words = saber_words(None)
    first = subsets(train, words, seed=1)
    again = subsets(list(train), words, seed=1)
    assert first == again
    assert {ex.id for group in first.values() for ex in group} <= {ex.id for ex in train}


def test_mixed_lengths_rows(ablations: Path, plain: Path) -> None:
    lines = (ablations / "mixed_lengths/train.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    plain_rows = (plain / "train.jsonl").read_text().splitlines()
    assert len(rows) == 3 * len(plain_rows)
    formats = [r["format"] for r in rows]
    assert formats[:6] == ["short-long"] * 2 + ["short-short"] * 2 + ["long-short"] * 2
    short_long = [r for r in rows if r["format"] == "short-long"]
    assert [{k: v for k, v in r.items() if k != "format"} for r in short_long] == [
        json.loads(x) for x in plain_rows
    ]
    long_short = [r for r in rows if r["format"] == "long-short"]
    assert {r["query"] for r in long_short} == set(_positives(plain / "train.jsonl"))
    for row in rows:
        if row["format"] != "short-long":
            assert row["positive"] != row["query"] and row["positive"] != row["negative"]
            assert bag(row["positive"]) == bag(row["negative"])  # the same words, rebound


def test_short_forms_reverse_the_query_and_keep_the_intended_bindings(plain: Path) -> None:
    ex = next(e for e in read_examples(plain / EXAMPLES) if e.type == "pair_swap")
    positive, negatives = short_forms(ex)
    (a1, o1), (a2, o2) = sorted(ex.bindings, key=lambda p: ex.query.find(f" {p[1]}"))
    assert positive.endswith(f"{a1} {o1}") and f"{a2} {o2}" in positive.split(" and ")[0]
    assert positive != ex.query and sorted(positive.split()) == sorted(ex.query.split())
    intended = ex.intended["attribute"]
    assert all(f"{a} {o}" in negatives["attribute"] for a, o in intended)


def test_verify_splits_detects_an_incomplete_or_stale_set(plain: Path, tmp_path: Path) -> None:
    out = shutil.copytree(plain, tmp_path / "run")
    assert verify_splits(out)["options"]["seed"] == 1
    test = (out / "test.jsonl").read_bytes()
    (out / "test.jsonl").write_bytes(test[: len(test) // 2])
    with pytest.raises(DataFormatError, match=r"test\.jsonl: not the file .* records"):
        verify_splits(out)
    (out / "test.jsonl").write_bytes(test)
    with (out / EXAMPLES).open("a") as handle:
        handle.write((out / EXAMPLES).read_text().splitlines()[0] + "\n")
    with pytest.raises(DataFormatError, match="changed since the splits were written"):
        verify_splits(out)
    (out / SPLITS_JSON).unlink()
    with pytest.raises(DataFormatError, match="not a complete set; rerun `bindkit synth split"):
        verify_splits(out)


def test_split_verify_from_the_cli(
    plain: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.cli import main

    out = shutil.copytree(plain, tmp_path / "run")
    assert main(["synth", "split", str(out), "--verify"]) == 0
    assert "5 split files, one complete set" in capsys.readouterr().out
    (out / "val.jsonl").write_text("")
    assert main(["synth", "split", str(out), "--verify"]) == 2
    assert "val.jsonl: not the file" in capsys.readouterr().err


def _tree(directory: Path) -> dict[str, bytes]:
    return {str(p.relative_to(directory)): p.read_bytes() for p in directory.rglob("*.json*")}


def test_a_resplit_refuses_to_delete_variants_unless_told(
    ablations: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21: `synth split DIR` without the ablation options silently deleted them."""
    from bindkit.cli import main

    out = shutil.copytree(ablations, tmp_path / "run")
    before = _tree(out)
    assert main(["synth", "split", str(out), "--exclude-vocab", "builtin"]) == 2
    err = capsys.readouterr().err
    assert "would delete mixed_lengths/ from an earlier split; pass --mixed-lengths again" in err
    assert main(["synth", "split", str(out)]) == 2
    assert "no_overlap/, random/, overlap_only/, mixed_lengths/" in capsys.readouterr().err
    argv = ["synth", "generate", "-q", "--n", "400", "--seed", "1", "--out", str(out)]
    assert main(argv) == 2  # a resumed generate refuses too, before generating anything
    assert "--drop-variants to delete them" in capsys.readouterr().err
    assert _tree(out) == before
    assert main(["synth", "split", str(out), "--mixed-lengths", "--drop-variants"]) == 0
    assert f"removed {out / 'no_overlap'}/, {out / 'random'}/" in capsys.readouterr().out
    assert (out / "mixed_lengths").is_dir() and not (out / "random").exists()
    verify_splits(out)


def test_split_defaults_to_the_runs_seed_and_drops_stale_variants(
    ablations: Path, plain: Path, tmp_path: Path
) -> None:
    out = shutil.copytree(ablations, tmp_path / "run")
    write_splits(out, drop_variants=True)  # no --seed: the manifest's (1), no variants
    assert (out / "train.jsonl").read_bytes() == (plain / "train.jsonl").read_bytes()
    assert not (out / "no_overlap").exists() and not (out / "mixed_lengths").exists()
    assert (out / SPLITS_JSON).read_bytes() == (plain / SPLITS_JSON).read_bytes()
    write_splits(out, seed=2)
    assert (out / "test.jsonl").read_bytes() != (plain / "test.jsonl").read_bytes()
    verify_splits(out)


def test_split_refuses_missing_empty_or_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.cli import main

    with pytest.raises(DataFormatError, match=r"examples\.jsonl: not found"):
        write_splits(tmp_path)
    (tmp_path / EXAMPLES).write_text("")
    with pytest.raises(DataFormatError, match="holds no examples"):
        write_splits(tmp_path)
    with pytest.raises(BindkitError, match="--exclude-vocab nowhere: not a directory"):
        write_splits(tmp_path, exclude_vocab="nowhere")
    assert main(["synth", "split", str(tmp_path)]) == 2
    assert "holds no examples" in capsys.readouterr().err


@pytest.mark.slow
def test_a_killed_split_never_leaves_a_mixed_set(tmp_path: Path) -> None:
    import random
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    run(out, 6000, seed=0, progress=False, splits=False)
    write_splits(out, seed=0)
    old = {name: (out / name).read_bytes() for name in ["train.jsonl", *SHARED]}
    command = [sys.executable, "-m", "bindkit", "synth", "split", str(out), "--seed", "1"]
    command += ["--exclude-vocab", "builtin", "--mixed-lengths"]
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    full = time.perf_counter() - start
    new = {name: (out / name).read_bytes() for name in old}
    write_splits(out, seed=0, drop_variants=True)
    rng = random.Random(0)
    outcomes = set()
    for _ in range(8):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.3, 1.0) * full)
        process.send_signal(signal.SIGKILL)
        process.wait()
        files = {name: (out / name).read_bytes() for name in old}
        try:
            verify_splits(out)
        except DataFormatError:
            outcomes.add("incomplete")  # flagged: a reader refuses the set
        else:
            assert files in (old, new)  # never train from one seed and test from another
            outcomes.add("old" if files == old else "new")
        write_splits(out, seed=0, drop_variants=True)  # the next run cleans up, writes a whole set
        verify_splits(out)
        assert not any(p.name.endswith(".tmp") for p in out.iterdir())
        assert {name: (out / name).read_bytes() for name in old} == old
    assert outcomes  # at least one kill landed


def test_splits_are_the_same_whatever_the_hash_seed(plain: Path, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    out = shutil.copytree(plain, tmp_path / "run")
    command = [sys.executable, "-m", "bindkit", "synth", "split", str(out)]
    command += ["--exclude-vocab", "builtin", "--mixed-lengths"]
    written = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL)
        written.append({p: p.read_bytes() for p in sorted(out.rglob("*.json*"))})
    assert written[0] == written[1] and len(written[0]) > 20


def test_eval_refuses_a_split_file_from_a_mixed_or_stale_set(
    plain: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from bindkit.cli import main

    out = shutil.copytree(plain, tmp_path / "run")
    argv = ["eval", "-q", "--no-report", "--model", "bow", "--task", "triplets"]
    argv += ["--out", str(tmp_path / "r"), "--data", str(out / "test.jsonl")]
    assert main(argv) == 0
    train = out / "train.jsonl"
    train.write_bytes(train.read_bytes()[:-200])  # a kill mid-split left another train file
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "train.jsonl: not the file" in err and len(err.splitlines()) == 1
