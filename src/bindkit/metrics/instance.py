"""Instance-retrieval mAP as the revisited Oxford/Paris code computes it (filipradenovic/revisitop,
python/evaluate.py ``compute_ap`` / ``compute_map``).

- Junk images are removed from the ranking: a positive's 0-based rank is reduced by the number
  of junk images ranked above it.
- AP is the trapezoid rule over the precision-recall curve: for the j-th positive (0-based) at
  rank r, precision before it is j / r (1 when r = 0) and after it (j + 1) / (r + 1); AP sums
  their mean times the recall step 1 / #positives.
- A query without positives is left out of the mean.
- Precision at k (``compute_map``'s ``kappas``; the paper reports mP@1, 5, 10): with the
  positives' 1-based ranks (junk removed), k' = min(k, the last positive's rank) and the
  precision is the number of positives ranked within k' over k'.

The same functions serve INSTRE-style relevance (positives only, no junk).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

#: revisitop's three protocols: which ground-truth lists are positive and which are junk.
SETTINGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "easy": (("easy",), ("junk", "hard")),
    "medium": (("easy", "hard"), ("junk",)),
    "hard": (("hard",), ("junk", "easy")),
}


def trapezoid_ap(positive_ranks: np.ndarray, n_positives: int) -> float:
    """AP from the sorted 0-based ranks of the positives (junk already removed)."""
    ranks = np.asarray(positive_ranks, np.float64)
    j = np.arange(len(ranks), dtype=np.float64)
    before = np.where(ranks == 0, 1.0, j / np.maximum(ranks, 1))
    after = (j + 1) / (ranks + 1)
    return float(((before + after) / 2).sum() / n_positives)


KAPPAS = (1, 5, 10)  # revisitop's example_evaluate.py


def positive_ranks(
    ranking: np.ndarray, positives: Sequence[int], junk: Sequence[int] = ()
) -> np.ndarray:
    """The positives' sorted 0-based ranks in a ranking (database indices, best first), each
    reduced by the junk images ranked above it."""
    ranking = np.asarray(ranking)
    pos = np.flatnonzero(np.isin(ranking, positives))
    bad = np.flatnonzero(np.isin(ranking, junk)) if len(junk) else np.empty(0, np.int64)
    shifted: np.ndarray = pos - np.searchsorted(bad, pos)
    return shifted


def precision_at(ranks: np.ndarray, k: int) -> float:
    """revisitop's precision at ``k`` from the positives' 0-based ranks (junk removed)."""
    one_based = np.asarray(ranks) + 1
    cut = min(int(one_based.max()), k)
    return float((one_based <= cut).sum() / cut)


def query_ap(ranking: np.ndarray, positives: Sequence[int], junk: Sequence[int] = ()) -> float:
    """AP of one ranking (database indices, best first); NaN when there are no positives."""
    if len(positives) == 0:
        return float("nan")
    return trapezoid_ap(positive_ranks(ranking, positives, junk), len(positives))


def rankings(similarity: np.ndarray) -> np.ndarray:
    """(queries, database) similarities → database indices per query, best first (stable)."""
    order: np.ndarray = np.argsort(-np.asarray(similarity, np.float64), axis=1, kind="stable")
    return order


def mean_ap(
    similarity: np.ndarray,
    positives: Sequence[Sequence[int]],
    junk: Sequence[Sequence[int]] | None = None,
) -> tuple[float, np.ndarray]:
    """(mAP over queries with positives, per-query AP with NaN for the rest)."""
    order = rankings(similarity)
    aps = np.array(
        [
            query_ap(order[q], positives[q], () if junk is None else junk[q])
            for q in range(len(order))
        ]
    )
    valid = ~np.isnan(aps)
    return (float(aps[valid].mean()) if valid.any() else float("nan")), aps


def revisited_aps(
    similarity: np.ndarray, gnd: Sequence[Mapping[str, Sequence[int]]]
) -> dict[str, np.ndarray]:
    """AP per query under each protocol (``easy``, ``medium``, ``hard``; NaN for a query without
    positives there): the values whose means over the other queries are ``map_<setting>``."""
    out = {}
    for setting, (ok, bad) in SETTINGS.items():
        positives = [[i for key in ok for i in g.get(key, ())] for g in gnd]
        junk = [[i for key in bad for i in g.get(key, ())] for g in gnd]
        out[setting] = mean_ap(similarity, positives, junk)[1]
    return out


def revisited_maps(
    similarity: np.ndarray, gnd: Sequence[Mapping[str, Sequence[int]]]
) -> dict[str, float]:
    """``map_easy``, ``map_medium``, ``map_hard`` and ``mp_at_K_<setting>`` (mean precision at
    each of :data:`KAPPAS`) from (queries, database) similarities and the revisited ground truth
    (per query: ``easy``, ``hard``, ``junk`` index lists)."""
    order = rankings(similarity)
    out = {}
    for setting, (ok, bad) in SETTINGS.items():
        positives = [[i for key in ok for i in g.get(key, ())] for g in gnd]
        junk = [[i for key in bad for i in g.get(key, ())] for g in gnd]
        out[f"map_{setting}"] = mean_ap(similarity, positives, junk)[0]
        ranks = [
            positive_ranks(order[q], positives[q], junk[q])
            for q in range(len(order))
            if positives[q]
        ]
        for k in KAPPAS:
            values = [precision_at(r, k) for r in ranks]
            out[f"mp_at_{k}_{setting}"] = float(np.mean(values)) if values else float("nan")
    return out


# -- the original Oxford/Paris protocol (Philbin et al. 2007/2008) ---------------------------


def oxford_ap(
    ranking: np.ndarray,
    positives: Sequence[int],
    junk: Sequence[int] = (),
    n_positives: int | None = None,
) -> float:
    """AP of one ranking as the Oxford Buildings ``compute_ap.cpp`` computes it.

    The program walks the ranked list, skips junk images, and adds the trapezoid between the
    previous and the current precision for each recall step, which is :func:`trapezoid_ap` on
    the junk-removed ranks. Its two edge conventions are kept: an image listed both as positive
    (good or ok) and as junk is skipped like junk yet still counts in the denominator, and the
    denominator is the size of the positive set (``n_positives``, default the distinct
    ``positives``), so a positive absent from the ranking lowers the AP. NaN without positives
    (the program divides by zero there).
    """
    total = len(set(positives)) if n_positives is None else n_positives
    if total == 0:
        return float("nan")
    scored = np.setdiff1d(np.asarray(positives, np.int64), np.asarray(junk, np.int64))
    return trapezoid_ap(positive_ranks(ranking, scored.tolist(), junk), total)


def oxford_map(
    similarity: np.ndarray,
    positives: Sequence[Sequence[int]],
    junk: Sequence[Sequence[int]],
    n_positives: Sequence[int] | None = None,
) -> tuple[float, np.ndarray]:
    """(mAP, per-query AP) of (queries, database) similarities under :func:`oxford_ap`, ranked
    by :func:`rankings` (ties in database order); queries without positives are left out."""
    order = rankings(similarity)
    aps = np.array(
        [
            oxford_ap(
                order[q], positives[q], junk[q], None if n_positives is None else n_positives[q]
            )
            for q in range(len(order))
        ]
    )
    valid = ~np.isnan(aps)
    return (float(aps[valid].mean()) if valid.any() else float("nan")), aps


# -- graded relevance (INSTRE-M against INSTRE-S+M) ------------------------------------------


def ndcg(ranking: np.ndarray, gains: np.ndarray) -> float:
    """nDCG of one full ranking (database indices, best first) with linear gains: DCG is
    ``sum(gain[ranking[i]] / log2(i + 2))`` over every rank ``i`` (0-based), divided by the DCG
    of the gains sorted best first. NaN when every gain is 0."""
    gains = np.asarray(gains, np.float64)
    discount = 1.0 / np.log2(np.arange(len(gains), dtype=np.float64) + 2)
    ideal = float((np.sort(gains)[::-1] * discount).sum())
    if ideal == 0:
        return float("nan")
    return float((gains[np.asarray(ranking)] * discount).sum() / ideal)


def graded_scores(similarity: np.ndarray, gains: np.ndarray) -> dict[str, np.ndarray]:
    """Per-query ``ap`` (any positive gain is relevant, no junk) and ``ndcg`` (the gains as
    given) of (queries, database) similarities against (queries, database) gains, ranked by
    :func:`rankings`; NaN for a query with no relevant image."""
    order = rankings(similarity)
    gains = np.asarray(gains, np.float64)
    ap = np.array(
        [query_ap(order[q], np.flatnonzero(gains[q] > 0).tolist()) for q in range(len(order))]
    )
    nd = np.array([ndcg(order[q], gains[q]) for q in range(len(order))])
    return {"ap": ap, "ndcg": nd}
