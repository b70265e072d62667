"""The job state machine on both databases: compare-and-set transitions, seq, events, stage claims."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from shared import jobs
from shared.db import Database
from shared.errors import StaleTransitionError
from shared.models import Document, Job, JobEvent, JobStatus
from shared.tenants import create_tenant

S = JobStatus
pytestmark = pytest.mark.postgres


def new_job(db: Database) -> str:
    with db.transaction() as session:
        tenant, _ = create_tenant(session, "acme")
        document = Document(
            tenant_id=tenant.id, filename="a.pdf", sha256="0" * 64, size_bytes=1, object_key="k"
        )
        session.add(document)
        session.flush()
        job = Job(tenant_id=tenant.id, document_id=document.id)
        session.add(job)
        jobs.record_created(session, job)
        return job.id


def events(db: Database, job_id: str) -> list[tuple[int, str]]:
    with db.transaction() as session:
        rows = session.execute(
            select(JobEvent.seq, JobEvent.type).where(JobEvent.job_id == job_id).order_by(JobEvent.seq)
        )
        return [(seq, kind) for seq, kind in rows]


def test_transition_bumps_seq_and_writes_its_event(any_db: Database) -> None:
    # Given a queued job
    job_id = new_job(any_db)
    # When it starts and completes
    with any_db.transaction() as session:
        started = jobs.start_stage(session, job_id, "validate")
    with any_db.transaction() as session:
        done = jobs.transition(session, job_id, S.COMPLETED, expected=[S.RUNNING], progress=100)
    # Then seq only grows and each change has exactly one event with that seq
    assert (started.seq, done.seq) == (2, 3)
    assert events(any_db, job_id) == [(1, "job.queued"), (2, "job.started"), (3, "job.completed")]
    assert done.status == "completed" and done.finished_at is not None


def test_transition_from_a_stale_state_is_refused(any_db: Database) -> None:
    # Given a job that another worker already completed
    job_id = new_job(any_db)
    with any_db.transaction() as session:
        jobs.start_stage(session, job_id, "validate")
        jobs.transition(session, job_id, S.COMPLETED, expected=[S.RUNNING])
    # When a slow worker tries to move it from `running`
    with pytest.raises(StaleTransitionError), any_db.transaction() as session:
        jobs.transition(session, job_id, S.FAILED, expected=[S.RUNNING], error_code="x")
    # Then nothing changed: still completed, no event for the refused change
    with any_db.transaction() as session:
        assert session.get(Job, job_id).status == "completed"  # type: ignore[union-attr]
    assert [kind for _, kind in events(any_db, job_id)][-1] == "job.completed"


def test_rolled_back_transition_leaves_no_event(any_db: Database) -> None:
    # Given a queued job
    job_id = new_job(any_db)
    # When a transition's transaction rolls back
    with pytest.raises(RuntimeError), any_db.transaction() as session:
        jobs.start_stage(session, job_id, "validate")
        raise RuntimeError("crash before commit")
    # Then neither the change nor its event exists
    assert events(any_db, job_id) == [(1, "job.queued")]
    with any_db.transaction() as session:
        assert session.get(Job, job_id).status == "queued"  # type: ignore[union-attr]


def test_transition_outside_the_table_is_a_programming_error(sqlite_db: Database) -> None:
    job_id = new_job(sqlite_db)
    with pytest.raises(ValueError, match="not in the table"), sqlite_db.transaction() as session:
        jobs.transition(session, job_id, S.RUNNING, expected=[S.COMPLETED])


def test_a_finished_stage_is_never_claimed_again(any_db: Database) -> None:
    # Given a stage that ran and finished
    job_id = new_job(any_db)
    with any_db.transaction() as session:
        assert jobs.claim_stage(session, job_id, "validate") is True
        jobs.start_stage(session, job_id, "validate")
    with any_db.transaction() as session:
        jobs.finish_stage(session, job_id, "validate", pages=3)
    # When the same stage message is delivered again
    with any_db.transaction() as session:
        claimed = jobs.claim_stage(session, job_id, "validate")
    # Then it is not claimed, and the stage counts as done
    assert claimed is False
    with any_db.transaction() as session:
        assert jobs.done_stages(session, job_id) == ["validate"]
        job = session.get(Job, job_id)
        assert job is not None and job.pages == 3 and job.progress == jobs.stage_progress("validate")


def test_an_unfinished_stage_can_be_claimed_again_and_counts_attempts(any_db: Database) -> None:
    # Given a stage whose first attempt died without finishing
    job_id = new_job(any_db)
    with any_db.transaction() as session:
        assert jobs.claim_stage(session, job_id, "extract")
    # When it is delivered again, then it is claimed again
    with any_db.transaction() as session:
        assert jobs.claim_stage(session, job_id, "extract")
        from shared.models import JobStage

        stage = session.get(JobStage, (job_id, "extract"))
        assert stage is not None and stage.attempts == 2


def test_every_state_in_the_table_is_reachable_from_queued() -> None:
    reached = {S.QUEUED}
    frontier = [S.QUEUED]
    while frontier:
        for target in jobs.TRANSITIONS[frontier.pop()]:
            if target not in reached:
                reached.add(target)
                frontier.append(target)
    assert reached == set(S)
    assert all(not jobs.TRANSITIONS[s] or s in {S.FAILED, S.DEAD_LETTERED} for s in jobs.TERMINAL)
