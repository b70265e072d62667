"""The delete stage: remove a deleted document's points (every job's) and its stored bytes."""

from __future__ import annotations

from sqlalchemy import select

from ingest_worker.resources import Resources
from ingest_worker.runner import StageResult
from shared.job_events import JobSnapshot
from shared.models import Document, Job


def delete_document(res: Resources, job: JobSnapshot) -> StageResult:
    """Idempotent: deleting what is already gone is not an error."""
    with res.db.transaction() as session:
        document = session.get(Document, job.document_id)
        assert document is not None
        object_key = document.object_key
        rows = session.execute(
            select(Job.id, Job.embedding_model, Job.embedding_dim).where(Job.document_id == document.id)
        ).all()
    store = res.vectors
    for model, dimension in {(m, d) for _, m, d in rows if m is not None and d is not None}:
        store.delete(store.collection(model, dimension), job.tenant_id, document_id=job.document_id)
    for job_id, _, _ in rows:
        res.storage.delete_prefix(f"artifacts/{job_id}/")
    res.storage.delete(object_key)
    return StageResult()
