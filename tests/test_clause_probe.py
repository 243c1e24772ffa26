"""The clause probe's rows (benchmarks/recipe/clause_probe.py): its activities are in no reported
set, each negative holds its query's words with the roles exchanged, and the rows are fixed."""

from __future__ import annotations

import hashlib
import json

import pytest

from _shared import SHARED_DATA
from bindkit.synth.roles import file_texts, overlap
from script_module import load_script

probe = load_script("benchmarks/recipe/clause_probe.py")


@pytest.mark.parametrize("folder", ("sugarcrepe", "sugarcrepe_pp", "sick2014"))
def test_no_activity_occurs_in_a_reported_set(folder: str) -> None:
    path = SHARED_DATA / folder
    if not path.is_dir():
        pytest.skip(f"{path} is not on this machine")
    assert overlap(file_texts(path), probe.ACTIVITIES) == []


def test_each_negative_exchanges_the_roles_in_the_query_s_words() -> None:
    for row in probe.probe_rows(30, seed=3):
        words = sorted(row["query"].lower().rstrip(".").split())
        assert sorted(row["negative"].lower().rstrip(".").split()) == words, row
        assert row["negative"] != row["query"], row
        if row["row_kind"] == "probe_clause":  # the positive: the query's clauses, rejoined
            clauses = row["query"].rstrip(".").lower().split(" while ")
            assert all(c in row["positive"].lower() for c in clauses), row
            assert not all(c in row["negative"].lower() for c in clauses), row


def test_the_rows_are_fixed() -> None:
    """The rows the probe trained on (its 5,000-row file)."""
    rows = "".join(json.dumps(r) + "\n" for r in probe.probe_rows(2500))
    assert hashlib.sha256(rows.encode()).hexdigest()[:16] == "e193369d874b118b"
