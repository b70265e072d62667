"""The job state machine on both databases: compare-and-set transitions, seq, events, stage claims."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from shared import job_stages, jobs
from shared.db import Database
from shared.errors import PermanentError, StaleTransitionError
from shared.models import Document, Job, JobEvent, JobStatus
from shared.tenants import create_tenant

S = JobStatus
pytestmark = pytest.mark.postgres


def new_job(db: Database, tenant_name: str = "acme") -> str:
    with db.transaction() as session:
        tenant, _ = create_tenant(session, tenant_name)
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
        started = jobs.start(session, job_id, "validate")
    with any_db.transaction() as session:
        done = jobs.complete(session, job_id)
    # Then seq only grows and each change has exactly one event with that seq
    assert (started.seq, done.seq) == (2, 3)
    assert events(any_db, job_id) == [(1, "job.queued"), (2, "job.started"), (3, "job.completed")]
    assert done.status == "completed" and done.finished_at is not None


def test_transition_from_a_stale_state_is_refused(any_db: Database) -> None:
    # Given a job that another worker already completed
    job_id = new_job(any_db)
    with any_db.transaction() as session:
        jobs.start(session, job_id, "validate")
        jobs.complete(session, job_id)
    # When a slow worker tries to fail it
    with pytest.raises(StaleTransitionError), any_db.transaction() as session:
        jobs.fail(session, job_id, PermanentError("x", code="x"))
    # Then nothing changed: still completed, no event for the refused change
    with any_db.transaction() as session:
        assert session.get(Job, job_id).status == "completed"  # type: ignore[union-attr]
    assert [kind for _, kind in events(any_db, job_id)][-1] == "job.completed"


def test_rolled_back_transition_leaves_no_event(any_db: Database) -> None:
    # Given a queued job
    job_id = new_job(any_db)
    # When a transition's transaction rolls back
    with pytest.raises(RuntimeError), any_db.transaction() as session:
        jobs.start(session, job_id, "validate")
        raise RuntimeError("crash before commit")
    # Then neither the change nor its event exists
    assert events(any_db, job_id) == [(1, "job.queued")]
    with any_db.transaction() as session:
        assert session.get(Job, job_id).status == "queued"  # type: ignore[union-attr]


def test_a_verb_outside_the_table_is_a_programming_error() -> None:
    # Every declared verb moves along the table
    assert all(v.target in jobs.TRANSITIONS[s] for v in jobs.VERBS.values() for s in v.sources)
    # And a verb that would leave it is refused when it is declared
    with pytest.raises(ValueError, match="not in the table"):
        jobs.Verb(frozenset({S.COMPLETED}), S.RUNNING)


ERROR = PermanentError("x", code="x")
# Each verb applied to a job, as its callers apply it.
APPLY: dict[str, Callable[[Session, str], object]] = {
    "start": lambda session, job_id: jobs.start(session, job_id, "validate"),
    "advance": lambda session, job_id: jobs.advance(session, job_id, "validate"),
    "resume": jobs.resume,
    "retry": lambda session, job_id: jobs.retry(session, job_id, ERROR),
    "complete": jobs.complete,
    "fail": lambda session, job_id: jobs.fail(session, job_id, ERROR),
    "dead_letter": lambda session, job_id: jobs.dead_letter(session, job_id, ERROR),
    "request_cancel": jobs.request_cancel,
    "cancel": jobs.cancel,
    "cancel_queued": jobs.cancel_queued,
    "requeue": jobs.requeue,
}
# The verbs a caller may narrow to the status it read.
APPLY_SEEN: dict[str, Callable[[Session, str, JobStatus], object]] = {
    "fail": lambda session, job_id, seen: jobs.fail(session, job_id, ERROR, seen=seen),
    "dead_letter": lambda session, job_id, seen: jobs.dead_letter(session, job_id, ERROR, seen=seen),
    "request_cancel": lambda session, job_id, seen: jobs.request_cancel(session, job_id, seen=seen),
    "requeue": lambda session, job_id, seen: jobs.requeue(session, job_id, seen=seen),
}


def job_in(db: Database, status: JobStatus, tenant_name: str = "acme") -> str:
    """A job put straight into `status` (test set-up, not a transition)."""
    job_id = new_job(db, tenant_name)
    with db.transaction() as session:
        session.execute(update(Job).where(Job.id == job_id).values(status=status.value))
    return job_id


def test_every_verb_is_tested() -> None:
    assert set(APPLY) == set(jobs.VERBS)


@pytest.mark.parametrize(
    ("verb", "status"),
    [(verb, status) for verb, v in jobs.VERBS.items() for status in S if status not in v.sources],
)
def test_each_verb_refuses_a_from_state_it_does_not_own(
    sqlite_db: Database, verb: str, status: JobStatus
) -> None:
    # Given a job in a state the verb does not start from
    assert not jobs.allows(verb, status)
    job_id = job_in(sqlite_db, status)
    before = events(sqlite_db, job_id)
    # When the verb is applied, then it is refused (finishing a stage of a job that is not running
    # records the stage and leaves the job alone)
    with sqlite_db.transaction() as session:
        if verb == "advance":
            assert jobs.advance(session, job_id, "validate") is None
        else:
            with pytest.raises(StaleTransitionError):
                APPLY[verb](session, job_id)
    # And nothing changed: the same status, no event
    with sqlite_db.transaction() as session:
        assert session.get(Job, job_id).status == status.value  # type: ignore[union-attr]
    assert events(sqlite_db, job_id) == before
    # And naming that state as the one the caller read is a programming error
    if verb in APPLY_SEEN:
        with pytest.raises(ValueError, match="does not start from"), sqlite_db.transaction() as session:
            APPLY_SEEN[verb](session, job_id, status)


@pytest.mark.parametrize(
    ("verb", "status"), [(verb, status) for verb, v in jobs.VERBS.items() for status in sorted(v.sources)]
)
def test_each_verb_moves_a_job_from_each_state_it_owns(
    sqlite_db: Database, verb: str, status: JobStatus
) -> None:
    # Given a job in a state the verb starts from
    assert jobs.allows(verb, status)
    job_id = job_in(sqlite_db, status)
    # When the verb is applied
    with sqlite_db.transaction() as session:
        snapshot = APPLY[verb](session, job_id)
    # Then the job is in the verb's target state, with a newer seq
    assert isinstance(snapshot, jobs.JobSnapshot)
    assert snapshot.status == jobs.VERBS[verb].target.value and snapshot.seq == 2


def test_a_verb_narrowed_to_the_status_read_refuses_any_other(sqlite_db: Database) -> None:
    # Given a job that was running when a caller read it, and is retrying now
    job_id = job_in(sqlite_db, S.RETRYING)
    # When the caller fails it, naming the status it read
    with pytest.raises(StaleTransitionError), sqlite_db.transaction() as session:
        jobs.fail(session, job_id, ERROR, seen=S.RUNNING)
    # Then the job is left as it is
    with sqlite_db.transaction() as session:
        assert session.get(Job, job_id).status == S.RETRYING.value  # type: ignore[union-attr]


def test_completing_clears_a_running_jobs_error_only(sqlite_db: Database) -> None:
    # Given a running and a cancel-requested job, each carrying an earlier retry's error
    running, asked = job_in(sqlite_db, S.RUNNING), job_in(sqlite_db, S.CANCEL_REQUESTED, "globex")
    with sqlite_db.transaction() as session:
        session.execute(update(Job).values(error_code="storage_unavailable", error_message="m"))
    # When both complete
    with sqlite_db.transaction() as session:
        done = [jobs.complete(session, running), jobs.complete(session, asked)]
    # Then both are completed at 100%; the running one's error is cleared, as it always was
    assert [(d.status, d.progress) for d in done] == [("completed", 100)] * 2
    assert [d.error_code for d in done] == [None, "storage_unavailable"]


def test_a_finished_stage_is_never_claimed_again(any_db: Database) -> None:
    # Given a stage that ran and finished
    job_id = new_job(any_db)
    with any_db.transaction() as session:
        assert job_stages.claim_stage(session, job_id, "validate") is True
        jobs.start(session, job_id, "validate")
    with any_db.transaction() as session:
        jobs.advance(session, job_id, "validate", pages=3)
    # When the same stage message is delivered again
    with any_db.transaction() as session:
        claimed = job_stages.claim_stage(session, job_id, "validate")
    # Then it is not claimed, and the stage counts as done
    assert claimed is False
    with any_db.transaction() as session:
        assert job_stages.done_stages(session, job_id) == ["validate"]
        job = session.get(Job, job_id)
        assert job is not None and job.pages == 3 and job.progress == jobs.stage_progress("validate")


def test_an_unfinished_stage_can_be_claimed_again_and_counts_attempts(any_db: Database) -> None:
    # Given a stage whose first attempt died without finishing
    job_id = new_job(any_db)
    with any_db.transaction() as session:
        assert job_stages.claim_stage(session, job_id, "extract")
    # When it is delivered again, then it is claimed again
    with any_db.transaction() as session:
        assert job_stages.claim_stage(session, job_id, "extract")
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
