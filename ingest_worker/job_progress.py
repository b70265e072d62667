"""Progress inside a long stage: the units it has done (pages read, chunks embedded) counted with
atomic increments, since the page ranges of one scan run at once, and the job's `progress` moved
between the stage's boundaries, with a `job.progress` event.

A stage's first and last percentages are those `jobs.stage_progress` gives at its boundaries; within
it, progress only grows, and only while the job is running that stage. Functions take the caller's
session and never commit.
"""

from __future__ import annotations

from sqlalchemy import and_, case, update
from sqlalchemy.orm import Session

from shared.errors import StaleTransitionError
from shared.job_events import record_event
from shared.jobs import compare_and_set, stage_progress
from shared.models import Job, JobStage, JobStatus, utcnow
from shared.queue import pipeline_of_stage


def stage_bounds(stage: str) -> tuple[int, int]:
    """The job's progress when `stage` starts and when it has finished."""
    stages = pipeline_of_stage(stage)
    position = stages.index(stage)
    return (stage_progress(stages[position - 1]) if position else 0), stage_progress(stage)


def begin_units(session: Session, job_id: str, stage: str, total: int) -> None:
    """The stage has `total` units to do, none done yet."""
    session.execute(
        update(JobStage)
        .where(JobStage.job_id == job_id, JobStage.stage == stage)
        .values(units_total=total, units_done=0)
        .execution_options(synchronize_session=False)
    )


def add_units(session: Session, job_id: str, stage: str, done: int) -> int | None:
    """Count `done` more units of the stage; the job's new progress when it moved (and its
    `job.progress` event was written), else None."""
    row = session.execute(
        update(JobStage)
        .where(JobStage.job_id == job_id, JobStage.stage == stage)
        .values(units_done=JobStage.units_done + done)
        .returning(JobStage.units_done, JobStage.units_total)
        .execution_options(synchronize_session=False)
    ).first()
    if row is None or not row.units_total:
        return None
    low, high = stage_bounds(stage)
    progress = low + (high - low) * min(row.units_done, row.units_total) // row.units_total
    now = utcnow()
    # Not a transition: a job whose stage goes on in parts keeps its hand-off as recent as this write,
    # or the sweeper would take the parts' progress for a hand-off lost after it.
    handed_on = case(
        (and_(Job.handed_on_at.is_not(None), Job.handed_on_at >= Job.updated_at), now), else_=Job.handed_on_at
    )
    values = {"progress": progress, "updated_at": now, "handed_on_at": handed_on}
    try:
        snapshot = compare_and_set(
            session, job_id, [JobStatus.RUNNING], values, Job.stage == stage, Job.progress < progress
        )
    except StaleTransitionError:
        return None  # the job moved on, or another worker's count already took it further
    record_event(session, snapshot, "job.progress")
    return progress
