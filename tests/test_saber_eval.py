"""SABER evaluation checks what it trusts: candidate roles, the tie rule, containment."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from bindkit.errors import BindkitError, DataFormatError
from bindkit.evaluation import evaluate
from bindkit.metrics.retrieval import average_precision_dense
from bindkit.saber.build import SaberOptions, build_saber, generate_saber
from bindkit.saber.io import MCQ, read_saber, write_saber
from bindkit.saber.vocab import Vocabulary
from bindkit.tasks.base import get_task
from bindkit.tasks.saber import SaberTask, score_saber


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


def _containment_reference(
    mcqs: list[MCQ], q: np.ndarray, g: np.ndarray, swaps: bool
) -> tuple[dict[str, tuple[float, int]], float]:
    """Plain loops over the chains (candidates in role order, no near-ties in these vectors):
    each containment share with its comparison count, and nested mAP."""
    scores = q @ g.T
    chains: dict[str, dict[int, int]] = {}
    for i, m in enumerate(mcqs):
        if m.kind == "nested":
            chains.setdefault(m.chain, {})[m.step] = i
    above: dict[str, list[float]] = {"sub_exact": [], "sup_exact": [], "sub_sup": []}
    aps = []
    for i, m in enumerate(mcqs):
        if m.kind != "nested":
            continue
        steps = chains[m.chain]
        subsets = [4 * j for s, j in steps.items() if s < m.step]
        supersets = [4 * j for s, j in steps.items() if s > m.step]
        if swaps:
            supersets += [
                4 * j + k
                for s, j in steps.items()
                if s > m.step
                for k in (1, 2, 3)
                if set(m.query.bindings) <= set(mcqs[j].candidates[k].bindings)
            ]
        exact = scores[i, 4 * i]
        above["sub_exact"] += [float(scores[i, c] > exact) for c in subsets]
        above["sup_exact"] += [float(scores[i, c] > exact) for c in supersets]
        above["sub_sup"] += [float(scores[i, a] > scores[i, b]) for a in subsets for b in supersets]
        mask = np.zeros(len(g), bool)
        mask[[4 * i, *supersets]] = True
        aps.append(average_precision_dense(scores[i], mask))
    shares = {name: (float(np.mean(v)), len(v)) for name, v in above.items()}
    return shares, float(np.mean(aps))


@pytest.mark.parametrize("swaps", [False, True])
def test_containment_shares_and_nested_map_equal_plain_loops(
    vocab: Vocabulary, swaps: bool
) -> None:
    mcqs = build_saber(SaberOptions(seed=1, per_n=16, n_max=10), vocab)  # 8 chains
    q, g = _learnable_vectors(len(mcqs), seed=1)
    result = score_saber(mcqs, q, g, swap_supersets=swaps)
    s, counts = result["scores"], result["counts"]
    shares, nested_map = _containment_reference(mcqs, q, g, swaps)
    assert counts["swap_candidates_containing_query"] > 0
    for name, key in (
        ("sub_exact", "containment_subset_above"),
        ("sup_exact", "containment_superset_above"),
        ("sub_sup", "containment_subset_above_superset"),
    ):
        assert s[key] == pytest.approx(shares[name][0], abs=1e-12), key
        assert counts[f"{key}_comparisons"] == shares[name][1], key
    assert s["map_nested"] == pytest.approx(nested_map, abs=1e-12)


def test_containment_comparison_counts_of_the_default_set(vocab: Vocabulary) -> None:
    mcqs = build_saber(SaberOptions(), vocab)  # 100 chains of N = 2..10
    q, g = _learnable_vectors(len(mcqs), seed=1)
    plain = score_saber(mcqs, q, g)["counts"]
    swapped = score_saber(mcqs, q, g, swap_supersets=True)["counts"]
    # per chain of 9 steps: 36 subset/exact and superset/exact pairs, 84 subset/superset pairs
    assert plain["containment_subset_above_comparisons"] == 3600
    assert plain["containment_superset_above_comparisons"] == 3600
    assert plain["containment_subset_above_superset_comparisons"] == 8400
    # later-step swap candidates that hold every binding of an earlier query: 60 in the issue's
    # set, 61 since the default set avoids colour collisions (issue 22)
    assert (
        plain["swap_candidates_containing_query"]
        == swapped["swap_candidates_containing_query"]
        == 61
    )
    assert swapped["containment_subset_above_comparisons"] == 3600
    assert swapped["containment_superset_above_comparisons"] == 3661


def test_swap_supersets_is_a_task_option_recorded_in_the_result(tmp_path: Path) -> None:
    data = tmp_path / "saber"
    generate_saber(data, per_n=2, n_max=4)
    kwargs = dict(data=data, cache=False, report=False, verbose=False)
    (plain,) = evaluate(["bow"], task="saber", out=tmp_path / "a", **kwargs)
    (swapped,) = evaluate(
        ["bow"], task=get_task("saber", {"swap_supersets": "true"}), out=tmp_path / "b", **kwargs
    )
    assert plain["options"]["swap_supersets"] is False
    assert swapped["options"]["swap_supersets"] is True
    assert swapped["provenance"]["options"] != plain["provenance"]["options"]
    with pytest.raises(BindkitError, match=r"swap_supersets=maybe: not a valid bool"):
        get_task("saber", {"swap_supersets": "maybe"})
    tables = [t for r in (plain, swapped) for t in SaberTask().tables([r]) if "containm" in t.title]
    assert len(tables) == 2
    assert tables[0].columns[3:] == [
        "subset > exact (seed)",
        "n",
        "superset > exact",
        "n",
        "subset > superset (seed)",
        "n",
    ]
    n = plain["counts"]["containment_subset_above_superset_comparisons"]
    assert [t.rows[0][2] for t in tables] == ["bp", "bp + swaps"]
    assert tables[0].rows[0][8] == f"{n:,}"


def test_the_declared_tie_rule_scores_the_mcq(
    vocab: Vocabulary, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One MCQ whose exact candidate ties its first swap at the top: the declared rule (share)
    gives each 1/2; the task scores under whatever its metadata declares."""
    from _fakes import TableEmbedder
    from bindkit.saber.io import SaberSet, role_positions
    from bindkit.tasks.base import Dataset, EvalContext

    mcq = build_saber(SaberOptions(seed=3, per_n=2, n_max=2), vocab)[0]
    exact, swap, *_ = (mcq.candidates[k] for k in role_positions(mcq))
    top, low = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
    vectors = {c.text: low for c in mcq.candidates} | {mcq.query.text: top}
    vectors |= {exact.text: top, swap.text: top}
    dataset = Dataset("one", "0", "test", SaberSet(Path("."), (mcq,), None))

    def scored() -> dict[str, object]:
        result = SaberTask().evaluate(
            TableEmbedder(vectors), dataset, "default", "tt", EvalContext()
        )
        assert result is not None
        return result["scores"]

    declared = scored()
    assert declared["mcq_accuracy"] == 0.5  # SABER's rule: a 2-way tie shares the credit
    assert declared["mcq_wins_by_role"][swap.role] == 0.5
    for rule, credit in (("wrong", 0.0), ("correct", 1.0)):
        monkeypatch.setattr(
            SaberTask, "metadata", dataclasses.replace(SaberTask.metadata, ties=rule)
        )
        assert scored()["mcq_accuracy"] == credit, rule
    # the retrieval scores keep their own tie rule (whole tie groups) under any declared rule
    assert scored()["map_independent"] == declared["map_independent"]
