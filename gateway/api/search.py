"""Semantic search over the caller's own chunks (the tenant filter is enforced in the vector store)."""

from __future__ import annotations

from typing import Any

from flask import g
from flask_smorest import Blueprint

from gateway.auth import tenant_required
from gateway.schemas import SearchArgsSchema, SearchResponseSchema
from gateway.services import services

blp = Blueprint("search", __name__, description="Search the tenant's documents")


@blp.route("/v1/search", methods=["GET"])
@tenant_required
@blp.arguments(SearchArgsSchema, location="query", as_kwargs=True)
@blp.response(200, SearchResponseSchema)
def search(q: str, top_k: int, document_id: str | None = None) -> Any:
    """The chunks closest in meaning to `q`, best first, with their pages and documents."""
    svc = services()
    store = svc.vectors
    embedder = svc.embedder
    filters = {"document_id": document_id} if document_id else {}
    vector = embedder.embed([q])[0]
    collection = store.collection(embedder.model_name, embedder.dimension)
    hits = store.search(collection, g.caller.tenant_id, vector, top_k=top_k, **filters)
    return {
        "query": q,
        "results": [
            {
                "score": hit.score,
                "document_id": hit.payload.get("document_id"),
                "page_start": hit.payload.get("page_start"),
                "page_end": hit.payload.get("page_end"),
                "chunk_index": hit.payload.get("chunk_index"),
                # The nearest heading above the chunk (the payload's `heading`), when one was found.
                "section": hit.payload.get("heading"),
                "text": hit.payload.get("text"),
            }
            for hit in hits
        ],
    }
