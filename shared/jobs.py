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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shared import webhooks
from shared.errors import StaleTransitionError
from shared.models import Job, JobEvent, JobKind, JobStage, JobStatus, StageStatus, utcnow
from shared.queue import STAGES, pipeline_of_stage, stages_of

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

# Event type for each target status (stage progress within `running` is `job.stage_completed`).
EVENT_FOR_STATUS: Mapping[JobStatus, str] = {
    S.QUEUED: "job.queued",
    S.RUNNING: "job.started",
    S.RETRYING: "job.retrying",
    S.COMPLETED: "job.completed",
    S.FAILED: "job.failed",
    S.DEAD_LETTERED: "job.dead_lettered",
    S.CANCEL_REQUESTED: "job.cancel_requested",
    S.CANCELLED: "job.cancelled",
}

SNAPSHOT_FIELDS = (
    "id",
    "tenant_id",
    "document_id",
    "kind",
    "status",
    "stage",
    "progress",
    "pages",
    "ocr_pages",
    "ocr_pages_dropped",
    "chunks",
    "points",
    "attempts",
    "error_code",
    "error_message",
    "seq",
)


@dataclass(frozen=True)
class JobSnapshot:
    """The job as one transition left it."""

    row: Mapping[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.row[name]
        except KeyError:
            raise AttributeError(name) from None


def stage_progress(stage: str) -> int:
    """Percent done once `stage` has finished."""
    stages = pipeline_of_stage(stage)
    return round(100 * (stages.index(stage) + 1) / len(stages))


def _check_allowed(expected: Iterable[JobStatus], to: JobStatus) -> list[str]:
    expected = list(expected)
    for source in expected:
        if to not in TRANSITIONS[source]:
            raise ValueError(f"transition {source} → {to} is not in the table")
    return [s.value for s in expected]


def _write(session: Session, job_id: str, expected: list[str], values: dict[str, Any]) -> JobSnapshot:
    values = {**values, "seq": Job.seq + 1, "updated_at": utcnow()}
    stmt = (
        update(Job)
        .where(Job.id == job_id, Job.status.in_(expected))
        .values(**values)
        .returning(*Job.__table__.c)
        .execution_options(synchronize_session=False)
    )
    row = session.execute(stmt).mappings().first()
    if row is None:
        raise StaleTransitionError()
    return JobSnapshot(dict(row))


def record_event(session: Session, snapshot: JobSnapshot, event_type: str) -> None:
    """Write the event that reports the change `snapshot` came from, and its webhook delivery
    (same transaction)."""
    payload = {name: snapshot.row[name] for name in SNAPSHOT_FIELDS}
    payload["job_id"] = payload.pop("id")
    payload["timestamp"] = snapshot.row["updated_at"].isoformat() + "Z"
    session.add(
        JobEvent(
            job_id=snapshot.id,
            tenant_id=snapshot.tenant_id,
            seq=snapshot.seq,
            type=event_type,
            payload=payload,
        )
    )
    webhooks.add_deliveries(session, snapshot.row, event_type, payload)


def transition(
    session: Session,
    job_id: str,
    to: JobStatus,
    *,
    expected: Iterable[JobStatus],
    event: str | None = None,
    **fields: Any,
) -> JobSnapshot:
    """Move a job from one of `expected` to `to`, or raise `StaleTransitionError`."""
    expected_values = _check_allowed(expected, to)
    values: dict[str, Any] = {"status": to.value, **fields}
    if to in TERMINAL:
        values.setdefault("finished_at", utcnow())
    if to not in (S.RUNNING, S.CANCEL_REQUESTED):
        # No stage runs in any other state, so no worker holds the job. A cancel request keeps the
        # lease: the worker running a stage holds it until that stage stops.
        values.setdefault("lease_expires_at", None)
    snapshot = _write(session, job_id, expected_values, values)
    record_event(session, snapshot, event or EVENT_FOR_STATUS[to])
    return snapshot


def record_created(session: Session, job: Job) -> None:
    """Write the `job.queued` event of a job just added to the session (flushes it)."""
    session.flush()
    row = {c.name: getattr(job, c.name) for c in Job.__table__.c}
    record_event(session, JobSnapshot(row), EVENT_FOR_STATUS[S.QUEUED])


def get_job(session: Session, job_id: str, *, tenant_id: str | None = None) -> Job | None:
    """The job, scoped to `tenant_id` when given (another tenant's job is None)."""
    stmt = select(Job).where(Job.id == job_id)
    if tenant_id is not None:
        stmt = stmt.where(Job.tenant_id == tenant_id)
    return session.scalars(stmt).first()


def _stage_insert(session: Session) -> Any:
    return postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert


def claim_stage(session: Session, job_id: str, stage: str) -> bool:
    """Mark `stage` running for this delivery; False when the stage is already done.

    An upsert whose update only applies to a stage that is not done, so a redelivered or
    retried message can never redo finished work.
    """
    insert = _stage_insert(session)
    now = utcnow()
    stmt = insert(JobStage).values(
        job_id=job_id, stage=stage, status=StageStatus.RUNNING.value, attempts=1, started_at=now
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=[JobStage.job_id, JobStage.stage],
        set_={
            "status": StageStatus.RUNNING.value,
            "attempts": JobStage.attempts + 1,
            "started_at": now,
        },
        where=JobStage.status != StageStatus.DONE.value,
    ).returning(JobStage.attempts)
    return session.execute(stmt).first() is not None


def start_stage(session: Session, job_id: str, stage: str, *, lease_s: float = 60) -> JobSnapshot:
    """The job enters `stage` (running) under a lease; the first stage of a queued job emits
    `job.started`."""
    job = session.get(Job, job_id)
    if job is None:
        raise StaleTransitionError()
    first_start = job.status == S.QUEUED.value
    values: dict[str, Any] = {
        "stage": stage,
        "attempts": Job.attempts + 1 if first_start else Job.attempts,
        "lease_expires_at": utcnow() + timedelta(seconds=lease_s),
    }
    if job.started_at is None:
        values["started_at"] = utcnow()
    event = "job.started" if first_start else "job.resumed" if job.status == S.RETRYING.value else None
    snapshot = _write(
        session,
        job_id,
        _check_allowed([S.QUEUED, S.RUNNING, S.RETRYING], S.RUNNING),
        {
            "status": S.RUNNING.value,
            **values,
        },
    )
    if event:
        record_event(session, snapshot, event)
    return snapshot


def finish_stage(
    session: Session, job_id: str, stage: str, *, artifact_key: str | None = None, **counters: int
) -> JobSnapshot | None:
    """Record `stage` as done and its counters; emits `job.stage_completed` with the progress.

    The stage row is written whatever the job's status; the job row only while it is running
    (a cancel or failure that arrived meanwhile keeps its own state).
    """
    session.execute(
        update(JobStage)
        .where(JobStage.job_id == job_id, JobStage.stage == stage)
        .values(status=StageStatus.DONE.value, finished_at=utcnow(), artifact_key=artifact_key)
    )
    try:
        snapshot = _write(
            session,
            job_id,
            [S.RUNNING.value],
            {"stage": stage, "progress": stage_progress(stage), "lease_expires_at": None, **counters},
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


def renew_lease(session: Session, job_id: str, stage: str, *, lease_s: float) -> bool:
    """Extend the lease of the worker running `stage`; False once the job has moved on.

    Not a transition: the status does not change, so `seq` does not move and no event is written.
    """
    result = session.execute(
        update(Job)
        .where(
            Job.id == job_id,
            Job.status.in_([S.RUNNING.value, S.CANCEL_REQUESTED.value]),
            Job.stage == stage,
            Job.lease_expires_at.is_not(None),
        )
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def record_hand_off(session: Session, job_id: str) -> None:
    """The job's next stage message is in the broker (not a transition: no `seq`, no event)."""
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == S.RUNNING.value)
        .values(handed_on_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def await_parts(session: Session, job_id: str) -> None:
    """The job's current stage goes on in parts with leases of their own: the job's lease is let go
    and the parts' messages count as its hand-off (not a transition: no `seq`, no event)."""
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == S.RUNNING.value)
        .values(lease_expires_at=None, handed_on_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def count_recovery(session: Session, job_id: str) -> None:
    """One more recovery of the job (a lost part of a stage given back); the status is unchanged."""
    session.execute(
        update(Job)
        .where(Job.id == job_id)
        .values(recoveries=Job.recoveries + 1)
        .execution_options(synchronize_session=False)
    )


def mark_recovered(
    session: Session, job_id: str, *, expected_updated_at: datetime, counted: bool = True
) -> bool:
    """Note that a job whose worker or message was lost is being resumed, if nobody touched it
    since the sweeper looked (compare-and-set on `updated_at`); the status does not change.
    `counted` recoveries add up towards dead-lettering."""
    result = session.execute(
        update(Job)
        .where(Job.id == job_id, Job.updated_at == expected_updated_at)
        .values(
            recoveries=Job.recoveries + (1 if counted else 0),
            lease_expires_at=None,
            handed_on_at=None,
            updated_at=utcnow(),
        )
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def resume_stage(session: Session, job: Job) -> str:
    """The first stage of the job's pipeline that has not finished: where a retry, a replay or a
    recovery starts (the last stage when all are done, so the job still completes)."""
    done = set(done_stages(session, job.id))
    pipeline = stages_of(job.kind)
    return next((s for s in pipeline if s not in done), pipeline[-1])


def latest_job_of_document(session: Session, document_id: str) -> Job | None:
    """The document's latest upload or delete job (reindex jobs are the operator's, not the client's)."""
    return session.scalars(
        select(Job)
        .where(Job.document_id == document_id, Job.kind != JobKind.REINDEX.value)
        .order_by(Job.created_at.desc())
    ).first()


def done_stages(session: Session, job_id: str) -> list[str]:
    """Stages of the job that have finished, in pipeline order."""
    rows = session.scalars(
        select(JobStage.stage).where(JobStage.job_id == job_id, JobStage.status == StageStatus.DONE.value)
    ).all()
    done = set(rows)
    return [s for s in (*STAGES, *sorted(done - set(STAGES))) if s in done]
