"""SABER evaluation checks what it trusts: candidate roles, the tie rule, containment."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from bindkit.errors import DataFormatError
from bindkit.evaluation import evaluate
from bindkit.saber.build import SaberOptions, build_saber, generate_saber
from bindkit.saber.io import MCQ, read_saber, write_saber
from bindkit.saber.vocab import Vocabulary
from bindkit.tasks.saber import score_saber


def _learnable_vectors(n_mcqs: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random unit vectors with each query near its binding-preserving candidate (file order)."""
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((n_mcqs, 16)).astype(np.float32)
    g = rng.standard_normal((4 * n_mcqs, 16)).astype(np.float32)
    q += 0.8 * g[0::4] + 0.3 * g[1::4]
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    g /= np.linalg.norm(g, axis=1, keepdims=True)
    return q, g


def _permute(
    mcqs: list[MCQ], gallery: np.ndarray, order: dict[int, list[int]]
) -> tuple[list[MCQ], np.ndarray]:
    """MCQ i's candidates (and their gallery rows) reordered as order[i]; roles travel with them."""
    out, rows = [], np.arange(len(gallery))
    for i, mcq in enumerate(mcqs):
        perm = order.get(i, [0, 1, 2, 3])
        out.append(dataclasses.replace(mcq, candidates=tuple(mcq.candidates[k] for k in perm)))
        rows[4 * i : 4 * i + 4] = [4 * i + k for k in perm]
    return out, gallery[rows]


def test_permuted_candidates_score_by_role_not_position(vocab: Vocabulary) -> None:
    mcqs = build_saber(SaberOptions(seed=3, per_n=6, n_max=6), vocab)
    q, g = _learnable_vectors(len(mcqs))
    expected = score_saber(mcqs, q, g)
    # the case: the independent N=2 MCQs with their candidates reversed
    reversed_n2 = {i: [3, 2, 1, 0] for i, m in enumerate(mcqs) if m.n == 2}
    assert any(mcqs[i].kind == "independent" for i in reversed_n2)
    shuffled = {i: list(np.random.default_rng(i).permutation(4)) for i in range(len(mcqs))}
    for order in (reversed_n2, shuffled):
        permuted, g_permuted = _permute(mcqs, g, order)
        got = score_saber(permuted, q, g_permuted)
        assert got["counts"] == expected["counts"]
        for name, value in expected["scores"].items():
            assert got["scores"][name] == pytest.approx(value, abs=1e-12), name


def test_evaluation_of_a_file_with_reversed_candidates(tmp_path: Path) -> None:
    data = tmp_path / "saber"
    generate_saber(data, per_n=4, n_max=3)
    saber = read_saber(data)
    flipped = tmp_path / "flipped"
    flipped.mkdir()
    write_saber(
        flipped,
        [
            dataclasses.replace(m, candidates=m.candidates[::-1]) if m.n == 2 else m
            for m in saber.mcqs
        ],
    )
    kwargs = dict(cache=False, report=False, verbose=False)
    (plain,) = evaluate(["bow"], data=data, out=tmp_path / "a", **kwargs)
    (reordered,) = evaluate(["bow"], data=flipped, out=tmp_path / "b", **kwargs)
    # bow ties the three candidates holding the query's words at N=2: chance is 1/3
    assert plain["scores"]["mcq_accuracy_by_n"]["2"] == pytest.approx(1 / 3)
    assert reordered["scores"] == plain["scores"]


def test_a_file_without_one_candidate_per_role_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "saber"
    generate_saber(data, per_n=2, n_max=3)
    mcqs = list(read_saber(data).mcqs)
    bad = mcqs[1]
    twice = dataclasses.replace(bad.candidates[1], role="binding_preserving")
    mcqs[1] = dataclasses.replace(bad, candidates=(bad.candidates[0], twice, *bad.candidates[2:]))
    write_saber(data, mcqs)
    with pytest.raises(DataFormatError) as info:
        evaluate(["bow"], data=data, out=tmp_path / "r", cache=False, report=False, verbose=False)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{data / 'saber.jsonl'}: MCQ {bad.id!r}: ")
    assert "one candidate of each of binding_preserving, attribute_swap" in message
    q, g = _learnable_vectors(len(mcqs))
    with pytest.raises(DataFormatError, match=rf"^MCQ {bad.id!r}: "):
        score_saber(mcqs, q, g)
