"""GET /v1/search: semantic search over the caller's own chunks (the tenant filter is enforced in
the vector store adapter)."""

from __future__ import annotations

from typing import Any

from flask import Blueprint, g, jsonify, request

from gateway.auth import tenant_required
from gateway.services import services
from shared.errors import InvalidRequestError

bp = Blueprint("search", __name__)

MAX_TOP_K = 100


@bp.get("/v1/search")
@tenant_required
def search() -> Any:
    query = (request.args.get("q") or "").strip()
    if not query:
        raise InvalidRequestError("Give a query as ?q=...", code="missing_query")
    try:
        top_k = int(request.args.get("top_k", "5"))
    except ValueError:
        raise InvalidRequestError("top_k must be an integer.", code="invalid_top_k") from None
    if not 1 <= top_k <= MAX_TOP_K:
        raise InvalidRequestError(f"top_k must be between 1 and {MAX_TOP_K}.", code="invalid_top_k")
    filters = {}
    if document_id := request.args.get("document_id"):
        filters["document_id"] = document_id
    svc = services()
    store = svc.vectors
    embedder = svc.embedder
    vector = embedder.embed([query])[0]
    collection = store.collection(embedder.model_name, embedder.dimension)
    hits = store.search(collection, g.caller.tenant_id, vector, top_k=top_k, **filters)
    return jsonify(
        {
            "query": query,
            "results": [
                {
                    "score": hit.score,
                    "document_id": hit.payload.get("document_id"),
                    "page_start": hit.payload.get("page_start"),
                    "page_end": hit.payload.get("page_end"),
                    "chunk_index": hit.payload.get("chunk_index"),
                    "text": hit.payload.get("text"),
                }
                for hit in hits
            ],
        }
    )
