"""What clients and operators ask of jobs and documents: create, cancel, retry, delete.

Shared by the gateway and the command line, so both act through the database the same way. Every
function takes the caller's session and never commits; a job and its outbox row are always
written together.
"""

from __future__ import annotations

import functools
from typing import Any, cast

from sqlalchemy import Select, Table, and_, bindparam, select, update
from sqlalchemy.exc import NoResultFound
from sqlalchemy.orm import Session
from sqlalchemy.sql.dml import ReturningUpdate

from shared import insert_batch, job_counters, job_events, job_stages, jobs, outbox
from shared.errors import (
    ConflictError,
    StaleTransitionError,
    StorageQuotaExceededError,
    TooManyActiveJobsError,
)
from shared.jobs import ACTIVE, TERMINAL
from shared.models import DeadLetter, Document, Job, JobKind, JobStatus, Tenant, new_id, utcnow
from shared.queue import first_stage
from shared.settings import Settings

S = JobStatus
# A job moves on through a handful of states at most while one cancel is decided.
CANCEL_ATTEMPTS = 5


def lock_tenant(session: Session, tenant_id: str) -> Tenant:
    """The tenant row, share-locked until the transaction ends: a reindex flip (which locks it for
    update) waits for the jobs this transaction creates, and they take the version it reads. Two
    uploads of one tenant do not wait on each other here; `reserve` keeps their quotas apart."""
    stmt = select(Tenant).where(Tenant.id == tenant_id).with_for_update(read=True, key_share=True)
    return session.scalars(stmt).one()


def lock_tenant_finding(session: Session, tenant_id: str, digests: set[str]) -> tuple[Tenant, dict[str, str]]:
    """`lock_tenant`, and in the same statement (one round trip fewer on the hottest transaction) the
    tenant's live documents with these digests, an upload's duplicates: their ids by digest."""
    if not digests:
        return lock_tenant(session, tenant_id), {}
    rows = session.execute(_tenant_finding(), {"tenant_id": tenant_id, "digests": sorted(digests)}).all()
    if not rows:
        raise NoResultFound("No such tenant.")
    return rows[0][0], {sha: document_id for _, document_id, sha in rows if document_id is not None}


@functools.cache
def _tenant_finding() -> Select[Tenant, str, str]:
    # Built once: an upload's statements are the service's hottest, and building one costs more
    # than SQLAlchemy's cached compilation of it.
    found = and_(
        Document.tenant_id == Tenant.id,
        Document.sha256.in_(bindparam("digests", expanding=True)),
        Document.deleted_at.is_(None),
    )
    return (
        select(Tenant, Document.id, Document.sha256)
        .outerjoin(Document, found)
        .where(Tenant.id == bindparam("tenant_id"))
        .with_for_update(read=True, key_share=True, of=Tenant)
    )


def reserve(session: Session, tenant: Tenant, settings: Settings) -> None:
    """Write the tenant's counter changes of this transaction (its new jobs and documents) in one
    UPDATE that refuses to go beyond the tenant's active-job and storage allowances.

    The UPDATE holds the tenant's counters until the commit, so of two uploads that would each fit
    but not both, the second sees the first's count once it commits and is refused: quotas cannot
    race. Call it last, just before the commit (see shared/job_counters.py for the lock order)."""
    jobs, stored_bytes = job_counters.take(session, tenant.id)
    if not jobs and not stored_bytes:
        return
    limit = tenant.max_active_jobs or settings.max_active_jobs
    storage_mb = tenant.max_storage_mb or settings.max_storage_mb
    checks = (jobs > 0, bool(storage_mb and stored_bytes > 0))
    values = {"tenant_id": tenant.id, "jobs": jobs, "stored_bytes": stored_bytes}
    values |= {"job_limit": limit, "byte_limit": (storage_mb or 0) * 1024 * 1024}
    if session.execute(_counters_update(*checks), values).first() is not None:
        return
    active = session.scalar(select(Tenant.active_jobs).where(Tenant.id == tenant.id)) or 0
    if jobs > 0 and active + jobs > limit:
        raise TooManyActiveJobsError(retry_after_s=settings.quota_retry_after_s)
    raise StorageQuotaExceededError()


@functools.cache
def _counters_update(check_jobs: bool, check_bytes: bool) -> ReturningUpdate[str]:
    """The counters' UPDATE, refused (no row) beyond the limits it checks; built once per variant."""
    counters = cast(Table, Tenant.__table__).c
    fits = []
    if check_jobs:
        fits.append(counters.active_jobs + bindparam("jobs") <= bindparam("job_limit"))
    if check_bytes:
        fits.append(counters.stored_bytes + bindparam("stored_bytes") <= bindparam("byte_limit"))
    return (
        update(cast(Table, Tenant.__table__))
        .where(counters.id == bindparam("tenant_id"), *fits)
        .values(
            active_jobs=counters.active_jobs + bindparam("jobs"),
            stored_bytes=counters.stored_bytes + bindparam("stored_bytes"),
        )
        .returning(counters.id)
    )


def create_job(
    session: Session,
    *,
    tenant_id: str,
    document_id: str,
    kind: JobKind = JobKind.INGEST,
    callback_url: str | None = None,
    tenant: Tenant | None = None,
) -> Job:
    """A queued job with its `job.queued` event and its first outbox message.

    The job writes into its tenant's active index version with that version's model; a flip waits
    for every such job under the tenant's row lock (`lock_tenant`, taken here unless the caller
    passes the `tenant` it locked), so none lands in a version already left.
    """
    tenant = tenant or lock_tenant(session, tenant_id)
    job = Job(
        tenant_id=tenant_id,
        document_id=document_id,
        kind=kind.value,
        callback_url=callback_url,
        index_version=tenant.active_index_version,
        embedding_model=tenant.active_embedding_model,
        embedding_dim=tenant.active_embedding_dim,
    )
    session.add(job)
    jobs.record_created(session, job)
    outbox.add_message(session, job.id, first_stage(kind.value))
    return job


def create_ingest_jobs(
    session: Session, tenant: Tenant, document_ids: list[str], *, callback_url: str | None = None
) -> list[dict[str, Any]]:
    """`create_job` for the ingest jobs of new uploads, in the tenant the caller locked: the jobs,
    their `job.queued` events and their outbox messages as one INSERT per table rather than through
    the ORM (an upload's transaction is the service's hottest). Returns the jobs' rows."""
    now = utcnow()
    rows = [
        {
            **_JOB_COLUMNS,
            "id": new_id(),
            "tenant_id": tenant.id,
            "document_id": document_id,
            "callback_url": callback_url,
            "index_version": tenant.active_index_version,
            "embedding_model": tenant.active_embedding_model,
            "embedding_dim": tenant.active_embedding_dim,
            "created_at": now,
            "updated_at": now,
        }
        for document_id in document_ids
    ]
    if not rows:
        return rows
    insert_batch.add(session, cast(Table, Job.__table__), rows)
    job_events.record_events(session, rows, job_events.EVENT_FOR_STATUS[S.QUEUED])
    job_counters.note(session, tenant.id, jobs=len(rows))
    job_ids = [row["id"] for row in rows]
    outbox.add_ingest_messages(session, tenant, job_ids, first_stage(JobKind.INGEST.value))
    return rows


def _column_defaults(table: Any) -> dict[str, Any]:
    """Every column of `table`: its scalar default, else None (callable defaults are the caller's)."""
    return {c.name: c.default.arg if c.default is not None and c.default.is_scalar else None for c in table.c}


# A new ingest job's columns before the caller fills in its ids, tenant and times.
_JOB_COLUMNS = {**_column_defaults(Job.__table__), "kind": JobKind.INGEST.value}


def cancel_job(session: Session, job: Job) -> Job:
    """Cancel a queued job at once; ask a running one to stop at its next stage boundary.

    The job may move on between the read and the change (a worker starts it, a stage ends): the
    change is then decided again on the job as it is now, so a cancel never fails for a race."""
    for attempt in range(CANCEL_ATTEMPTS):
        status = JobStatus(job.status)
        try:
            if jobs.allows("cancel_queued", status):
                jobs.cancel_queued(session, job.id)
            elif jobs.allows("request_cancel", status):
                jobs.request_cancel(session, job.id, seen=status)
            elif status != S.CANCEL_REQUESTED:
                raise ConflictError(f"A {status.value} job cannot be cancelled.", code="job_not_cancellable")
        except StaleTransitionError:
            if attempt + 1 == CANCEL_ATTEMPTS:
                raise
            session.refresh(job)
            continue
        break
    session.refresh(job)
    return job


def retry_job(session: Session, job: Job) -> Job:
    """Start a failed or dead-lettered job again from its first unfinished stage, fresh retries."""
    status = JobStatus(job.status)
    if not jobs.allows("requeue", status):
        raise ConflictError(f"A {status.value} job cannot be retried.", code="job_not_retryable")
    document = session.get(Document, job.document_id)
    if document is None or document.deleted_at is not None:
        raise ConflictError("The job's document has been deleted.", code="document_deleted")
    resume_at = job_stages.resume_stage(session, job)
    jobs.requeue(session, job.id, seen=status)
    outbox.add_message(session, job.id, resume_at)
    session.execute(
        update(DeadLetter)
        .where(DeadLetter.job_id == job.id, DeadLetter.replayed_at.is_(None))
        .values(replayed_at=utcnow())
    )
    session.refresh(job)
    return job


def delete_document(session: Session, document: Document) -> Job:
    """Mark the document deleted (its bytes may be uploaded again) and queue the job that removes
    its object and its points; its unfinished ingest jobs are cancelled."""
    if document.deleted_at is not None:
        raise ConflictError("The document is already deleted.", code="document_deleted")
    document.deleted_at = utcnow()
    job_counters.note(session, document.tenant_id, stored_bytes=-document.size_bytes)
    for job in session.scalars(
        select(Job).where(Job.document_id == document.id, Job.status.in_([s.value for s in ACTIVE]))
    ):
        if JobStatus(job.status) not in TERMINAL and job.kind != JobKind.DELETE.value:
            cancel_job(session, job)
    session.flush()
    return create_job(session, tenant_id=document.tenant_id, document_id=document.id, kind=JobKind.DELETE)


def change_metadata(session: Session, document: Document, metadata: dict[str, Any]) -> Job:
    """Replace the document's metadata (checked by the caller) and queue the job that writes it into
    its points' payload. The job reads the metadata when it runs, so the newest change wins."""
    if document.deleted_at is not None:
        raise ConflictError("The document is deleted.", code="document_deleted")
    document.user_metadata = metadata
    session.flush()
    return create_job(session, tenant_id=document.tenant_id, document_id=document.id, kind=JobKind.METADATA)
