"""PODS' retrieval scores (Sundaram et al., ICLR 2025; ssundaram21/personalized-rep,
downstream/retrieval.py), restated: a query photo of one object ranks the whole reference set
(every object's reference views) by cosine similarity, and

- NDCG: binary relevance (a reference view of the query's object) over the whole ranking,
  DCG = sum rel_i / log2(i + 2) over 0-based ranks i, divided by the ideal DCG (0 when the
  object has no reference view);
- MRR: 1 / the 1-based rank of the first reference view of the object;
- top-10 accuracy: 1 when one of them is among the first 10.

The official code averages each over one object's queries (one run per object).
"""

from __future__ import annotations

import numpy as np

TOP_K = 10  # retrieval.py's top_k_accuracy(..., 10)


def ranked_relevance(similarity: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """Per query row, whether each reference at rank 0, 1, ... is relevant (best first;
    equal similarities keep the reference order)."""
    order = np.argsort(-np.asarray(similarity, np.float64), axis=1, kind="stable")
    ranked: np.ndarray = np.take_along_axis(np.asarray(relevant, bool), order, axis=1)
    return ranked


def ndcg(ranked: np.ndarray) -> np.ndarray:
    """NDCG of each row of ranked binary relevance (0 where a row has no relevant item).

    Example:
        >>> ndcg(np.array([[0, 1, 0]], bool)).round(4).tolist()
        [0.6309]
    """
    ranked = np.asarray(ranked, np.float64)
    discount = 1.0 / np.log2(np.arange(2, ranked.shape[1] + 2))
    dcg = ranked @ discount
    ideal = np.array([discount[: int(n)].sum() for n in ranked.sum(axis=1)])
    out: np.ndarray = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)
    return out


def reciprocal_rank(ranked: np.ndarray) -> np.ndarray:
    """1 / the 1-based rank of each row's first relevant item (0 where there is none)."""
    ranked = np.asarray(ranked, bool)
    first = ranked.argmax(axis=1)
    out: np.ndarray = np.where(ranked.any(axis=1), 1.0 / (first + 1), 0.0)
    return out


def hit_at(ranked: np.ndarray, k: int = TOP_K) -> np.ndarray:
    """1.0 where a relevant item is among a row's first ``k``."""
    return np.asarray(np.asarray(ranked, bool)[:, :k].any(axis=1), dtype=np.float64)
