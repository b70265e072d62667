"""Why a job that no worker runs yet is waiting: a field of its representation, not a state.

Marking a job as waiting is not a transition: no `seq`, no event, so no webhook is sent for each
put-back. Every transition clears the field (`jobs.compare_and_set`), and a retry sets its own reason.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import Table, or_, update
from sqlalchemy.orm import Session

from shared.models import Job, JobStatus

# Its tenant has as many messages in progress as its cap allows; it is put back until a slot frees.
TENANT_SLOT = "tenant_slot"
# A transient failure's backoff: the retry is scheduled.
RETRY_DELAY = "retry_delay"
# Its tenant has many older unfinished jobs: it travels in the backlog lane, behind other tenants.
BACKLOG = "backlog"
REASONS = (TENANT_SLOT, RETRY_DELAY, BACKLOG)
WAITING_STATUSES = (JobStatus.QUEUED.value, JobStatus.RUNNING.value, JobStatus.RETRYING.value)


JOBS: Table = Job.__table__  # type: ignore[assignment]


def mark_waiting(session: Session, job_ids: Collection[str], reason: str) -> None:
    """Say why these jobs wait, except those a worker holds (a stage runs under a lease) or that have
    ended. One Core UPDATE: the relay marks its published rows' jobs in batches."""
    if not job_ids:
        return
    session.execute(
        update(JOBS)
        .where(
            JOBS.c.id.in_(job_ids),
            JOBS.c.status.in_(WAITING_STATUSES),
            JOBS.c.lease_expires_at.is_(None),
            or_(JOBS.c.waiting.is_(None), JOBS.c.waiting != reason),
        )
        .values(waiting=reason)
    )
