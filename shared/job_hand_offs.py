"""The job row's hand-off and lease bookkeeping that is not a transition (no `seq`, no event)."""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import update
from sqlalchemy.orm import Session

from shared.models import Job, JobStatus, utcnow


def record_hand_off(session: Session, job_ids: Collection[str]) -> None:
    """These jobs' next stage messages are in the broker (not a transition: no `seq`, no event)."""
    if not job_ids:
        return
    session.execute(
        update(Job)
        .where(Job.id.in_(job_ids), Job.status == JobStatus.RUNNING.value)
        .values(handed_on_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def await_parts(session: Session, job_id: str) -> None:
    """The job's current stage goes on in parts with leases of their own: the job's lease is let go
    and the parts' messages count as its hand-off (not a transition: no `seq`, no event)."""
    session.execute(
        update(Job)
        .where(Job.id == job_id, Job.status == JobStatus.RUNNING.value)
        .values(lease_expires_at=None, handed_on_at=utcnow())
        .execution_options(synchronize_session=False)
    )
