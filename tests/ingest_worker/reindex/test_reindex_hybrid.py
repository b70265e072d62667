"""A tenant indexed before hybrid search (a dense-only collection) keeps searching densely, and a reindex
from the index stage moves it into the hybrid collection without embedding anything again."""

from __future__ import annotations

import pytest
from qdrant_client import models
from sqlalchemy import select

from shared.models import Job, JobKind, JobStage
from shared.settings import Settings
from shared.vectorstores import collection_name
from tests.shared.embedders.fakes import FakeEmbedder
from tests.support.inprocess import in_process_service
from tests.support.reindexing import (
    TOPICS,
    active_version,
    admin_key,
    ingest,
    points_of,
    tenant_with_key,
    wait_purged,
    wait_reindex,
)

pytestmark = pytest.mark.slow

LEGACY = collection_name("chunks", FakeEmbedder.model_name, FakeEmbedder.dimension)


def test_a_dense_only_version_searches_densely_until_reindexed_from_the_index_stage(
    settings: Settings,
) -> None:
    with in_process_service(
        settings.replace(maintenance_interval_s=0.2, embedded_vector_store="local"),
        threads=2,
        maintenance=True,
    ) as service:
        client, res = service.app.test_client(), service.resources
        store = res.vectors
        hybrid = store.collection(FakeEmbedder.model_name, FakeEmbedder.dimension)
        # Given a deployment that had a dense-only collection, and a tenant's documents
        store.client.create_collection(
            LEGACY,
            vectors_config=models.VectorParams(size=FakeEmbedder.dimension, distance=models.Distance.COSINE),
        )
        tenant_id, key = tenant_with_key(res, "acme")
        headers = {"Authorization": f"Bearer {key}"}
        ingest(client, key, TOPICS[:3])
        # ... whose points sit in the dense-only collection, as written before hybrid search
        with store._lock:
            records, _ = store.client.scroll(hybrid, limit=100, with_payload=True, with_vectors=True)
            store.client.delete(hybrid, points_selector=models.PointIdsList(points=[r.id for r in records]))
            dense_only = [
                models.PointStruct(id=r.id, vector=r.vector["dense"], payload=r.payload) for r in records
            ]  # type: ignore[index]
            store.client.upsert(LEGACY, points=dense_only)
        assert len(points_of(res, LEGACY, tenant_id)) == len(records) and not points_of(
            res, hybrid, tenant_id
        )

        # When it searches, then dense and hybrid answer densely and keyword says what is missing
        for mode in ("dense", "hybrid"):
            body = client.post(
                "/v1/search", json={"query": TOPICS[0], "mode": mode}, headers=headers
            ).get_json()
            assert body["mode"] == "dense" and body["results"], body
        keyword = client.post("/v1/search", json={"query": TOPICS[0], "mode": "keyword"}, headers=headers)
        assert keyword.status_code == 409 and keyword.get_json()["code"] == "keyword_index_missing"
        # And a document uploaded now joins its version in the dense-only collection
        ingest(client, key, TOPICS[3:4])
        assert {p["index_version"] for p in points_of(res, LEGACY, tenant_id)} == {1}
        assert not points_of(res, hybrid, tenant_id)

        # When an operator reindexes it from the index stage
        admin = {"Authorization": f"Bearer {admin_key(res)}"}
        started = client.post(f"/v1/admin/tenants/{tenant_id}/reindex", json={"from": "index"}, headers=admin)
        assert started.status_code == 202, started.get_json()
        reindex = wait_reindex(res, tenant_id)

        # Then version 2 is active, in the hybrid collection, and the dense-only points are gone
        assert reindex.status == "flipped", reindex.failures
        assert active_version(res, tenant_id) == 2
        assert {p["index_version"] for p in points_of(res, hybrid, tenant_id)} == {2}
        assert len({p["document_id"] for p in points_of(res, hybrid, tenant_id)}) == 4
        assert wait_purged(res, tenant_id) and points_of(res, LEGACY, tenant_id) == []
        # And no job embedded again: every reindex job's embed stage was skipped (reused)
        with res.db.transaction() as session:
            reindex_jobs = select(Job.id).where(Job.kind == JobKind.REINDEX.value)
            embeds = session.scalars(
                select(JobStage).where(JobStage.job_id.in_(reindex_jobs), JobStage.stage == "embed")
            ).all()
            assert len(embeds) == 4 and {e.attempts for e in embeds} == {0}
        # And keyword search answers, finding the document by its words
        keyword = client.post("/v1/search", json={"query": TOPICS[2], "mode": "keyword"}, headers=headers)
        assert keyword.status_code == 200 and TOPICS[2] in keyword.get_json()["results"][0]["text"]
        assert keyword.get_json()["results"][0]["filename"] == f"{TOPICS[2]}.pdf"
