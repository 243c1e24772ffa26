"""Metrics on hand-computed cases (ties included) and blocked == plain equivalence."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bindkit.metrics import retrieval
from bindkit.metrics.containment import fraction_above
from bindkit.metrics.correlation import average_ranks, spearman, triplet_accuracy
from bindkit.metrics.mcq import mcq_accuracy, mcq_credit, winner_shares
from bindkit.metrics.retrieval import (
    average_precision,
    average_precision_dense,
    group_ends,
)


def test_mcq_credit_hand_cases() -> None:
    scores = np.array(
        [
            [0.9, 0.1, 0.2, 0.3],  # correct wins: 1
            [0.5, 0.5, 0.5, 0.1],  # three-way tie: 1/3
            [0.5, 0.5, 0.5, 0.5],  # four-way tie: 1/4
            [0.1, 0.9, 0.2, 0.3],  # wrong: 0
            [0.4, 0.4, 0.2, 0.2],  # two-way tie: 1/2
        ]
    )
    np.testing.assert_allclose(mcq_credit(scores), [1, 1 / 3, 1 / 4, 0, 1 / 2])
    assert mcq_accuracy(scores) == pytest.approx((1 + 1 / 3 + 1 / 4 + 0 + 1 / 2) / 5)
    shares = winner_shares(scores)
    np.testing.assert_allclose(shares.sum(axis=1), 1)
    np.testing.assert_allclose(shares[3], [0, 1, 0, 0])
    # a difference below the tie tolerance is a tie, not a win
    assert mcq_credit(np.array([[0.5, 0.5 + 1e-8]]))[0] == 0.5
    assert mcq_credit(np.array([[0.1, 0.9]]), correct=1)[0] == 1.0


def test_average_precision_hand_cases() -> None:
    # ranking: r n r n -> AP = (1/1 + 2/3) / 2
    scores = np.array([0.9, 0.8, 0.7, 0.6])
    relevant = np.array([True, False, True, False])
    assert average_precision_dense(scores, relevant) == pytest.approx((1 + 2 / 3) / 2)
    # a relevant item tied with two others at the top: retrieved together, precision 1/3
    tied = np.array([0.5, 0.5, 0.5, 0.1])
    assert average_precision_dense(tied, np.array([True, False, False, False])) == pytest.approx(
        1 / 3
    )
    # the blocked version on the same cases, through unit vectors with those dot products
    queries = np.array([[1.0, 0.0]], dtype=np.float32)
    gallery = np.array([[s, np.sqrt(1 - s * s)] for s in scores], dtype=np.float32)
    ap = average_precision(queries, gallery, [[0, 2]], query_block=1)
    assert ap[0] == pytest.approx((1 + 2 / 3) / 2, abs=1e-6)
    gallery_tied = np.array([[s, np.sqrt(1 - s * s)] for s in tied], dtype=np.float32)
    assert average_precision(queries, gallery_tied, [[0]])[0] == pytest.approx(1 / 3)


@settings(max_examples=30, deadline=None)
@example(seed=5, n_queries=2, n_gallery=256, qb=1, tie_fraction=0.3)  # once flaky
@given(
    seed=st.integers(0, 10_000),
    n_queries=st.integers(1, 12),
    n_gallery=st.integers(1, 300),
    qb=st.integers(1, 8),
    tie_fraction=st.sampled_from([0.0, 0.3]),
)
def test_blocked_map_equals_plain_reference(
    seed: int, n_queries: int, n_gallery: int, qb: int, tie_fraction: float
) -> None:
    rng = np.random.default_rng(seed)
    # Small integer vectors: every dot product is an exact integer in float32 whatever the
    # kernel's summation order, so the blocked tiles and the dense matrix agree bit for bit.
    # (With real-valued vectors two kernels can round a near-tie to opposite sides of TIE_EPS,
    # and the test would fail without a bug.) Integer scores also give plenty of ties.
    gallery = rng.integers(-3, 4, (n_gallery, 8)).astype(np.float32)
    duplicates = rng.random(n_gallery) < tie_fraction  # and exact duplicates
    gallery[duplicates] = gallery[0]
    queries = rng.integers(-3, 4, (n_queries, 8)).astype(np.float32)
    relevant = [
        sorted(rng.choice(n_gallery, size=rng.integers(1, min(4, n_gallery) + 1), replace=False))
        for _ in range(n_queries)
    ]
    blocked = average_precision(queries, gallery, relevant, query_block=qb)
    dense_scores = queries @ gallery.T
    for q in range(n_queries):
        mask = np.zeros(n_gallery, bool)
        mask[relevant[q]] = True
        assert blocked[q] == pytest.approx(average_precision_dense(dense_scores[q], mask), abs=1e-9)


def test_group_ends_match_dense_tie_groups() -> None:
    rng = np.random.default_rng(0)
    q = rng.integers(-2, 3, (5, 4)).astype(np.float32)
    g = rng.integers(-2, 3, (50, 4)).astype(np.float32)
    items = [[0, 1, 2], [], [49], [3, 3], [7, 8, 9]]
    dense = q @ g.T
    # integer scores: a tie group is one distinct value, it ends after every score >= it
    for block in (1, 2, None):
        ends = group_ends(q, g, items, query_block=block)
        for row, wanted, got in zip(dense, items, ends, strict=True):
            expected = [int((row >= row[i]).sum()) for i in wanted]
            assert got.tolist() == expected


ULP = 2.0**-25  # the float32 spacing in [0.25, 0.5): these scores and their gaps are exact
TIE_ULPS = 33  # 33 ulps = 0.98e-6 <= TIE_EPS < 34 ulps = 1.01e-6


def _scores_from_gaps(gaps: list[int]) -> np.ndarray:
    """Descending float32 scores below 0.49 whose successive gaps are ``gaps`` float32 ulps."""
    top = round((0.49 - 0.25) / ULP)
    return (0.25 + (top - np.cumsum([0, *gaps])) * ULP).astype(np.float32)


def _blocked_ap(scores: np.ndarray, is_relevant: np.ndarray) -> float:
    """The blocked AP of one ranking whose dot products are exactly ``scores``."""
    queries = np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)  # the second one scores 0s
    gallery = np.stack([scores, np.zeros_like(scores)], axis=1)
    relevant = [np.flatnonzero(is_relevant).tolist()] * 2
    return float(average_precision(queries, gallery, relevant, query_block=2)[0])


def test_one_tie_rule_chains_near_ties() -> None:
    # the case: 0.5, 0.5 - 0.6e-6, 0.5 - 1.2e-6, the middle one relevant: all three
    # chain into one group (0.6e-6 steps), so it is retrieved at rank 3 of 3
    scores = np.array([0.5, 0.5 - 0.6e-6, 0.5 - 1.2e-6])
    middle = np.array([False, True, False])
    assert average_precision_dense(scores, middle) == pytest.approx(1 / 3)
    assert _blocked_ap(scores.astype(np.float32), middle) == pytest.approx(1 / 3)
    # the top one relevant: its group reaches the third score through the second
    top = np.array([True, False, False])
    assert average_precision_dense(scores, top) == pytest.approx(1 / 3)
    assert _blocked_ap(scores.astype(np.float32), top) == pytest.approx(1 / 3)
    np.testing.assert_allclose(winner_shares(scores[None, :]), [[1 / 3, 1 / 3, 1 / 3]])
    # exactly TIE_EPS apart (exact in float64) is a tie
    edge = np.array([1e-6, 0.0])
    assert edge[0] - edge[1] == 1e-6
    assert average_precision_dense(edge, np.array([True, False])) == 0.5
    assert mcq_credit(edge[None, :])[0] == 0.5
    assert fraction_above(edge[1:], edge[:1]) == 0.5
    # and float32 scores whose float64 difference is exactly TIE_EPS, for the blocked AP
    high = np.float32(1e-6)
    edge32 = np.array([high, np.float32(float(high) - 1e-6)], dtype=np.float32)
    assert float(edge32[0]) - float(edge32[1]) == 1e-6
    assert _blocked_ap(edge32, np.array([True, False])) == 0.5
    # a gap of at most TIE_EPS is a tie, one float32 step more is not
    for gap, tied in ((TIE_ULPS, True), (TIE_ULPS + 1, False)):
        pair = _scores_from_gaps([gap])
        assert (float(pair[0]) - float(pair[1]) <= 1e-6) is tied
        assert average_precision_dense(pair, np.array([True, False])) == (0.5 if tied else 1.0)
        assert _blocked_ap(pair, np.array([True, False])) == (0.5 if tied else 1.0)
        assert mcq_credit(pair[None, :])[0] == (0.5 if tied else 1.0)
        assert fraction_above(pair[1:], pair[:1]) == (0.5 if tied else 0.0)


@settings(max_examples=200, deadline=None)
@example(gaps=[20, 20], relevant=[True, False, False], seed=0, window=retrieval.WINDOW)
@example(gaps=[20, 20], relevant=[False, True, False], seed=0, window=retrieval.WINDOW)
@example(gaps=[TIE_ULPS] * 25, relevant=[True] + [False] * 25, seed=0, window=2e-6)
@given(
    gaps=st.lists(
        st.sampled_from([0, 1, 16, TIE_ULPS - 1, TIE_ULPS, TIE_ULPS + 1, 40, 67, 68, 10_000]),
        min_size=0,
        max_size=25,
    ),
    relevant=st.lists(st.booleans(), min_size=26, max_size=26),
    seed=st.integers(0, 1000),
    window=st.sampled_from([retrieval.WINDOW, 2e-6]),
)
def test_blocked_and_dense_ap_agree_on_near_ties(
    gaps: list[int], relevant: list[bool], seed: int, window: float
) -> None:
    """Near-tie score lists (gaps around TIE_EPS, chains of them, exact ties) in any storage
    order: the blocked AP, the dense reference and the MCQ top group follow one rule. A narrow
    first window makes chains leave it, so the whole-row path is checked too."""
    scores = _scores_from_gaps(gaps)
    is_relevant = np.array(relevant[: len(scores)])
    if not is_relevant.any():
        is_relevant[-1] = True
    order = np.random.default_rng(seed).permutation(len(scores))
    scores, is_relevant = scores[order], is_relevant[order]
    dense = average_precision_dense(scores, is_relevant)
    with mock.patch.object(retrieval, "WINDOW", window):
        assert _blocked_ap(scores, is_relevant) == pytest.approx(dense, abs=1e-12)
    # the MCQ's top group is the ranking's first tie group: the best option alone relevant is
    # retrieved with its whole group, so AP = 1/k exactly when it shares the win with k - 1
    best = int(np.argmax(scores))
    shares = winner_shares(scores[None, :])[0]
    alone = average_precision_dense(scores, np.arange(len(scores)) == best)
    assert shares[best] == pytest.approx(alone, abs=1e-12)
    assert np.count_nonzero(shares) == round(1 / alone)


def test_containment_fraction_counts_ties_as_half() -> None:
    assert fraction_above(np.array([0.9, 0.1, 0.5]), np.array([0.5, 0.5, 0.5])) == pytest.approx(
        (1 + 0 + 0.5) / 3
    )
    assert np.isnan(fraction_above(np.array([]), np.array([])))


def test_spearman_and_ranks() -> None:
    np.testing.assert_allclose(average_ranks(np.array([10, 20, 20, 30])), [1, 2.5, 2.5, 4])
    assert spearman(np.array([1, 2, 3, 4]), np.array([10, 20, 30, 40])) == pytest.approx(1)
    assert spearman(np.array([1, 2, 3, 4]), np.array([4, 3, 2, 1])) == pytest.approx(-1)
    # hand computed: ranks x = 1,2,3 ; y = 1,3,2 -> rho = 1 - 6*2/(3*8) = 0.5
    assert spearman(np.array([1.0, 2, 3]), np.array([5.0, 9, 7])) == pytest.approx(0.5)
    assert np.isnan(spearman(np.array([1, 1, 1]), np.array([1, 2, 3])))


def test_triplet_accuracy_is_strict() -> None:
    assert triplet_accuracy(np.array([0.9, 0.5, 0.2]), np.array([0.1, 0.5, 0.3])) == pytest.approx(
        1 / 3
    )


def test_tie_rules_of_the_pairwise_metrics() -> None:
    from bindkit.metrics.pairwise import beats, hit_at_1

    a, b = np.array([0.5, 0.5, 0.2]), np.array([0.4, 0.5, 0.3])
    assert beats(a, b, "wrong").tolist() == [1.0, 0.0, 0.0]
    assert beats(a, b, "correct").tolist() == [1.0, 1.0, 0.0]
    assert beats(a, b, "share").tolist() == [1.0, 0.5, 0.0]
    scores = np.array([[0.9, 0.9, 0.1], [0.2, 0.8, 0.8], [0.7, 0.1, 0.1]])
    # MMEB / ARO-Order: argmax == 0 keeps the first of equal maxima, so a tie is right
    assert hit_at_1(scores, 0, "correct").tolist() == [1.0, 0.0, 1.0]
    # ARO-Relation: argmax == 1 over [false, true]; a tie picks index 0, so it is wrong
    assert hit_at_1(scores, 1, "wrong").tolist() == [0.0, 0.0, 0.0]
    assert hit_at_1(scores, 1, "share").tolist() == [0.5, 0.5, 0.0]
    with pytest.raises(ValueError, match="ties must be"):
        beats(a, b, "maybe")  # type: ignore[arg-type]
