"""Search over the caller's own chunks (the tenant filter is enforced in the vector store), in the
tenant's active index version: by meaning (dense), by words (keyword, BM25) or both fused (hybrid)."""

from __future__ import annotations

from typing import Any

from flask import g

from gateway.auth import tenant_required
from gateway.blueprint import Blueprint
from gateway.schemas.search import SearchArgsSchema, SearchRequestSchema, SearchResponseSchema
from gateway.services import services
from shared import sparse
from shared.models import Tenant
from shared.search_filter import MetadataCondition, SearchFilter
from shared.settings import Settings
from shared.vectorstores import Hit

blp = Blueprint("search", __name__, description="Search the tenant's documents")


def default_mode(settings: Settings) -> str:
    """Hybrid with a Qdrant server and with the embedded engine (hybrid measured as fast as dense there,
    about 40 ms p50 for a 60,000-point tenant, docs/benchmarks.md); dense on qdrant-client's local mode
    (the embedded rollback), where keyword scoring is a Python loop and hybrid took seconds per query."""
    return "dense" if settings.local_qdrant and settings.embedded_vector_store == "local" else "hybrid"


@blp.route("/v1/search", methods=["GET"])
@tenant_required
@blp.arguments(SearchArgsSchema, location="query", as_kwargs=True)
@blp.response(200, SearchResponseSchema)
def search(q: str, top_k: int, mode: str | None = None, document_id: str | None = None) -> Any:
    """The chunks that best answer `q`, best first, with their pages and documents."""
    narrow = SearchFilter(document_ids=(document_id,)) if document_id else None
    return _search(q, top_k=top_k, mode=mode, narrow=narrow, min_score=None)


@blp.route("/v1/search", methods=["POST"])
@tenant_required
@blp.arguments(SearchRequestSchema, location="json")
@blp.response(200, SearchResponseSchema)
def search_filtered(body: dict[str, Any]) -> Any:
    """The chunks that best answer `query` among those the filter keeps, best first."""
    given = body.get("filter") or {}
    narrow = SearchFilter(
        document_ids=tuple(given["document_ids"]) if "document_ids" in given else None,
        filename=given.get("filename"),
        page_from=given.get("page_from"),
        page_to=given.get("page_to"),
        metadata=tuple(MetadataCondition(**c) for c in given.get("metadata", [])),
    )
    return _search(
        body["query"],
        top_k=body["top_k"],
        mode=body.get("mode"),
        narrow=narrow,
        min_score=body.get("min_score"),
    )


def _search(
    query: str, *, top_k: int, mode: str | None, narrow: SearchFilter | None, min_score: float | None
) -> Any:
    svc = services()
    mode = mode or default_mode(svc.settings)
    store = svc.vectors
    with svc.db.transaction() as session:
        tenant = session.get(Tenant, g.caller.tenant_id)
        assert tenant is not None
        version, model, dimension = (
            tenant.active_index_version,
            tenant.active_embedding_model,
            tenant.active_embedding_dim,
        )
    embedder = svc.embedders.get(model, dimension)
    collection, hybrid = store.place(embedder.model_name, embedder.dimension, g.caller.tenant_id, version)
    if mode == "hybrid" and not hybrid:
        # A version indexed before hybrid search has only its dense vectors (keyword mode says so).
        mode = "dense"
    dense = embedder.embed([query])[0] if mode != "keyword" else None
    hits = store.search(
        collection,
        g.caller.tenant_id,
        index_version=version,
        top_k=top_k,
        mode=mode,
        dense=dense,
        sparse=sparse.query_vector(query) if mode != "dense" else None,
        narrow=narrow,
        min_score=min_score,
    )
    return {"query": query, "mode": mode, "index_version": version, "results": [_hit(h) for h in hits]}


def _hit(hit: Hit) -> dict[str, Any]:
    payload = hit.payload
    return {
        "score": hit.score,
        "document_id": payload.get("document_id"),
        "filename": payload.get("filename"),
        "page_start": payload.get("page_start"),
        "page_end": payload.get("page_end"),
        "chunk_index": payload.get("chunk_index"),
        # The heading the chunk starts under (the payload's `heading`), when one was found,
        # and every heading the chunk spans (a chunk may gather several short sections).
        "section": payload.get("heading"),
        "sections": payload.get("sections") or ([payload["heading"]] if payload.get("heading") else []),
        "text": payload.get("text"),
        "index_version": payload.get("index_version"),
        "metadata": payload.get("metadata") or {},
    }
