"""SaHa (Algorithm 1 step by step), the baselines, the index and the false-negative claim."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bindkit.errors import BindkitError
from bindkit.mining.baselines import hard_negatives, random_negatives
from bindkit.mining.diagnostics import diagnose, format_table
from bindkit.mining.index import IndexConfig, block_sizes, numpy_search, release_pages, search
from bindkit.mining.pool import Cluster, Pool
from bindkit.mining.saha import saha, saha_from_retrieved, select_negatives


def gram_vectors(gram: dict[tuple[int, int], float], n: int) -> np.ndarray:
    """Vectors whose dot products are the given (unit diagonal) Gram matrix."""
    g = np.eye(n)
    for (i, j), value in gram.items():
        g[i, j] = g[j, i] = value
    return np.linalg.cholesky(g).astype(np.float32)


def unit(angle_deg: float) -> list[float]:
    a = np.deg2rad(angle_deg)
    return [float(np.cos(a)), float(np.sin(a))]


# Step 2: owner identification ------------------------------------------------------------


def test_identical_candidates_map_to_the_owner_most_similar_to_the_anchor() -> None:
    # rows 0,1 share candidate 0; rows 2,3 share candidate 1; row 4 owns candidate 2
    q = gram_vectors({(4, 0): 0.2, (4, 1): 0.7, (4, 2): 0.6, (4, 3): 0.1}, 5)
    pool = Pool(q, np.eye(3, dtype=np.float32), np.array([0, 0, 1, 1, 2]))
    assert [list(pool.owners(c)) for c in range(3)] == [[0, 1], [2, 3], [4]]
    assert pool.pick_owner(4, 0, label_filter=False) == 1
    assert pool.pick_owner(4, 1, label_filter=False) == 2
    assert pool.owner_list(4, np.array([2, 0, 1]), label_filter=False) == [1, 2]


def test_the_anchors_own_positive_never_yields_a_negative_even_through_a_co_owner() -> None:
    q = gram_vectors({(0, 1): 0.99}, 3)
    pool = Pool(q, np.eye(2, dtype=np.float32), np.array([0, 0, 1]))
    assert pool.pick_owner(0, 0, label_filter=False) is None
    assert pool.owner_list(0, np.array([0, 1]), label_filter=False) == [2]


def test_owners_are_listed_once_in_retrieval_order_and_missing_hits_are_skipped() -> None:
    q = gram_vectors({}, 4)
    pool = Pool(q, np.eye(4, dtype=np.float32), np.array([0, 1, 2, 3]))
    assert pool.owner_list(0, np.array([3, -1, 1, 3, 0]), label_filter=False) == [3, 1]


# Step 3: self-aware filtering -----------------------------------------------------------


def test_keeps_the_k_owners_least_similar_to_the_anchor() -> None:
    q = gram_vectors({(0, 1): 0.6, (0, 2): 0.4, (0, 3): 0.1, (0, 4): 0.5}, 5)
    pool = Pool(q, np.eye(5, dtype=np.float32), np.arange(5))
    assert select_negatives(pool, 0, [1, 2, 3, 4], 2, label_filter=True) == (3, 2)
    assert select_negatives(pool, 0, [], 2, label_filter=True) == ()


def test_label_bypass_discards_candidates_with_a_same_label_owner_and_keeps_retrieval_order() -> (
    None
):
    # anchor 0 is a "cat"; rows 1 and 2 share candidate 1: 1 is a cat, 2 a dog
    q = gram_vectors({(0, 1): 0.3, (0, 2): 0.2, (0, 3): 0.8, (0, 4): 0.1, (0, 5): 0.35}, 6)
    labels = ["cat", "cat", "dog", "cow", "cat", "cow"]
    pool = Pool(q, np.eye(5, dtype=np.float32), np.array([0, 1, 1, 2, 3, 4]), labels)
    owners = pool.owner_list(0, np.array([0, 1, 2, 3, 4]), label_filter=True)
    # the seed discards candidate 1 (a cat owns it) even though a dog owns it too; candidate 3
    # (owned by the cat row 4) goes as well
    assert owners == [3, 5]
    assert pool.pick_owner(0, 1, label_filter=True) is None
    # the similarity is bypassed: row 3 (sim 0.8) stays first, in retrieval order
    assert select_negatives(pool, 0, owners, 2, label_filter=True) == (3, 5)
    # without the filter the most similar owner (the cat, row 1) is taken and sorting applies
    plain = pool.owner_list(0, np.array([0, 1, 2, 3, 4]), label_filter=False)
    assert plain == [1, 3, 4, 5]
    assert select_negatives(pool, 0, plain, 2, label_filter=False) == (4, 1)


def test_false_negative_rate_counts_a_candidate_co_owned_by_a_same_label_row() -> None:
    # anchor 0 (cat): its negative row 2 is a dog, but 2's positive (candidate 1) is also the
    # positive of the cat row 1, so the negative is a false negative
    q = gram_vectors({(0, 1): 0.3, (0, 2): 0.2}, 4)
    cands = np.eye(4, dtype=np.float32)[:3]
    pool = Pool(q, cands, np.array([0, 1, 1, 2]), ["cat", "cat", "dog", "cow"])
    d = diagnose(pool, [Cluster(0, (2, 3))])
    assert (d.false_negatives, d.labelled_negatives) == (1, 2)
    assert d.false_negative_rate == 0.5


def test_unlabelled_anchor_ignores_the_label_filter() -> None:
    q = gram_vectors({(0, 1): 0.5, (0, 2): 0.1}, 3)
    pool = Pool(q, np.eye(3, dtype=np.float32), np.arange(3), [None, "x", None])
    assert pool.owner_list(0, np.array([1, 2]), label_filter=True) == [1, 2]
    assert select_negatives(pool, 0, [1, 2], 1, label_filter=True) == (2,)


# Phases 1 and 2 ---------------------------------------------------------------------------

PHASE_GRAM = {(0, 1): 0.6, (0, 2): 0.4, (0, 3): 0.1, (1, 2): 0.2, (1, 3): 0.3, (1, 4): 0.4}
PHASE_RETRIEVED = np.array(
    [[0, 1, 2, 3], [1, 0, 2, 3], [2, 0, 1, 3], [3, 0, 1, 2], [4, 1, 0, 2]], dtype=np.int64
)


def test_phase_one_is_strictly_non_overlapping_and_phase_two_reuses_with_limits() -> None:
    pool = Pool(gram_vectors(PHASE_GRAM, 5), np.eye(5, dtype=np.float32), np.arange(5))
    clusters = saha_from_retrieved(pool, PHASE_RETRIEVED, k=2)
    assert [(c.rows, c.phase) for c in clusters] == [
        ((0, 3, 2), 1),  # the two owners least similar to 0
        # leftovers: 1 found only used owners, 4 only one free owner
        ((1, 2, 3), 2),  # phase 2 may reuse phase-1 rows
        ((4, 0, 1), 2),  # ... but not 2, a negative of another phase-2 cluster
    ]


def test_every_row_is_covered_and_phase_one_clusters_are_disjoint() -> None:
    pool, _ = synthetic_groups(seed=3)
    clusters = saha(pool, k=7, m=4)
    first = [c for c in clusters if c.phase == 1]
    rows = [r for c in first for r in c.rows]
    assert len(rows) == len(set(rows))
    assert all(len(c.negatives) == 7 for c in first)
    assert set().union(*(c.rows for c in clusters)) == set(range(len(pool)))
    assert diagnose(pool, clusters).uncovered == 0


# Baselines -----------------------------------------------------------------------------


def test_hn_takes_the_top_k_candidates_and_the_margin_skips_near_positives() -> None:
    # anchor 0 at angle 0 with its positive at cos 0.8; other candidates at cos .9 .78 .5 .3
    cands = [unit(np.rad2deg(np.arccos(c))) for c in (0.8, 0.9, 0.78, 0.5, 0.3)]
    q = np.array([unit(0), unit(90), unit(80), unit(70), unit(60)], dtype=np.float32)
    pool = Pool(q, np.array(cands, dtype=np.float32), np.arange(5))
    assert hard_negatives(pool, k=2, m=2)[0].negatives == (1, 2)
    margin = hard_negatives(pool, k=2, m=3, relative_margin=0.05)[0]
    assert margin.negatives == (3, 4)  # threshold 0.8 - 0.04 = 0.76 drops .9 and .78
    # the margin only filters the m·k retrieved: with m=2 one survivor remains
    assert hard_negatives(pool, k=2, m=2, relative_margin=0.05)[0].negatives == (3,)


def test_random_never_draws_the_own_positive_and_is_seeded() -> None:
    pool, _ = synthetic_groups(seed=1)
    clusters = random_negatives(pool, k=7, seed=5)
    for c in clusters:
        assert len(set(c.negatives)) == 7
        assert all(pool.positive[n] != pool.positive[c.anchor] for n in c.negatives)
    again = random_negatives(pool, k=7, seed=5)
    assert [c.rows for c in again] == [c.rows for c in clusters]


# Index ---------------------------------------------------------------------------------


def test_numpy_search_matches_brute_force_across_blocks() -> None:
    rng = np.random.default_rng(0)
    q = rng.standard_normal((37, 16)).astype(np.float32)
    c = rng.standard_normal((53, 16)).astype(np.float32)
    assert block_sizes(37, 53, 16, 2000) == (7, 7)  # several blocks both ways
    scores, ids = numpy_search(q, c, 9, memory=2000)
    full = q @ c.T
    expected = np.argsort(-full, axis=1, kind="stable")[:, :9]
    np.testing.assert_array_equal(ids, expected)
    np.testing.assert_allclose(scores, np.take_along_axis(full, expected, 1), rtol=1e-6)
    assert numpy_search(q, c, 99)[1].shape == (37, 53)
    # ties go to the lower id, across blocks too
    tied = np.ones((3, 16), dtype=np.float32)
    assert numpy_search(tied[:1], tied, 2, memory=200)[1].tolist() == [[0, 1]]


def test_exact_search_scratch_stays_within_the_memory_budget(tmp_path: Path) -> None:
    """The budget bounds what the search allocates besides its output, on a memory-mapped
    corpus too (tracemalloc sees numpy's allocations; the mapped pages are not copied)."""
    import tracemalloc

    rng = np.random.default_rng(0)
    corpus = rng.standard_normal((6000, 64)).astype(np.float32)
    np.save(tmp_path / "c.npy", corpus)
    mapped = np.load(tmp_path / "c.npy", mmap_mode="r")
    queries = corpus[:2000].copy()
    budget = 1 << 18  # 256 KiB, against 1.5 MiB for the corpus and 48 MiB for all scores
    output = len(queries) * 10 * (4 + 8)
    tracemalloc.start()
    try:
        _, ids = numpy_search(queries, mapped, 10, memory=budget)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak - output <= budget
    np.testing.assert_array_equal(ids[:, 0], np.arange(2000))


def test_faiss_flat_equals_the_numpy_fallback() -> None:
    pytest.importorskip("faiss")
    rng = np.random.default_rng(1)
    q = rng.standard_normal((200, 32)).astype(np.float32)
    c = rng.standard_normal((500, 32)).astype(np.float32)
    f_scores, f_ids = search(q, c, 28, IndexConfig(backend="faiss"))
    n_scores, n_ids = search(q, c, 28, IndexConfig(backend="numpy"))
    np.testing.assert_array_equal(f_ids, n_ids)
    np.testing.assert_allclose(f_scores, n_scores, atol=1e-4)
    pool, _ = synthetic_groups(seed=2)
    a = saha(pool, index=IndexConfig(backend="faiss"))
    b = saha(pool, index=IndexConfig(backend="numpy"))
    assert [c.rows for c in a] == [c.rows for c in b]


def test_approximate_indexes_find_the_exact_neighbours_on_easy_data() -> None:
    pytest.importorskip("faiss")
    pool, _ = synthetic_groups(seed=4)
    exact = search(pool.queries, pool.candidates, 5)[1][:, 0]
    for kind in ("ivf", "hnsw"):
        ids = search(pool.queries, pool.candidates, 5, IndexConfig(kind=kind, nlist=4, nprobe=4))
        assert np.mean(ids[1][:, 0] == exact) > 0.95


def test_index_options_are_validated() -> None:
    with pytest.raises(BindkitError, match="--index 'lsh'"):
        IndexConfig(kind="lsh")  # type: ignore[arg-type]
    with pytest.raises(BindkitError, match="nprobe"):
        IndexConfig(nprobe=0)


# The claim: fewer false negatives than hn at equal k ----------------------------------------


def synthetic_groups(
    seed: int, topics: int = 5, groups_per_topic: int = 8, size: int = 4, dim: int = 64
) -> tuple[Pool, list[str]]:
    """Groups of near-duplicate queries whose positives are near-duplicates too (paraphrases of
    one answer), groups of a topic close to each other. A group-mate's positive is a false
    negative; the group is the label."""
    rng = np.random.default_rng(seed)

    def norm(x: np.ndarray) -> np.ndarray:
        return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)

    queries, positives, labels = [], [], []
    for t in range(topics):
        topic = rng.standard_normal(dim)
        for g in range(groups_per_topic):
            center = topic + 0.7 * rng.standard_normal(dim)
            for _ in range(size):
                queries.append(center + 0.08 * rng.standard_normal(dim))
                positives.append(center + 0.08 * rng.standard_normal(dim))
                labels.append(f"{t}-{g}")
    n = len(queries)
    return Pool(norm(np.array(queries)), norm(np.array(positives)), np.arange(n), labels), labels


def test_saha_has_measurably_fewer_false_negatives_than_hn_at_equal_k() -> None:
    pool, _ = synthetic_groups(seed=0)
    hn = diagnose(pool, hard_negatives(pool, k=7, m=4))
    sa = diagnose(pool, saha(pool, k=7, m=4, label_filter=False))  # labels: diagnostics only
    assert hn.false_negative_rate is not None and sa.false_negative_rate is not None
    assert hn.false_negative_rate > 0.35  # the 3 group-mates rank first: 3/7
    assert sa.false_negative_rate < 0.5 * hn.false_negative_rate
    assert sa.high_risk_rate is not None and hn.high_risk_rate is not None
    assert sa.high_risk_rate < hn.high_risk_rate
    # the label bypass removes them all
    labelled = diagnose(pool, saha(pool, k=7, m=4, label_filter=True))
    assert labelled.false_negative_rate == 0.0
    table = format_table({"hn": hn, "saha": sa})
    assert "saha" in table and "%" in table


def _rss_bytes() -> int:
    import os

    return int(Path("/proc/self/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads /proc (Linux)")
def test_a_memory_mapped_corpus_is_searched_without_staying_resident(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    corpus = np.lib.format.open_memmap(
        tmp_path / "c.npy", mode="w+", dtype=np.float32, shape=(32_000, 512)
    )  # 64 MiB
    for start in range(0, len(corpus), 8000):
        corpus[start : start + 8000] = rng.standard_normal((8000, 512))
    corpus.flush()
    del corpus
    mapped = np.load(tmp_path / "c.npy", mmap_mode="r")
    queries = np.array(mapped[:64])
    before = _rss_bytes()
    _, ids = numpy_search(queries, mapped, 5, memory=4 << 20)
    assert _rss_bytes() - before < 16 << 20  # the 64 MiB read went back to the page cache
    np.testing.assert_array_equal(ids[:, 0], np.arange(64))
    float(np.asarray(mapped[:16_000]).sum())  # a plain read stays resident ...
    assert _rss_bytes() - before > 24 << 20
    release_pages(mapped[:16_000])  # ... until released
    assert _rss_bytes() - before < 16 << 20


def test_positive_scores_match_across_blocks() -> None:
    pool, _ = synthetic_groups(seed=5)
    expected = np.sum(pool.queries * pool.candidates[pool.positive], axis=1)
    np.testing.assert_allclose(pool.positive_scores(block=7), expected, rtol=1e-5)


def test_hn_array_path_equals_the_owner_loop() -> None:
    from bindkit.mining.baselines import _from_candidates

    rng = np.random.default_rng(7)
    q = rng.standard_normal((60, 8)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    positive = rng.integers(0, 45, 60)  # some candidates shared, some ownerless
    positive[:45] = np.arange(45)
    pool = Pool(q, q[:45].copy(), positive)
    retrieved = search(pool.queries, pool.candidates, 12)[1]
    retrieved[3, 5] = -1  # an approximate index's missing hit
    fast = hard_negatives(pool, k=5, m=3)
    slow = [_from_candidates(pool, a, retrieved[a], 5) for a in range(len(pool))]
    assert [c.rows for c in fast] == [
        _from_candidates(pool, a, search(pool.queries, pool.candidates, 15)[1][a], 5).rows
        for a in range(len(pool))
    ]
    from bindkit.mining.baselines import _owners_of_retrieved

    assert [c.rows for c in _owners_of_retrieved(pool, retrieved, 5)] == [c.rows for c in slow]


def test_the_scatter_draws_a_bounded_seeded_sample() -> None:
    from bindkit.mining.diagnostics import Diagnostics, scatter_sample

    d = Diagnostics(hardness=list(np.linspace(0, 1, 50)), owner_similarity=list(np.arange(50.0)))
    x, y = scatter_sample(d, limit=10)
    assert len(x) == len(y) == 10 and len(set(y.tolist())) == 10
    np.testing.assert_allclose(x, y / 49)  # points stay paired
    np.testing.assert_array_equal(scatter_sample(d, limit=10)[1], y)  # seeded
    assert len(scatter_sample(d, limit=99)[0]) == 50
