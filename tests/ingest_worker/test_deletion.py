"""The delete stage (ingest_worker/deletion.py): a deleted document's points go from every collection its
jobs indexed into, its artifacts and its stored PDF go too, nothing of another document is touched, and
running it again changes nothing."""

from __future__ import annotations

from ingest_worker.deletion import delete_document
from ingest_worker.resources import Resources
from ingest_worker.stages.index import PointOrigin, index_points, sparse_vectors
from shared import operations
from shared.artifacts import Chunk
from shared.job_events import JobSnapshot
from shared.models import Document, Job
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.support.databases import migrate_database

MODELS = (("model-a", 8), ("model-b", 4))  # a document indexed again after a change of model


def stored_document(res: Resources, tenant_id: str, name: str) -> tuple[str, list[str]]:
    """A stored PDF with one job per model, each with an artifact and points. Returns (document id,
    the storage keys written)."""
    object_key = f"documents/{tenant_id}/{name}.pdf"
    res.storage.put_bytes(object_key, b"%PDF-1.7 " + name.encode())
    keys = [object_key]
    with res.db.transaction() as session:
        document = Document(
            tenant_id=tenant_id, filename=f"{name}.pdf", sha256=name * 4, size_bytes=10, object_key=object_key
        )
        session.add(document)
        session.flush()
        document_id = document.id
        jobs = []
        for model, dimension in MODELS:
            job = operations.create_job(session, tenant_id=tenant_id, document_id=document_id)
            job.embedding_model, job.embedding_dim = model, dimension
            jobs.append((job.id, model, dimension))
    chunks = [Chunk(index=i, text=f"{name} chunk {i}", page_start=1, page_end=1, char_start=0,
                    char_end=10, token_count=3) for i in range(3)]  # fmt: skip
    for job_id, model, dimension in jobs:
        key = f"artifacts/{job_id}/chunks.json"
        res.storage.put_bytes(key, b"[]")
        keys.append(key)
        origin = PointOrigin(
            tenant_id=tenant_id,
            document_id=document_id,
            job_id=job_id,
            index_version=1,
            embedding_model=model,
            extractor_version=None,
            chunker_version=None,
            filename=f"{name}.pdf",
        )
        ids, payloads = index_points(chunks, origin)
        collection = res.vectors.collection(model, dimension)
        res.vectors.ensure_collection(collection, dimension)
        vectors = [[1.0 / (1 + i)] * dimension for i in range(len(ids))]
        res.vectors.upsert(collection, ids, vectors, payloads, sparse_vectors(chunks))
    return document_id, keys


def points(res: Resources, tenant_id: str, document_id: str) -> dict[str, int]:
    return {
        model: res.vectors.count(res.vectors.collection(model, dimension), tenant_id, document_id=document_id)
        for model, dimension in MODELS
    }


def test_a_deleted_documents_points_artifacts_and_pdf_are_gone_and_a_repeat_is_harmless(
    settings: Settings,
) -> None:
    migrate_database(settings.effective_database_url)
    res = Resources(settings)
    try:
        with res.db.transaction() as session:
            tenant_id = create_tenant(session, "acme")[0].id
        # Given two documents of a tenant, each indexed under two models
        doomed, doomed_keys = stored_document(res, tenant_id, "doomed")
        kept, kept_keys = stored_document(res, tenant_id, "kept")
        assert points(res, tenant_id, doomed) == {"model-a": 3, "model-b": 3}
        with res.db.transaction() as session:
            delete_job = operations.create_job(session, tenant_id=tenant_id, document_id=doomed)
            snapshot = JobSnapshot({"id": delete_job.id, "tenant_id": tenant_id, "document_id": doomed})

        # When the delete stage runs for one of them
        delete_document(res, snapshot)

        # Then none of its points, artifacts or bytes remain, under either model
        assert points(res, tenant_id, doomed) == {"model-a": 0, "model-b": 0}
        assert not any(res.storage.exists(key) for key in doomed_keys)
        # And the other document is whole
        assert points(res, tenant_id, kept) == {"model-a": 3, "model-b": 3}
        assert all(res.storage.exists(key) for key in kept_keys)

        # And running the stage again (a redelivered message) is not an error and changes nothing
        delete_document(res, snapshot)
        assert points(res, tenant_id, kept) == {"model-a": 3, "model-b": 3}
        with res.db.transaction() as session:
            assert session.get(Job, delete_job.id) is not None
    finally:
        res.vectors.close()
        res.db.dispose()
