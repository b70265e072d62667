"""The engine's query of each search mode, as `shared.vector_queries` builds them for qdrant-client:
dense (cosine), keyword (BM25 on the sparse vector, IDF over a corpus filter) and hybrid (both rankings
fused by reciprocal rank, k = 2 as Qdrant's default), with what `min_score` means in each.

The engine computes IDF over the corpus filter itself (`IdfParams(corpus=...)`) and fuses by RRF
(`Fusion.Rrf`), so neither is done here; the scope filter is repeated on every prefetch so that no
candidate of another tenant or version can reach the fusion.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import qdrant_edge as qe

from shared import sparse as lexical
from shared.vector_queries import DENSE, PREFETCH_MIN, SPARSE, THRESHOLD_POOL

RRF_K = 2


def mode_request(
    mode: str,
    *,
    hybrid: bool,
    dense: Sequence[float] | None,
    sparse: lexical.SparseVector | None,
    scope: qe.Filter | None,
    corpus: qe.Filter | None,
    top_k: int,
    min_score: float | None,
) -> qe.QueryRequest:
    """The request of `mode` on a hybrid shard (or a dense-only one, dense mode); `corpus` is the
    points IDF is counted over."""
    if (mode != "keyword" and dense is None) or (mode != "dense" and sparse is None):
        raise ValueError(f"{mode} search needs its query vectors")
    idf = qe.SearchParams(idf=qe.IdfParams(corpus=corpus))
    dense_query = (
        qe.Query.Nearest(list(dense), using=DENSE if hybrid else None) if dense is not None else None
    )
    sparse_query = (
        qe.Query.Nearest(qe.SparseVector(list(sparse.indices), list(sparse.values)), using=SPARSE)
        if sparse is not None
        else None
    )
    if mode == "dense":
        return qe.QueryRequest(
            limit=top_k, query=dense_query, filter=scope, score_threshold=min_score, with_payload=True
        )
    if mode == "keyword":
        return qe.QueryRequest(
            limit=top_k,
            query=sparse_query,
            filter=scope,
            params=idf,
            score_threshold=min_score,
            with_payload=True,
        )
    pool = max(PREFETCH_MIN, 4 * top_k)
    # Under a `min_score`, the keyword side ranks only the dense candidates that reach it.
    close = qe.Prefetch(limit=THRESHOLD_POOL, query=dense_query, filter=scope, score_threshold=min_score)
    prefetches = [
        qe.Prefetch(limit=pool, query=dense_query, filter=scope, score_threshold=min_score),
        qe.Prefetch(
            limit=pool,
            query=sparse_query,
            prefetches=[close] if min_score is not None else None,
            params=idf,
            filter=scope,
        ),
    ]
    # The stubs type `query` as `Fusion`, whose variants (`Fusion.Rrf`) are what the engine takes.
    fusion: Any = qe.Fusion.Rrf(k=RRF_K)
    return qe.QueryRequest(limit=top_k, query=fusion, prefetches=prefetches, filter=scope, with_payload=True)
