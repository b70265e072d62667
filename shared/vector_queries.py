"""The Qdrant query of each search mode: dense (cosine), keyword (BM25 on the sparse vector, IDF over a
corpus filter) and hybrid (both rankings fused by reciprocal rank), with what `min_score` means in each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from qdrant_client import models

from shared import sparse as lexical

DENSE, SPARSE, HYBRID_SUFFIX = "dense", "sparse", "_hybrid"
MODES = ("hybrid", "dense", "keyword")
# Candidates each side of a hybrid query brings to the fusion; dense ones a `min_score` lets through.
PREFETCH_MIN, THRESHOLD_POOL = 50, 1000


def mode_query(
    mode: str,
    *,
    hybrid: bool,
    dense: Sequence[float] | None,
    sparse: lexical.SparseVector | None,
    corpus: models.Filter,
    top_k: int,
    min_score: float | None,
) -> dict[str, Any]:
    """`query_points` arguments for `mode` on a hybrid collection (or a dense-only one, dense mode);
    `corpus` is the points IDF is counted over."""
    if (mode != "keyword" and dense is None) or (mode != "dense" and sparse is None):
        raise ValueError(f"{mode} search needs its query vectors")
    idf = models.SearchParams(idf=models.IdfCorpusParams(corpus=corpus))
    dense_query = list(dense) if dense is not None else None
    sparse_query = models.SparseVector(indices=sparse.indices, values=sparse.values) if sparse else None
    if mode == "dense":
        return {"query": dense_query, "using": DENSE if hybrid else None, "score_threshold": min_score}
    if mode == "keyword":
        return {"query": sparse_query, "using": SPARSE, "search_params": idf, "score_threshold": min_score}
    pool = max(PREFETCH_MIN, 4 * top_k)
    # Under a `min_score`, the keyword side ranks only the dense candidates that reach it.
    close = models.Prefetch(query=dense_query, using=DENSE, score_threshold=min_score, limit=THRESHOLD_POOL)
    prefetch = [
        models.Prefetch(query=dense_query, using=DENSE, score_threshold=min_score, limit=pool),
        models.Prefetch(
            prefetch=[close] if min_score is not None else None,
            query=sparse_query,
            using=SPARSE,
            params=idf,
            limit=pool,
        ),
    ]
    return {"prefetch": prefetch, "query": models.FusionQuery(fusion=models.Fusion.RRF)}
