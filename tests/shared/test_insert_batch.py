"""Held INSERTs on both databases: written before anything else the transaction runs, with their
Python defaults and JSON values, a row referencing one inserted beside it, dropped by a rollback."""

from __future__ import annotations

from typing import Any, cast

import pytest
from sqlalchemy import Table, func, select

from shared import insert_batch
from shared.db import Database
from shared.models import Document, Job, JobEvent, OutboxMessage
from shared.tenants import create_tenant

pytestmark = pytest.mark.postgres

DOCUMENTS = cast(Table, Document.__table__)
JOBS = cast(Table, Job.__table__)
EVENTS = cast(Table, JobEvent.__table__)
QUEUED = {"job_id": "job-1", "seq": 1, "type": "job.queued", "payload": {"a": 1}}
OUTBOX = cast(Table, OutboxMessage.__table__)


def a_tenant(db: Database) -> str:
    with db.transaction() as session:
        tenant, _ = create_tenant(session, "acme")
        return tenant.id


def document_row(tenant_id: str, n: int) -> dict[str, Any]:
    return {
        "id": f"doc-{n}",
        "tenant_id": tenant_id,
        "filename": f"{n}.pdf",
        "sha256": f"{n:064d}",
        "size_bytes": n,
        "object_key": f"k{n}",
        "metadata": {"n": n, "tags": ["a", "b"]},
    }


def test_held_rows_are_written_with_their_defaults_before_the_next_statement(any_db: Database) -> None:
    tenant_id = a_tenant(any_db)
    with any_db.transaction() as session:
        # A job that references the document inserted beside it, in the same statement on PostgreSQL
        insert_batch.add(session, DOCUMENTS, [document_row(tenant_id, 1), document_row(tenant_id, 2)])
        insert_batch.add(session, JOBS, [{"id": "job-1", "tenant_id": tenant_id, "document_id": "doc-1"}])
        insert_batch.add(
            session,
            EVENTS,
            [
                {
                    "job_id": "job-1",
                    "tenant_id": tenant_id,
                    "seq": 1,
                    "type": "job.queued",
                    "payload": {"a": 1},
                }
            ],
        )
        # The next statement of the transaction reads them
        assert session.scalar(select(func.count()).select_from(DOCUMENTS)) == 2
        inserted = insert_batch.insert_returning(
            session, OUTBOX, [{"job_id": "job-1", "stage": "validate"}], ("job_id", "id")
        )
    assert [job_id for job_id, _ in inserted] == ["job-1"]
    with any_db.transaction() as session:
        document = session.get(Document, "doc-2")
        job = session.get(Job, "job-1")
        event = session.scalars(select(JobEvent)).one()
        message = session.scalars(select(OutboxMessage)).one()
    assert document is not None and document.user_metadata == {"n": 2, "tags": ["a", "b"]}
    assert document.created_at is not None
    # Python defaults filled in: the job's status, counters and times
    assert job is not None and (job.status, job.kind, job.progress, job.seq) == ("queued", "ingest", 0, 1)
    assert job.created_at is not None and job.updated_at is not None
    assert event.type == "job.queued" and event.payload == {"a": 1} and event.created_at is not None
    assert message.id == inserted[0][1] and message.attempts == 0 and message.available_at is not None


def test_held_rows_are_written_before_the_orm_flushes_and_dropped_by_a_rollback(any_db: Database) -> None:
    tenant_id = a_tenant(any_db)
    with any_db.transaction() as session:
        insert_batch.add(session, DOCUMENTS, [document_row(tenant_id, 3)])
        # An ORM row referencing the held one: the held INSERT goes first
        session.add(Job(id="job-3", tenant_id=tenant_id, document_id="doc-3"))
        session.flush()
    with pytest.raises(RuntimeError), any_db.transaction() as session:
        insert_batch.add(session, DOCUMENTS, [document_row(tenant_id, 4)])
        raise RuntimeError("abandoned")
    with any_db.transaction() as session:
        insert_batch.add(session, DOCUMENTS, [document_row(tenant_id, 5)])
        # Held until the commit, which writes it
    with any_db.transaction() as session:
        assert session.scalars(select(Document.id).order_by(Document.id)).all() == ["doc-3", "doc-5"]
        assert session.get(Job, "job-3") is not None
