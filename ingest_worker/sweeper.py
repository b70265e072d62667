"""Recovery of jobs whose worker or message was lost: the sweeper of the maintenance loop.

A job is resumed from its first unfinished stage (through the outbox) when
- its lease expired: the worker running a stage died (killed, out of memory, host lost);
- it is running with no stage under way for `handoff_stall_s`: a stage finished but the next one
  was never enqueued (Dramatiq acks a message even when handing on to the next stage fails);
- it waited queued or retrying for `requeue_after_s`: its message was lost (a flushed broker).
Each resume counts as a recovery; past `max_recoveries` the job is dead-lettered with
`worker_lost`. Rows are claimed with a compare-and-set (and `SKIP LOCKED` on PostgreSQL), so two
sweepers never resume the same job twice.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from sqlalchemy import and_, exists, or_, select

from shared import jobs, outbox
from shared.db import Database
from shared.models import Job, JobStatus, OutboxMessage, utcnow
from shared.queue import stages_of
from shared.settings import Settings

logger = logging.getLogger(__name__)

S = JobStatus
BATCH = 200


def sweep(db: Database, settings: Settings) -> int:
    """Resume (or dead-letter) every job that lost its worker or its message. Returns how many."""
    now = utcnow()
    stuck = or_(
        and_(Job.status.in_([S.RUNNING.value, S.CANCEL_REQUESTED.value]), Job.lease_expires_at < now),
        and_(
            Job.status == S.RUNNING.value,
            Job.lease_expires_at.is_(None),
            Job.updated_at < now - timedelta(seconds=settings.handoff_stall_s),
        ),
        and_(
            Job.status.in_([S.QUEUED.value, S.RETRYING.value]),
            Job.updated_at < now - timedelta(seconds=settings.requeue_after_s),
        ),
    )
    unpublished = exists().where(OutboxMessage.job_id == Job.id, OutboxMessage.published_at.is_(None))
    resumed = 0
    with db.transaction() as session:
        stmt = select(Job).where(stuck, ~unpublished).order_by(Job.updated_at).limit(BATCH)
        if not db.is_sqlite:
            stmt = stmt.with_for_update(skip_locked=True, of=Job)
        for job in session.scalars(stmt).all():
            if job.recoveries >= settings.max_recoveries:
                jobs.transition(
                    session,
                    job.id,
                    S.DEAD_LETTERED,
                    expected=[S(job.status)],
                    error_code="worker_lost",
                    error_message="The job's worker or message was lost too many times.",
                )
                logger.error("job %s dead-lettered after %s recoveries", job.id, job.recoveries)
                continue
            if not jobs.mark_recovered(session, job.id, expected_updated_at=job.updated_at):
                continue
            done = set(jobs.done_stages(session, job.id))
            pipeline = stages_of(job.kind)
            outbox.add_message(session, job.id, next((s for s in pipeline if s not in done), pipeline[-1]))
            logger.warning("job %s (%s, stage %s) resumed by the sweeper", job.id, job.status, job.stage)
            resumed += 1
    return resumed
