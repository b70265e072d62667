"""Vector store adapters behind one protocol, and the one that settings choose.

With a Qdrant URL: qdrant-client against the server. Without one (the embedded topology): the Qdrant
engine in-process (`EdgeStore`, the default), or qdrant-client's local mode when
`INGEST_EMBEDDED_VECTOR_STORE=local` (the rollback). Opening the engine's store first moves any
local-mode data of `qdrant_path` into it (`shared.vectorstores.migration`).
"""

from __future__ import annotations

from shared.settings import Settings
from shared.vectorstores.client_store import QdrantClientStore
from shared.vectorstores.edge_store import EdgeStore
from shared.vectorstores.protocol import (
    Hit,
    StoredPoint,
    VectorStore,
    collection_name,
    hybrid_collection_name,
)

EMBEDDED_STORES = ("edge", "local")

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


def open_vector_store(settings: Settings, *, migrate: bool = True) -> VectorStore:
    """The store `settings` choose, opened (one per process: the embedded ones own their folder)."""
    from qdrant_client import QdrantClient

    if settings.qdrant_url:
        client = QdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key or None, timeout=30)
        return QdrantClientStore(client, prefix=settings.qdrant_collection_prefix, server=True)
    if settings.embedded_vector_store not in EMBEDDED_STORES:
        raise ValueError(f"INGEST_EMBEDDED_VECTOR_STORE must be one of {EMBEDDED_STORES}")
    if settings.embedded_vector_store == "local":
        client = QdrantClient(path=settings.effective_qdrant_path)
        return QdrantClientStore(client, prefix=settings.qdrant_collection_prefix, server=False)
    store = EdgeStore(settings.effective_edge_path, prefix=settings.qdrant_collection_prefix)
    if migrate:
        from shared.vectorstores.migration import migrate_local_mode

        migrate_local_mode(settings.effective_qdrant_path, store)
    return store
