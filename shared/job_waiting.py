"""Why a job that no worker runs yet is waiting: a field of its representation, not a state.

Marking a job as waiting is not a transition: no `seq`, no event, so no webhook is sent for each
put-back. Every transition clears the field (`jobs.compare_and_set`), and a retry sets its own reason.
"""

from __future__ import annotations

from sqlalchemy import or_, update
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


def mark_waiting(session: Session, job_id: str, reason: str) -> None:
    """Say why the job waits, unless a worker holds it (a stage runs under a lease) or it has ended."""
    session.execute(
        update(Job)
        .where(
            Job.id == job_id,
            Job.status.in_(WAITING_STATUSES),
            Job.lease_expires_at.is_(None),
            or_(Job.waiting.is_(None), Job.waiting != reason),
        )
        .values(waiting=reason)
        .execution_options(synchronize_session=False)
    )
