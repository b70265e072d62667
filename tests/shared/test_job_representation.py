"""The job's representation is defined once: the API's schema describes exactly the body, and the
webhooks and the event stream carry the same body the API answers with."""

from __future__ import annotations

from sqlalchemy import select

from gateway.schemas.jobs import CountersSchema, ErrorSchema, JobSchema
from shared import jobs
from shared.db import Database
from shared.errors import PermanentError
from shared.job_representation import job_body
from shared.models import Job, JobEvent, WebhookDelivery
from shared.webhooks import event_body
from tests.shared.test_outbox import hooked_job


def failed_job(db: Database) -> str:
    """A job that started, counted its pages and failed, at a webhook endpoint (so it has deliveries)."""
    job_id = hooked_job(db)
    with db.transaction() as session:
        jobs.start(session, job_id, "validate")
        jobs.advance(session, job_id, "validate", pages=3)
        jobs.fail(session, job_id, PermanentError("The file is not a PDF.", code="not_a_pdf"))
    return job_id


def test_the_schema_describes_exactly_the_body(sqlite_db: Database) -> None:
    # Given a job with an error and counters
    job_id = failed_job(sqlite_db)
    with sqlite_db.transaction() as session:
        body = job_body(session.get(Job, job_id))
    # Then the OpenAPI schema's fields are the body's keys, nested ones included
    assert set(JobSchema().fields) == set(body)
    assert set(CountersSchema().fields) == set(body["counters"])
    assert set(ErrorSchema().fields) == set(body["error"])
    assert body["counters"]["pages"] == 3 and body["error"]["code"] == "not_a_pdf"


def test_webhooks_and_events_carry_the_api_body(sqlite_db: Database) -> None:
    # Given a job whose last change was its failure
    job_id = failed_job(sqlite_db)
    with sqlite_db.transaction() as session:
        api = job_body(session.get(Job, job_id))
        last = session.scalars(
            select(JobEvent).where(JobEvent.job_id == job_id).order_by(JobEvent.seq)
        ).all()[-1]
        stream = event_body(last.type, last.payload)
        delivery = session.scalars(
            select(WebhookDelivery).where(WebhookDelivery.job_id == job_id).order_by(WebhookDelivery.seq)
        ).all()[-1]
    # Then the event stream and the webhook carry exactly what the API answers
    assert last.type == "job.failed"
    assert stream["data"] == api
    assert delivery.payload["data"] == api
    assert stream["timestamp"] == api["updated_at"]


def test_an_event_stored_before_the_time_fields_still_renders() -> None:
    # Given an event payload stored by an older version (no times, no ocr_pages_dropped)
    old = {
        "job_id": "j1",
        "tenant_id": "t1",
        "document_id": "d1",
        "kind": "ingest",
        "status": "running",
        "stage": "extract",
        "progress": 29,
        "pages": 2,
        "ocr_pages": 0,
        "chunks": 0,
        "points": 0,
        "attempts": 1,
        "error_code": None,
        "error_message": None,
        "seq": 3,
        "timestamp": "2026-11-30T00:52:49.123456Z",
    }
    # When it is rendered
    data = event_body("job.stage_completed", old)["data"]
    # Then it has every key of the body, the missing ones empty
    assert set(data) == set(JobSchema().fields)
    assert data["counters"]["ocr_pages_dropped"] == 0 and data["created_at"] is None
    assert data["seq"] == 3 and data["error"] is None
