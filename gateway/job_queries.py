"""Read-only queries for jobs: one by id (scoped to a tenant), and a document's latest."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.models import Job, JobKind


def get_job(session: Session, job_id: str, *, tenant_id: str | None = None) -> Job | None:
    """The job, scoped to `tenant_id` when given (another tenant's job is None)."""
    stmt = select(Job).where(Job.id == job_id)
    if tenant_id is not None:
        stmt = stmt.where(Job.tenant_id == tenant_id)
    return session.scalars(stmt).first()


def latest_job_of_document(session: Session, document_id: str) -> Job | None:
    """The document's latest upload or delete job (reindex jobs are the operator's, not the client's;
    a metadata job changes no content)."""
    return session.scalars(
        select(Job)
        .where(
            Job.document_id == document_id,
            Job.kind.notin_([JobKind.REINDEX.value, JobKind.METADATA.value]),
        )
        .order_by(Job.created_at.desc())
    ).first()
