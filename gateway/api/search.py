"""Semantic search over the caller's own chunks (the tenant filter is enforced in the vector store),
in the tenant's active index version, with the query embedded by that version's model."""

from __future__ import annotations

from typing import Any

from flask import g
from flask_smorest import Blueprint

from gateway.auth import tenant_required
from gateway.schemas.search import SearchArgsSchema, SearchResponseSchema
from gateway.services import services
from shared.models import Tenant

blp = Blueprint("search", __name__, description="Search the tenant's documents")


@blp.route("/v1/search", methods=["GET"])
@tenant_required
@blp.arguments(SearchArgsSchema, location="query", as_kwargs=True)
@blp.response(200, SearchResponseSchema)
def search(q: str, top_k: int, document_id: str | None = None) -> Any:
    """The chunks closest in meaning to `q`, best first, with their pages and documents."""
    svc = services()
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
    filters = {"document_id": document_id} if document_id else {}
    vector = embedder.embed([q])[0]
    collection = store.collection(embedder.model_name, embedder.dimension)
    hits = store.search(collection, g.caller.tenant_id, vector, index_version=version, top_k=top_k, **filters)
    return {
        "query": q,
        "index_version": version,
        "results": [
            {
                "score": hit.score,
                "document_id": hit.payload.get("document_id"),
                "page_start": hit.payload.get("page_start"),
                "page_end": hit.payload.get("page_end"),
                "chunk_index": hit.payload.get("chunk_index"),
                # The heading the chunk starts under (the payload's `heading`), when one was found,
                # and every heading the chunk spans (a chunk may gather several short sections).
                "section": hit.payload.get("heading"),
                "sections": hit.payload.get("sections")
                or ([hit.payload["heading"]] if hit.payload.get("heading") else []),
                "text": hit.payload.get("text"),
                "index_version": hit.payload.get("index_version"),
            }
            for hit in hits
        ],
    }
