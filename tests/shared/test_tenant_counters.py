"""The tenant counters (shared/job_counters.py) equal the counts they stand for after any mix of
transitions, on both databases."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import OperationalError

from shared import job_counters, jobs, operations
from shared.db import Database
from shared.errors import PermanentError, TransientError
from shared.jobs import ACTIVE
from shared.models import Document, Job, JobKind, Tenant
from shared.settings import Settings
from shared.tenants import create_tenant

pytestmark = pytest.mark.postgres


def counted(db: Database, tenant_id: str) -> tuple[int, int]:
    """What the counters stand for, counted: active jobs other than reindex, bytes of live documents."""
    with db.transaction() as session:
        active = session.scalar(
            select(func.count())
            .select_from(Job)
            .where(
                Job.tenant_id == tenant_id,
                Job.status.in_([s.value for s in ACTIVE]),
                Job.kind != JobKind.REINDEX.value,
            )
        )
        stored = session.scalar(
            select(func.coalesce(func.sum(Document.size_bytes), 0)).where(
                Document.tenant_id == tenant_id, Document.deleted_at.is_(None)
            )
        )
        return int(active or 0), int(stored or 0)


def counters(db: Database, tenant_id: str) -> tuple[int, int]:
    with db.transaction() as session:
        row = session.execute(
            select(Tenant.active_jobs, Tenant.stored_bytes).where(Tenant.id == tenant_id)
        ).one()
        return int(row[0]), int(row[1])


def upload(db: Database, tenant_id: str, n: int, kind: JobKind = JobKind.INGEST) -> tuple[str, str]:
    """A document of n bytes and its job, created the way the gateway creates them; (document, job)."""
    with db.transaction() as session:
        tenant = operations.lock_tenant(session, tenant_id)
        document = Document(
            tenant_id=tenant_id, filename="a.pdf", sha256=f"{n:064d}", size_bytes=n, object_key=f"k{n}"
        )
        session.add(document)
        session.flush()
        job_counters.note(session, tenant_id, stored_bytes=n)
        job = operations.create_job(session, tenant_id=tenant_id, document_id=document.id, kind=kind)
        operations.reserve(session, tenant, Settings(max_active_jobs=1000))
        return document.id, job.id


def step(db: Database, move: Any) -> None:
    with db.transaction() as session:
        move(session)


def test_counters_equal_the_counts_after_a_mix_of_transitions(any_db: Database) -> None:
    # Given a tenant with uploads
    with any_db.transaction() as session:
        tenant_id = create_tenant(session, "acme")[0].id
    ids = [upload(any_db, tenant_id, n) for n in range(1, 9)]
    _, reindex_job = upload(any_db, tenant_id, 100, JobKind.REINDEX)
    assert counters(any_db, tenant_id) == counted(any_db, tenant_id) == (8, 136)
    (_, completed), (_, failed), (_, dead), (_, cancelled), (_, stopping), (deleted, _), _, _ = ids
    boom, later = PermanentError("boom"), TransientError("later")

    # When jobs start, complete, retry, fail, dead-letter, get replayed, cancelled, and a document
    # is deleted (cancelling its job and queueing a delete job), and a reindex job runs
    for job_id in (completed, failed, dead, stopping, reindex_job):
        step(any_db, lambda s, j=job_id: jobs.start(s, j, "validate"))
    step(any_db, lambda s: jobs.complete(s, completed))
    step(any_db, lambda s: jobs.retry(s, dead, later))
    step(any_db, lambda s: jobs.dead_letter(s, dead, later))
    step(any_db, lambda s: jobs.fail(s, failed, boom))
    assert counters(any_db, tenant_id) == counted(any_db, tenant_id) == (5, 136)
    step(any_db, lambda s: operations.retry_job(s, s.get(Job, dead)))  # the admin replay
    step(any_db, lambda s: operations.retry_job(s, s.get(Job, failed)))  # a client's retry
    step(any_db, lambda s: operations.cancel_job(s, s.get(Job, cancelled)))
    step(any_db, lambda s: operations.cancel_job(s, s.get(Job, stopping)))
    step(any_db, lambda s: jobs.cancel(s, stopping))
    step(any_db, lambda s: operations.delete_document(s, s.get(Document, deleted)))
    step(any_db, lambda s: jobs.complete(s, reindex_job))

    # Then the counters equal the counts: a delete job is active, the reindex job never counted
    assert counters(any_db, tenant_id) == counted(any_db, tenant_id) == (5, 130)


def test_a_rolled_back_transition_leaves_the_counters_alone(any_db: Database) -> None:
    # Given a tenant with one queued job
    with any_db.transaction() as session:
        tenant_id = create_tenant(session, "acme")[0].id
    _, job_id = upload(any_db, tenant_id, 10)
    # When its cancel is rolled back
    with pytest.raises(RuntimeError), any_db.transaction() as session:
        jobs.cancel_queued(session, job_id)
        raise RuntimeError("changed my mind")
    # Then the counter still counts it
    assert counters(any_db, tenant_id) == counted(any_db, tenant_id) == (1, 10)


def test_uploads_share_the_tenant_lock_and_a_reindex_flip_waits_for_them(pg_db: Database) -> None:
    # Given an upload's transaction holding the tenant's lock (as it does while creating its jobs)
    with pg_db.transaction() as session:
        tenant_id = create_tenant(session, "acme")[0].id
    upload_session = pg_db.sessions()
    operations.lock_tenant(upload_session, tenant_id)
    try:
        # When another upload takes it, it does not wait
        with pg_db.transaction() as other:
            other.execute(text("SET LOCAL lock_timeout = '2s'"))
            operations.lock_tenant(other, tenant_id)
        # But a reindex flip, which locks the tenant for update, waits for the upload to end
        with pytest.raises(OperationalError, match="lock timeout"), pg_db.transaction() as flip:
            flip.execute(text("SET LOCAL lock_timeout = '300ms'"))
            flip.scalars(select(Tenant).where(Tenant.id == tenant_id).with_for_update()).one()
    finally:
        upload_session.rollback()
        upload_session.close()
