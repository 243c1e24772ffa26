"""Metrics on hand-computed cases (ties included) and blocked == plain equivalence."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bindkit.metrics.containment import fraction_above
from bindkit.metrics.correlation import average_ranks, spearman, triplet_accuracy
from bindkit.metrics.mcq import mcq_accuracy, mcq_credit, winner_shares
from bindkit.metrics.retrieval import (
    average_precision,
    average_precision_dense,
    count_at_least,
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
    ap = average_precision(queries, gallery, [[0, 2]], query_block=1, gallery_block=3)
    assert ap[0] == pytest.approx((1 + 2 / 3) / 2, abs=1e-6)
    gallery_tied = np.array([[s, np.sqrt(1 - s * s)] for s in tied], dtype=np.float32)
    assert average_precision(queries, gallery_tied, [[0]])[0] == pytest.approx(1 / 3)


@settings(max_examples=30, deadline=None)
@example(seed=5, n_queries=2, n_gallery=256, qb=1, gb=1, tie_fraction=0.3)  # once flaky
@given(
    seed=st.integers(0, 10_000),
    n_queries=st.integers(1, 12),
    n_gallery=st.integers(1, 300),
    qb=st.integers(1, 8),
    gb=st.integers(1, 128),
    tie_fraction=st.sampled_from([0.0, 0.3]),
)
def test_blocked_map_equals_plain_reference(
    seed: int, n_queries: int, n_gallery: int, qb: int, gb: int, tie_fraction: float
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
    blocked = average_precision(queries, gallery, relevant, query_block=qb, gallery_block=gb)
    dense_scores = queries @ gallery.T
    for q in range(n_queries):
        mask = np.zeros(n_gallery, bool)
        mask[relevant[q]] = True
        assert blocked[q] == pytest.approx(average_precision_dense(dense_scores[q], mask), abs=1e-9)


def test_count_at_least_matches_dense() -> None:
    rng = np.random.default_rng(0)
    q = rng.standard_normal((5, 4)).astype(np.float32)
    g = rng.standard_normal((50, 4)).astype(np.float32)
    thresholds = rng.standard_normal((5, 3)).astype(np.float32)
    dense = (q @ g.T)[:, None, :] >= thresholds[:, :, None] - 1e-6
    np.testing.assert_array_equal(
        count_at_least(q, g, thresholds, query_block=2, gallery_block=7), dense.sum(axis=2)
    )


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
