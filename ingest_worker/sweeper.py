"""Recovery of jobs whose worker or message was lost: the sweeper of the maintenance loop.

A job is resumed from its first unfinished stage (through the outbox) when
- its lease expired: the worker running a stage died (killed, out of memory, host lost);
- a stage finished but no hand-off to the next one was recorded within `handoff_stall_s`
  (Dramatiq acks a message even when handing on to the next stage fails);
- the broker lost what it held (a Redis flushed or restarted without persistence), seen as a
  changed broker epoch: every job waiting for a message is published again;
- as a last safety net, it waited for a message for `requeue_after_s` without any progress.
A part of a stage (a page range of a large scan's OCR) whose lease expired is given back and its
message published again; the job's other parts carry on. The first two, and lost parts, count as
recoveries, and past `max_recoveries` the job is dead-lettered with `worker_lost`; re-publishing
after a broker loss is not the job's fault and is not counted. Rows are claimed with a
compare-and-set on `updated_at` (and `SKIP LOCKED` on PostgreSQL), so two sweepers never resume the
same job twice.
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from sqlalchemy import and_, exists, or_, select
from sqlalchemy.orm import Session

from ingest_worker.ocr import stage_parts
from shared import job_stages, jobs, outbox
from shared.db import Database
from shared.errors import TransientError
from shared.models import Job, JobStatus, OutboxMessage, utcnow
from shared.settings import Settings

logger = logging.getLogger(__name__)

S = JobStatus
BATCH = 500
WAITING = (S.QUEUED.value, S.RETRYING.value, S.CANCEL_REQUESTED.value)


class BrokerEpoch:
    """A random value kept in Redis: when it is gone or changed, Redis lost its data."""

    def __init__(self, broker: Any, namespace: str) -> None:
        self.client = getattr(broker, "client", None)
        self.key = f"{namespace}:ingest-epoch"
        self.known: str | None = None

    def lost(self) -> bool:
        """True once after the broker lost its data (never for a broker without a client)."""
        if self.client is None:
            return False
        try:
            current = self.client.get(self.key)
            if current is None:
                self.client.set(self.key, uuid.uuid4().hex, nx=True)
                current = self.client.get(self.key)
        except Exception:
            logger.warning("broker epoch unreadable (broker down?)")
            return False
        value = current.decode() if isinstance(current, bytes) else str(current)
        lost = self.known is not None and value != self.known
        self.known = value
        return lost


def _waiting_for_a_message() -> Any:
    return or_(
        Job.status.in_(WAITING),
        and_(Job.status == S.RUNNING.value, Job.lease_expires_at.is_(None)),
    )


def sweep(db: Database, settings: Settings, *, broker_lost: bool = False) -> int:
    """Resume (or dead-letter) every job that lost its worker or its message. Returns how many."""
    now = utcnow()
    lost_worker = and_(
        Job.status.in_([S.RUNNING.value, S.CANCEL_REQUESTED.value]),
        Job.lease_expires_at < now,
    )
    lost_hand_off = and_(
        Job.status == S.RUNNING.value,
        Job.lease_expires_at.is_(None),
        or_(Job.handed_on_at.is_(None), Job.handed_on_at < Job.updated_at),
        Job.updated_at < now - timedelta(seconds=settings.handoff_stall_s),
    )
    lost_message = and_(
        _waiting_for_a_message(), Job.updated_at < now - timedelta(seconds=settings.requeue_after_s)
    )
    conditions = [lost_worker, lost_hand_off, lost_message]
    if broker_lost:
        conditions.append(_waiting_for_a_message())
    unpublished = exists().where(OutboxMessage.job_id == Job.id, OutboxMessage.published_at.is_(None))
    resumed = 0
    with db.transaction() as session:
        stmt = select(Job).where(or_(*conditions), ~unpublished).order_by(Job.updated_at).limit(BATCH)
        if not db.is_sqlite:
            stmt = stmt.with_for_update(skip_locked=True, of=Job)
        for job in session.scalars(stmt).all():
            counted = _is_lost_worker_or_hand_off(job, now, settings)
            if counted and job.recoveries >= settings.max_recoveries:
                _give_up(session, job)
                continue
            seen_at = job.updated_at
            if not job_stages.mark_recovered(session, job.id, expected_updated_at=seen_at, counted=counted):
                continue
            outbox.add_message(session, job.id, job_stages.resume_stage(session, job))
            logger.warning("job %s (%s, stage %s) resumed by the sweeper", job.id, job.status, job.stage)
            resumed += 1
    return resumed + _recover_parts(db, settings)


def _give_up(session: Session, job: Job) -> None:
    """A job whose worker was lost `max_recoveries` times: dead-lettered rather than resumed again."""
    lost = TransientError("The job's worker was lost too many times.", code="worker_lost")
    jobs.dead_letter(session, job.id, lost, seen=S(job.status))
    logger.error("job %s dead-lettered after %s recoveries", job.id, job.recoveries)


def _recover_parts(db: Database, settings: Settings) -> int:
    """Give back the parts whose worker was lost and publish them again (or dead-letter the job)."""
    recovered = 0
    with db.transaction() as session:
        for part in stage_parts.expired_parts(session, limit=BATCH):
            job = session.get(Job, part.job_id)
            if not stage_parts.requeue_expired(session, part):
                continue
            if job is None or job.status not in (S.RUNNING.value, S.RETRYING.value, S.CANCEL_REQUESTED.value):
                continue
            if job.recoveries >= settings.max_recoveries:
                _give_up(session, job)
                continue
            job_stages.count_recovery(session, job.id)
            outbox.add_message(session, job.id, part.stage, part=part.part)
            logger.warning("job %s: part %s of %s given back by the sweeper", job.id, part.part, part.stage)
            recovered += 1
    return recovered


def _is_lost_worker_or_hand_off(job: Job, now: Any, settings: Settings) -> bool:
    if job.lease_expires_at is not None:
        return bool(job.lease_expires_at < now)
    stalled_since = now - timedelta(seconds=settings.handoff_stall_s)
    return (
        job.status == S.RUNNING.value
        and (job.handed_on_at is None or job.handed_on_at < job.updated_at)
        and job.updated_at < stalled_since
    )
