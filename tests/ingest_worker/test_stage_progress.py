"""Progress inside the long stages: the embed and OCR stages move the job's progress between their
boundaries as they go, with `job.progress` events; and why a job waits, as a field, not a state."""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from sqlalchemy import select, update

from ingest_worker import job_progress
from ingest_worker.job_progress import stage_bounds
from ingest_worker.middleware.hand_offs import HandOffs
from ingest_worker.resources import Resources
from ingest_worker.sweeper import sweep
from shared import job_stages, jobs, operations
from shared.errors import TransientError
from shared.job_hand_offs import await_parts
from shared.job_waiting import RETRY_DELAY, TENANT_SLOT, mark_waiting
from shared.models import Document, Job, JobEvent, OutboxMessage, utcnow
from shared.queue import actor_for
from shared.settings import Settings
from shared.tenants import create_tenant
from tests.e2e.test_pipeline_embedded import TERMINAL
from tests.support.inprocess import create_document_job, in_process_service
from tests.support.pdfs import text_pdf


@pytest.fixture
def quick_progress(settings: Settings) -> Settings:
    # Every batch writes its progress, so the count of moves is the count of batches.
    return settings.replace(progress_interval_s=0.0, embed_batch_size=16)


@pytest.fixture
def service(quick_progress: Settings) -> Iterator[Resources]:
    with in_process_service(quick_progress) as running:
        yield running.resources


def _wait_final(res: Resources, job_id: str) -> Job:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        with res.db.transaction() as session:
            job = session.get(Job, job_id)
            assert job is not None
            if job.status in TERMINAL:
                session.expunge(job)
                return job
        time.sleep(0.1)
    raise AssertionError("the job did not finish")


def _events(res: Resources, job_id: str) -> list[JobEvent]:
    with res.db.transaction() as session:
        rows = list(session.scalars(select(JobEvent).where(JobEvent.job_id == job_id).order_by(JobEvent.seq)))
        session.expunge_all()
        return rows


@pytest.mark.slow
def test_a_100_page_embed_moves_the_progress_at_least_five_times(service: Resources) -> None:
    # Given a 100-page text PDF
    pdf = text_pdf(
        [f"Page {n}: the ledger records every transfer between the accounts. " * 30 for n in range(100)]
    )

    # When it is ingested
    _tenant, job_id = create_document_job(service, pdf)
    job = _wait_final(service, job_id)
    assert job.status == "completed"

    # Then the embed stage moved the job's progress at least five times, always forward, within its bounds
    low, high = stage_bounds("embed")
    moves = [e.payload["progress"] for e in _events(service, job_id) if e.type == "job.progress"]
    assert len(moves) >= 5, moves
    assert moves == sorted(set(moves))
    assert all(low < p <= high for p in moves)


def test_units_counted_by_parallel_ranges_add_up_and_progress_only_grows(sqlite_db: Any) -> None:
    # Given a job running its OCR stage, which has 10 pages to read
    with sqlite_db.transaction() as session:
        job_id = _running_job(session, "ocr")
        job_progress.begin_units(session, job_id, "ocr", 10)
    low, high = stage_bounds("ocr")

    # When two ranges count their pages (4, then 6)
    with sqlite_db.transaction() as session:
        first = job_progress.add_units(session, job_id, "ocr", 4)
    with sqlite_db.transaction() as session:
        second = job_progress.add_units(session, job_id, "ocr", 6)

    # Then the progress moves to 40% of the stage, then to its end, each time with an event
    assert first == low + (high - low) * 4 // 10
    assert second == high
    with sqlite_db.transaction() as session:
        types = [e.type for e in session.scalars(select(JobEvent).where(JobEvent.job_id == job_id))]
        assert types.count("job.progress") == 2
        # And a count that would not move it forward writes nothing
        assert job_progress.add_units(session, job_id, "ocr", 0) is None


def test_a_put_back_says_the_job_waits_for_a_tenant_slot_without_an_event(
    sqlite_db: Any, settings: Settings
) -> None:
    # Given a queued job
    with sqlite_db.transaction() as session:
        job_id = _queued_job(session)
        seq = _job(session, job_id).seq

    # When the tenant cap puts its message back (the copy it enqueues names why)
    message = _Message(actor_for("validate", "interactive"), (job_id,), {"waiting": TENANT_SLOT})
    HandOffs(lambda: _Resources(sqlite_db)).after_enqueue(None, message, None)  # type: ignore[arg-type]

    # Then the job says it waits for a tenant slot, with no new seq (so no event, no webhook)
    with sqlite_db.transaction() as session:
        job = _job(session, job_id)
        assert (job.waiting, job.seq) == (TENANT_SLOT, seq)
        # And starting its stage ends the wait
        jobs.start(session, job_id, "validate")
        assert _job(session, job_id).waiting is None


def test_a_retry_waits_for_its_delay_and_a_held_job_is_not_marked(sqlite_db: Any) -> None:
    # Given a job running a stage under a lease
    with sqlite_db.transaction() as session:
        job_id = _running_job(session, "extract")
        # When something tries to mark it waiting, then nothing changes: a worker holds it
        mark_waiting(session, [job_id], TENANT_SLOT)
        assert _job(session, job_id).waiting is None
        # When its stage fails on a transient error, then it waits for the retry's delay
        jobs.retry(session, job_id, TransientError())
        assert _job(session, job_id).waiting == RETRY_DELAY


@dataclass
class _Message:
    actor_name: str
    args: tuple[Any, ...]
    options: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Resources:
    db: Any


def _job(session: Any, job_id: str) -> Job:
    session.expire_all()
    job = session.get(Job, job_id)
    assert job is not None
    return job


def _queued_job(session: Any) -> str:
    tenant, _key = create_tenant(session, "progress")
    document = Document(tenant_id=tenant.id, filename="a.pdf", object_key="a", size_bytes=1, sha256="0" * 64)
    session.add(document)
    session.flush()
    return operations.create_job(session, tenant_id=tenant.id, document_id=document.id).id


def _running_job(session: Any, stage: str) -> str:
    job_id = _queued_job(session)
    job_stages.claim_stage(session, job_id, stage)
    jobs.start(session, job_id, stage)
    return job_id


def test_progress_of_parts_is_not_taken_for_a_lost_hand_off(sqlite_db: Any, settings: Settings) -> None:
    # Given a job whose OCR goes on in page ranges (its hand-off is the ranges' messages)
    with sqlite_db.transaction() as session:
        job_id = _running_job(session, "ocr")
        job_progress.begin_units(session, job_id, "ocr", 10)
        await_parts(session, job_id)
        session.execute(
            update(OutboxMessage).where(OutboxMessage.job_id == job_id).values(published_at=utcnow())
        )
    # When a range counts its pages, and the sweeper looks once the hand-off stall has passed
    with sqlite_db.transaction() as session:
        assert job_progress.add_units(session, job_id, "ocr", 3) is not None
    time.sleep(0.05)
    resumed = sweep(sqlite_db, settings.replace(handoff_stall_s=0))
    # Then it resumes nothing: the progress write is not a transition after the hand-off
    assert resumed == 0
    with sqlite_db.transaction() as session:
        assert _job(session, job_id).recoveries == 0
