"""A job's stages and its lease outside the state machine: stage rows (claimed once, never redone),
where a retry or a recovery resumes, the lease a running stage renews, and the recovery marks.

None of these changes a job's status, so none bumps `seq` or writes an event; status changes are the
verbs of shared/jobs.py. Functions take the caller's session as their first argument and never commit.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shared.models import Job, JobStage, JobStatus, StageStatus, utcnow
from shared.queue import STAGES, stages_of

S = JobStatus


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


def done_stages(session: Session, job_id: str) -> list[str]:
    """Stages of the job that have finished, in pipeline order."""
    rows = session.scalars(
        select(JobStage.stage).where(JobStage.job_id == job_id, JobStage.status == StageStatus.DONE.value)
    ).all()
    done = set(rows)
    return [s for s in (*STAGES, *sorted(done - set(STAGES))) if s in done]
