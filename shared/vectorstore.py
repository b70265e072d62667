"""The vector store's names as callers import them (the adapters live in `shared.vectorstores`)."""

from __future__ import annotations

from shared.vectorstores import (
    EdgeStore,
    Hit,
    QdrantClientStore,
    StoredPoint,
    VectorStore,
    collection_name,
    hybrid_collection_name,
    open_vector_store,
)

__all__ = [
    "EdgeStore",
    "Hit",
    "QdrantClientStore",
    "StoredPoint",
    "VectorStore",
    "collection_name",
    "hybrid_collection_name",
    "open_vector_store",
]
