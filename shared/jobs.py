"""The job state machine: the only module that writes job status.

Every change is a compare-and-set: one UPDATE names the states it expects, bumps `seq` in the same
statement and returns the new row; the event that reports the change is written in the same
transaction, so an event exists if and only if its change committed. Functions take the caller's
session as their first argument and never commit.

Transition table (from → allowed targets):

    queued            → running, failed, cancel_requested, cancelled
    running           → running (next stage), retrying, completed, failed, dead_lettered,
                        cancel_requested
    retrying          → running, failed, dead_lettered, cancel_requested
    cancel_requested  → cancelled, completed, failed, dead_lettered
    failed            → queued (explicit retry/replay only)
    dead_lettered     → queued (explicit retry/replay only)
    completed, cancelled: terminal

Callers change a job's status only through the verbs below (`start`, `advance`, `resume`, `retry`,
`complete`, `fail`, `dead_letter`, `request_cancel`, `cancel`, `cancel_queued`, `requeue`); each
verb's allowed from-states are declared once, in `VERBS`, beside the table.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import case, update
from sqlalchemy.orm import Session

from shared import job_counters
from shared.errors import IngestError, StaleTransitionError
from shared.job_events import EVENT_FOR_STATUS, JobSnapshot, record_event
from shared.job_waiting import RETRY_DELAY
from shared.models import Job, JobStage, JobStatus, StageStatus, utcnow
from shared.queue import pipeline_of_stage

S = JobStatus

TRANSITIONS: Mapping[JobStatus, frozenset[JobStatus]] = {
    S.QUEUED: frozenset({S.RUNNING, S.FAILED, S.CANCEL_REQUESTED, S.CANCELLED}),
    S.RUNNING: frozenset({S.RUNNING, S.RETRYING, S.COMPLETED, S.FAILED, S.DEAD_LETTERED, S.CANCEL_REQUESTED}),
    S.RETRYING: frozenset({S.RUNNING, S.FAILED, S.DEAD_LETTERED, S.CANCEL_REQUESTED}),
    S.CANCEL_REQUESTED: frozenset({S.CANCELLED, S.COMPLETED, S.FAILED, S.DEAD_LETTERED}),
    S.FAILED: frozenset({S.QUEUED}),
    S.DEAD_LETTERED: frozenset({S.QUEUED}),
    S.COMPLETED: frozenset(),
    S.CANCELLED: frozenset(),
}
TERMINAL: frozenset[JobStatus] = frozenset({S.COMPLETED, S.FAILED, S.DEAD_LETTERED, S.CANCELLED})
ACTIVE: frozenset[JobStatus] = frozenset({S.QUEUED, S.RUNNING, S.RETRYING, S.CANCEL_REQUESTED})


@dataclass(frozen=True)
class Verb:
    """A named move of the state machine: the states it may start from and the one it leads to.

    Checked against the table when declared, so a verb can never step outside it."""

    sources: frozenset[JobStatus]
    target: JobStatus

    def __post_init__(self) -> None:
        for source in self.sources:
            if self.target not in TRANSITIONS[source]:
                raise ValueError(f"transition {source} → {self.target} is not in the table")


VERBS: Mapping[str, Verb] = {
    # A worker enters a stage: the first stage of a queued job, the next one, or a retry.
    "start": Verb(frozenset({S.QUEUED, S.RUNNING, S.RETRYING}), S.RUNNING),
    # A stage finished and the job goes on to the next one.
    "advance": Verb(frozenset({S.RUNNING}), S.RUNNING),
    # A retrying job whose stage goes on in parts: one of its parts started again.
    "resume": Verb(frozenset({S.RETRYING}), S.RUNNING),
    # A transient failure; the stage's message comes back after a backoff.
    "retry": Verb(frozenset({S.RUNNING}), S.RETRYING),
    # The last stage finished (a cancel request that arrived during it gives way to the finished work).
    "complete": Verb(frozenset({S.RUNNING, S.CANCEL_REQUESTED}), S.COMPLETED),
    # A permanent error, or a stop (suspended tenant, deadline) at a stage boundary.
    "fail": Verb(frozenset({S.QUEUED, S.RUNNING, S.RETRYING, S.CANCEL_REQUESTED}), S.FAILED),
    # Retries or recoveries ran out.
    "dead_letter": Verb(frozenset({S.RUNNING, S.RETRYING, S.CANCEL_REQUESTED}), S.DEAD_LETTERED),
    # A client asks a job that a worker may hold to stop at its next check.
    "request_cancel": Verb(frozenset({S.RUNNING, S.RETRYING}), S.CANCEL_REQUESTED),
    # The worker honoured a cancel request.
    "cancel": Verb(frozenset({S.CANCEL_REQUESTED}), S.CANCELLED),
    # A client cancels a job that no worker holds yet.
    "cancel_queued": Verb(frozenset({S.QUEUED}), S.CANCELLED),
    # An explicit retry or replay of a failed or dead-lettered job.
    "requeue": Verb(frozenset({S.FAILED, S.DEAD_LETTERED}), S.QUEUED),
}


def stage_progress(stage: str) -> int:
    """Percent done once `stage` has finished."""
    stages = pipeline_of_stage(stage)
    return round(100 * (stages.index(stage) + 1) / len(stages))


def compare_and_set(
    session: Session, job_id: str, expected: Iterable[JobStatus], values: dict[str, Any], *where: Any
) -> JobSnapshot:
    """The one write every change of a job goes through: `values` (with `seq` bumped) if the job is
    in one of the `expected` states and meets `where`, else `StaleTransitionError`."""
    # A change of the job ends any wait (`shared/job_waiting.py`) unless it names one itself.
    values = {"waiting": None, "updated_at": utcnow(), **values, "seq": Job.seq + 1}
    stmt = (
        update(Job)
        .where(Job.id == job_id, Job.status.in_([s.value for s in expected]), *where)
        .values(**values)
        .returning(*Job.__table__.c)
        .execution_options(synchronize_session=False)
    )
    row = session.execute(stmt).mappings().first()
    if row is None:
        raise StaleTransitionError()
    return JobSnapshot(dict(row))


def allows(verb: str, status: JobStatus) -> bool:
    """Whether `verb` may move a job that is in `status` (for a caller choosing what to do)."""
    return status in VERBS[verb].sources


def _sources(verb: str, seen: JobStatus | None) -> frozenset[JobStatus]:
    """The states `verb` may start from: only `seen`, the status the caller read, when given."""
    sources = VERBS[verb].sources
    if seen is None:
        return sources
    if seen not in sources:
        raise ValueError(f"{verb} does not start from {seen}")
    return frozenset({seen})


def _transition(
    session: Session,
    job_id: str,
    verb: str,
    *,
    seen: JobStatus | None = None,
    event: str | None = None,
    **fields: Any,
) -> JobSnapshot:
    """Apply `verb` to the job if its status is one the verb starts from (only `seen`, when the
    caller read it), or raise `StaleTransitionError`."""
    to = VERBS[verb].target
    values: dict[str, Any] = {"status": to.value, **fields}
    if to in TERMINAL:
        values.setdefault("finished_at", utcnow())
    if to not in (S.RUNNING, S.CANCEL_REQUESTED):
        # No stage runs in any other state, so no worker holds the job. A cancel request keeps the
        # lease: the worker running a stage holds it until that stage stops.
        values.setdefault("lease_expires_at", None)
    snapshot = compare_and_set(session, job_id, _sources(verb, seen), values)
    record_event(session, snapshot, event or EVENT_FOR_STATUS[to])
    # Only a move into or out of the terminal states changes the tenant's active jobs (see VERBS).
    change = -1 if to in TERMINAL else 1 if verb == "requeue" else 0
    if change and job_counters.counted(snapshot.kind):
        job_counters.note(session, snapshot.tenant_id, jobs=change)
    return snapshot


def resume(session: Session, job_id: str) -> JobSnapshot:
    """A retrying job whose stage goes on in parts runs again: one of its parts started. The parts'
    messages stand for the job's hand-off, so the sweeper keeps waiting."""
    return _transition(session, job_id, "resume", event="job.resumed", handed_on_at=utcnow())


def retry(session: Session, job_id: str, error: IngestError) -> JobSnapshot:
    """A running stage failed on a transient error; its message comes back after a backoff."""
    return _transition(
        session, job_id, "retry", error_code=error.code, error_message=error.message, waiting=RETRY_DELAY
    )


def complete(session: Session, job_id: str) -> JobSnapshot:
    """The job's last stage finished: it is `completed` at 100%.

    A cancel request that arrived during the last stage gives way: the work is done and counted, so
    the job completes rather than leaving the request hanging. Only a running job's error (from an
    earlier retry) is cleared, in the same statement."""
    running = Job.status == S.RUNNING.value
    return _transition(
        session,
        job_id,
        "complete",
        progress=100,
        error_code=case((running, None), else_=Job.error_code),
        error_message=case((running, None), else_=Job.error_message),
    )


def fail(session: Session, job_id: str, error: IngestError, *, seen: JobStatus | None = None) -> JobSnapshot:
    """The job failed for good with `error` (a permanent error, or a stop at a stage boundary)."""
    return _transition(session, job_id, "fail", seen=seen, error_code=error.code, error_message=error.message)


def dead_letter(
    session: Session, job_id: str, error: IngestError, *, seen: JobStatus | None = None
) -> JobSnapshot:
    """The job's retries or recoveries ran out; `error` is the last one."""
    return _transition(
        session, job_id, "dead_letter", seen=seen, error_code=error.code, error_message=error.message
    )


def request_cancel(session: Session, job_id: str, *, seen: JobStatus | None = None) -> JobSnapshot:
    """Ask a job that a worker may hold to stop at its next check (the worker keeps its lease)."""
    return _transition(session, job_id, "request_cancel", seen=seen, cancel_requested_at=utcnow())


def cancel(session: Session, job_id: str) -> JobSnapshot:
    """A worker honoured the job's cancel request."""
    return _transition(session, job_id, "cancel")


def cancel_queued(session: Session, job_id: str) -> JobSnapshot:
    """Cancel a job that no worker holds yet, at once."""
    return _transition(session, job_id, "cancel_queued")


def requeue(session: Session, job_id: str, *, seen: JobStatus | None = None) -> JobSnapshot:
    """Queue a failed or dead-lettered job again (an explicit retry or replay), its error cleared."""
    return _transition(
        session, job_id, "requeue", seen=seen, error_code=None, error_message=None, finished_at=None
    )


def record_created(session: Session, job: Job) -> None:
    """Write the `job.queued` event of a job just added to the session (flushes it)."""
    session.flush()
    row = {c.name: getattr(job, c.name) for c in Job.__table__.c}
    record_event(session, JobSnapshot(row), EVENT_FOR_STATUS[S.QUEUED])
    if job_counters.counted(job.kind):
        job_counters.note(session, job.tenant_id, jobs=1)


def start(session: Session, job_id: str, stage: str, *, lease_s: float = 60) -> JobSnapshot:
    """The job enters `stage` (running) under a lease; the first stage of a queued job emits
    `job.started`, the first after a retry `job.resumed`."""
    job = session.get(Job, job_id)
    if job is None:
        raise StaleTransitionError()
    first_start = job.status == S.QUEUED.value
    values: dict[str, Any] = {
        "status": VERBS["start"].target.value,
        "stage": stage,
        "attempts": Job.attempts + 1 if first_start else Job.attempts,
        "lease_expires_at": utcnow() + timedelta(seconds=lease_s),
    }
    if job.started_at is None:
        values["started_at"] = utcnow()
    event = "job.started" if first_start else "job.resumed" if job.status == S.RETRYING.value else None
    snapshot = compare_and_set(session, job_id, _sources("start", None), values)
    if event:
        record_event(session, snapshot, event)
    return snapshot


def advance(
    session: Session, job_id: str, stage: str, *, artifact_key: str | None = None, **counters: int
) -> JobSnapshot | None:
    """Record `stage` as done and its counters; emits `job.stage_completed` with the progress.

    The stage row is written whatever the job's status; the job row only while it is running
    (a cancel or failure that arrived meanwhile keeps its own state), else None.
    """
    session.execute(
        update(JobStage)
        .where(JobStage.job_id == job_id, JobStage.stage == stage)
        .values(status=StageStatus.DONE.value, finished_at=utcnow(), artifact_key=artifact_key)
    )
    try:
        snapshot = compare_and_set(
            session,
            job_id,
            _sources("advance", None),
            {
                "status": VERBS["advance"].target.value,
                "stage": stage,
                "progress": stage_progress(stage),
                "lease_expires_at": None,
                **counters,
            },
        )
    except StaleTransitionError:
        # The job was cancelled or failed meanwhile: this worker no longer holds it.
        session.execute(
            update(Job)
            .where(Job.id == job_id, Job.stage == stage)
            .values(lease_expires_at=None)
            .execution_options(synchronize_session=False)
        )
        return None
    record_event(session, snapshot, "job.stage_completed")
    return snapshot
