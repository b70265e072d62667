"""What differs on a Qdrant server: payload indexes (the tenant's `is_tenant`), and the same tenant
scope, filters and hybrid search as local mode. Runs only where a server is reachable: set
`INGEST_QDRANT_URL` (no server can run on the development machines, so this stays unrun there)."""

from __future__ import annotations

import os
import uuid

import pytest

from shared import sparse
from shared.search_filter import SearchFilter
from shared.settings import Settings
from shared.vectorstores import QdrantClientStore, open_vector_store

QDRANT_URL = os.environ.get("INGEST_QDRANT_URL", "")
pytestmark = pytest.mark.skipif(not QDRANT_URL, reason="needs a Qdrant server: set INGEST_QDRANT_URL")
DIM = 4


def test_a_server_collection_indexes_the_tenant_and_keeps_tenants_apart() -> None:
    # Given a hybrid collection of its own on the server
    store = open_vector_store(
        Settings(qdrant_url=QDRANT_URL, qdrant_collection_prefix=f"t{uuid.uuid4().hex[:8]}")
    )
    assert isinstance(store, QdrantClientStore)
    name = store.collection("model", DIM)
    try:
        store.ensure_collection(name, DIM)
        # Then its payload indexes include the tenant, marked as the tenant key
        schema = store.client.get_collection(name).payload_schema
        assert {"tenant_id", "document_id", "job_id", "index_version", "filename", "page_start"} <= set(
            schema
        )
        assert getattr(schema["tenant_id"].params, "is_tenant", False) is True

        # When two tenants write the same words
        for tenant, doc in (("a", "da"), ("b", "db")):
            payloads = [
                {
                    "tenant_id": tenant,
                    "document_id": doc,
                    "job_id": f"j{doc}",
                    "chunk_index": 0,
                    "index_version": 1,
                    "filename": f"{doc}.pdf",
                    "page_start": 1,
                    "page_end": 1,
                    "text": "zircon gasket",
                    "metadata": {},
                }
            ]
            store.upsert(
                name,
                [str(uuid.uuid4())],
                [[1.0, 0.0, 0.0, 0.0]],
                payloads,
                [sparse.document_vector("zircon gasket")],
            )

        # Then every mode, filtered or not, answers each tenant with its own points only
        for mode in ("dense", "keyword", "hybrid"):
            for tenant, doc in (("a", "da"), ("b", "db")):
                hits = store.search(
                    name,
                    tenant,
                    index_version=1,
                    top_k=5,
                    mode=mode,
                    dense=[1.0, 0.0, 0.0, 0.0],
                    sparse=sparse.query_vector("gasket"),
                    narrow=SearchFilter(document_ids=("da", "db")),
                )
                assert [h.payload["document_id"] for h in hits] == [doc]
    finally:
        store.client.delete_collection(name)
        store.close()
