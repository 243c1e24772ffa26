"""`bindkit eval --instructions FILE`: the file's formats and its strict checks, one result per
instruction with the instruction in its provenance and path, exact reuse, and the report's
spread table and strip plot."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from _fakes import TableEmbedder
from bindkit.cli import main
from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.records.instructions import Instruction, read_instructions, spread, text_name
from bindkit.results.store import collect_paths


def test_plain_text_json_and_toml_files(tmp_path: Path) -> None:
    text = tmp_path / "i.txt"
    text.write_text("# a sweep\nRepresent the query\n\n  Find the caption  \n{braces} are prose\n")
    assert read_instructions(text) == [
        Instruction(text_name("Represent the query"), "Represent the query"),
        Instruction(text_name("Find the caption"), "Find the caption"),
        Instruction(text_name("{braces} are prose"), "{braces} are prose"),
    ]
    entries = [{"name": "a", "query": "Q a"}, {"name": "b", "query": "Q b", "document": "D b"}]
    expected = [Instruction("a", "Q a"), Instruction("b", "Q b", "D b")]
    for name, content in (
        ("list.json", json.dumps(entries)),
        ("keyed.json", json.dumps({"instructions": entries})),
        ("i.toml", '[[instructions]]\nname = "a"\nquery = "Q a"\n\n[[instructions]]\n'
         'name = "b"\nquery = "Q b"\ndocument = "D b"\n'),
    ):  # fmt: skip
        path = tmp_path / name
        path.write_text(content)
        assert read_instructions(path) == expected, name


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("i.txt", "# only a comment\n\n", r"i\.txt: holds no instruction"),
        ("i.txt", "same\nother\nsame\n", r"i\.txt:3: instruction name 'i[0-9a-f]{8}' repeats"),
        ("i.json", '[{"name": "a"}]', r"instructions\[0\]\.query: missing"),
        ("i.json", '[{"name": "a", "query": "q", "doc": "d"}]', r"\[0\]\.doc: unknown key"),
        ("i.json", '[{"name": "a b", "query": "q"}]', r"\[0\]\.name: 'a b' is not a name"),
        ("i.json", '[{"name": "a", "query": "  "}]', r"\[0\]\.query: must be a non-empty"),
        ("i.json", '[{"name": "a", "query": "q"},\n {"name": "a", "query": "r"}]', "repeats"),
        ("i.json", '[{"name": "a",\n "query": }]', r"i\.json:2: not valid JSON"),
        ("i.json", '{"prompts": []}', r"key 'prompts': put the entries under 'instructions'"),
        ("i.toml", 'name = "a"\n', r"key 'name': put the entries under 'instructions'"),
        # a JSONL data file given by mistake: its rows are not instructions
        ("s.jsonl", '{"id": "m1", "n": 2}\n{"id": "m2"}\n', r"s\.jsonl:1: a JSON object, not an"),
        ("i.txt", "Find it\n[1, 2]\n", r"i\.txt:2: a JSON array, not an instruction"),
        ("i.txt", "".join(f"instruction {k}\n" for k in range(201)), "201 instructions; a sweep"),
        (
            "i.json",
            json.dumps([{"name": f"n{k}", "query": "q"} for k in range(201)]),
            "at most 200",
        ),
    ],
)
def test_malformed_files_are_one_line_naming_the_place(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataFormatError, match=message) as info:
        read_instructions(path)
    assert "\n" not in str(info.value)


def test_spread_is_mean_sample_std_min_max() -> None:
    got = spread([0.2, 0.4, 0.9])
    assert got == pytest.approx(
        {"mean": 0.5, "std": float(np.std([0.2, 0.4, 0.9], ddof=1)), "min": 0.2, "max": 0.9}
    )
    assert spread([0.3])["std"] == 0.0


SWEEP = [Instruction("plain", "Represent the query"), Instruction("docs", "Find it", "A doc")]


def test_one_result_per_instruction_with_its_provenance_and_exact_reuse(
    small_saber: Path, tmp_path: Path
) -> None:
    model = TableEmbedder()
    out = tmp_path / "r"
    kwargs = {"data": small_saber, "out": out, "cache": False, "verbose": False}
    first = evaluate([model], instructions=SWEEP, **kwargs)  # type: ignore[arg-type]
    names = sorted(p.name for p, _r in collect_paths(out))
    assert names == ["tt@docs.json", "tt@plain.json"]
    options = {r["options"]["instruction"]: r["options"] for r in first}
    assert options["plain"]["query_instruction"] == "Represent the query"
    assert options["plain"]["document_instruction"] is None  # SABER's own default
    assert options["docs"]["document_instruction"] == "A doc"
    # each side's instruction reached the embedder: queries, then documents, per run
    assert [c[2] for c in model.calls] == ["Represent the query", None, "Find it", "A doc"]
    again = evaluate([model], instructions=SWEEP, **kwargs)  # type: ignore[arg-type]
    assert [r["created"] for r in again] == [r["created"] for r in first]  # reused
    assert len(model.calls) == 4
    changed = [SWEEP[0], Instruction("docs", "Find it", "Another doc")]
    evaluate([model], instructions=changed, **kwargs)  # type: ignore[arg-type]
    assert [c[2] for c in model.calls[4:]] == ["Find it", "Another doc"]  # only the stale one
    plain = evaluate([model], **kwargs)  # type: ignore[arg-type]
    assert "instruction" not in plain[0]["options"]  # a plain run is its own result
    report = (out / "report.md").read_text()
    assert "## Instruction sweep: fake:table (main score, %)" in report
    assert "| task | data | subset | pairing | docs | plain | mean | std | min | max |" in report
    assert (out / "report_instructions.png").stat().st_size > 0
    assert "## SABER (small): MCQ accuracy" in report  # the plain run keeps its tables
    from bindkit.results.report import write_report

    write_report(out, tmp_path / "r.csv")
    rows = [line.split(",") for line in (tmp_path / "r.csv").read_text().splitlines()]
    mcq = {row[-1] for row in rows if row[7] == "mcq_accuracy"}
    assert rows[0][-1] == "instruction" and mcq == {"", "plain", "docs"}


def test_bow_ignores_instructions_and_the_cli_prints_the_spread(
    small_saber: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "i.txt"
    file.write_text("Represent the query\nFind the matching caption\n")
    args = ["eval", "--model", "bow", "--data", str(small_saber), "--out", str(tmp_path / "r")]
    assert main([*args, "--instructions", str(file), "-q"]) == 0
    printed = capsys.readouterr().out
    row = next(line for line in printed.splitlines() if line.startswith("| saber |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == cells[5] == cells[6] and cells[7] == "0.0"  # equal scores, std 0
    both = [*args, "--instructions", str(file), "--query-instruction", "x"]
    assert main(both) == 2
    assert "--query-instruction: not with --instructions" in capsys.readouterr().err
    with pytest.raises(BindkitError, match="holds no instruction"):
        evaluate(["bow"], data=small_saber, out=tmp_path / "r", instructions=[])


@pytest.mark.slow
def test_st_default_scores_change_with_the_instruction_and_the_cache_keeps_them_apart(
    small_saber: Path, tmp_path: Path
) -> None:
    """st:default prepends an explicit instruction as its prompt, so scores differ; the
    embedding cache keys on the prompt, so a recompute from the cache gives each its own."""
    pytest.importorskip("sentence_transformers")
    sweep = [Instruction("a", "Represent this sentence for retrieval:"), Instruction("b", "q:")]
    kwargs = {"data": small_saber, "cache": tmp_path / "cache", "verbose": False}
    first = evaluate(["st:default"], instructions=sweep, out=tmp_path / "r", **kwargs)  # type: ignore[arg-type]
    scores = [r["scores"]["mcq_accuracy"] for r in first] + [
        r["scores"]["map_nested"] for r in first
    ]
    assert scores[0] != scores[1] or scores[2] != scores[3]
    import hashlib
    import sqlite3

    with sqlite3.connect(tmp_path / "cache") as conn:
        prompts = {row[0] for row in conn.execute("SELECT DISTINCT prompt FROM vectors")}
    from bindkit.embed.registry import load_embedder

    model = load_embedder("st:default", cache=False)
    # one set of cache rows per query-side prompt (the cache keys on a hash of it): the two
    # instructions never share vectors, and the documents' (no instruction) are shared
    for item in sweep:
        key = model.prompt_key("text", "query", item.query)  # type: ignore[attr-defined]
        assert hashlib.sha256(key.encode()).hexdigest()[:24] in prompts
    assert len(prompts) == 3
    again = evaluate(  # type: ignore[arg-type]
        ["st:default"], instructions=sweep, out=tmp_path / "r", overwrite="always", **kwargs
    )
    assert [r["scores"] for r in again] == [r["scores"] for r in first]  # from the cache


def test_a_retrieval_fixture_with_tiny_clip_runs_each_instruction(tmp_path: Path) -> None:
    from test_compare import _revisited

    data = _revisited(tmp_path / "roxford5k")
    records = evaluate(
        ["builtin:tiny-clip"],
        task="roxford5k",
        data=data,
        out=tmp_path / "r",
        cache=False,
        verbose=False,
        instructions=SWEEP,
    )
    assert [r["options"]["instruction"] for r in records] == ["plain", "docs"]
    # tiny-clip has no prompts: every instruction gives the same mAP
    assert records[0]["scores"] == records[1]["scores"]
    assert "## Instruction sweep: builtin:tiny-clip" in (tmp_path / "r" / "report.md").read_text()
