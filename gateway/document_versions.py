"""Which of a document's jobs search serves: the version its content endpoints read and its body shows.

Search reads the tenant's active index version only. Within one version, the index stage of a job,
once all its points are written and counted, deletes every other point of the same document and
version (`ingest_worker.stage_io.index`), so the points of a version are those of the job whose index
stage finished last. That job serves unless it was cancelled afterwards (a cancelled job deletes its own
points too, leaving none), and whatever it did after indexing (a failed finalize) does not take its
points away. Newer jobs that have not finished their index stage, or that failed or were cancelled
before it, change nothing: the earlier version stays. Reindex jobs write into a new version, which
serves only once the reindex flips the tenant's active version to it. Functions take the caller's
session and never commit.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from shared.artifacts import artifact_key
from shared.models import Document, Job, JobKind, JobStage, JobStatus, StageStatus, Tenant
from shared.pipeline import artifact_of

INDEXING_KINDS = (JobKind.INGEST.value, JobKind.REINDEX.value)


def serving_job(session: Session, document: Document) -> Job | None:
    """The job whose points search serves for `document`, or None while none are (not indexed yet, or
    deleted)."""
    if document.deleted_at is not None:
        return None
    tenant = session.get(Tenant, document.tenant_id)
    if tenant is None:
        return None
    last_indexed = session.scalars(
        select(Job)
        .join(JobStage, JobStage.job_id == Job.id)
        .where(
            Job.document_id == document.id,
            Job.kind.in_(INDEXING_KINDS),
            Job.index_version == tenant.active_index_version,
            JobStage.stage == "index",
            JobStage.status == StageStatus.DONE.value,
        )
        .order_by(JobStage.finished_at.desc(), Job.created_at.desc(), Job.id.desc())
        .limit(1)
    ).first()
    if last_indexed is None or last_indexed.status == JobStatus.CANCELLED.value:
        return None
    return last_indexed


def artifact_key_of(session: Session, job: Job, stage: str) -> str:
    """Where `stage` of `job` left its artifact: its own, or the earlier job's a reindex job reuses."""
    row = session.get(JobStage, (job.id, stage))
    if row is not None and row.artifact_key:
        return row.artifact_key
    return artifact_key(job.id, artifact_of(stage))
