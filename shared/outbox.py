"""The transactional outbox: messages written with the job, published by a relay after commit.

`add_message` writes a row in the caller's transaction. `Relay.publish` is the fast path right after
commit; `Relay.publish_pending` is the sweep the maintenance loop runs for whatever was left (broker
down, process killed between commit and publish). A row is claimed by moving its `available_at`
forward with a compare-and-set, so two relays never publish the same row at the same moment; a
publish that fails leaves the row for a later sweep with a growing delay. Delivery stays at least
once (a relay may die after publishing and before marking), which the idempotent stages absorb.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import timedelta

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session, sessionmaker

from shared import jobs
from shared.db import transaction
from shared.errors import BrokerUnavailableError
from shared.models import Job, JobKind, JobStatus, OutboxMessage, utcnow
from shared.queue import Publisher

logger = logging.getLogger(__name__)

CLAIM_S = 30
ACTIVE_STATUSES = [
    s.value for s in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.RETRYING, JobStatus.CANCEL_REQUESTED)
]
MAX_BACKOFF_S = 60
# Where a session keeps the ids of the outbox rows added in it, for the fast path after its commit.
_ADDED = "outbox_added"


def add_message(session: Session, job_id: str, stage: str, *, part: int | None = None) -> OutboxMessage:
    """Queue the job's pipeline from `stage` (or, with `part`, that one part of the stage) for
    publishing, in the caller's transaction."""
    row = OutboxMessage(job_id=job_id, stage=stage, part=part)
    session.add(row)
    session.flush()
    session.info.setdefault(_ADDED, []).append(row.id)
    return row


def added_ids(session: Session) -> list[int]:
    """The ids of the outbox rows this session has added: what to hand to `Relay.publish` once the
    transaction has committed (no query needed to find them again)."""
    return list(session.info.get(_ADDED, ()))


class Relay:
    """Publishes outbox rows on the broker and marks them published."""

    def __init__(
        self, sessions: sessionmaker[Session], publisher: Publisher, *, interactive_jobs_per_tenant: int = 4
    ) -> None:
        self.sessions = sessions
        self.publisher = publisher
        # A job with this many older unfinished jobs of its tenant goes to the backlog lane.
        self.interactive_jobs_per_tenant = interactive_jobs_per_tenant
        # After a broker failure the fast path stays quiet for a moment, so requests are not
        # slowed by a broker that is down; the sweep keeps trying.
        self._quiet_until = 0.0

    def publish(self, ids: Iterable[int]) -> int:
        """Fast path: publish these rows now if the broker looks healthy. Returns how many.

        Runs after the caller's commit, so it never raises: whatever it cannot publish, the sweep
        publishes later.
        """
        if time.monotonic() < self._quiet_until:
            return 0
        published = 0
        for row_id in ids:
            try:
                published += self._publish_one(row_id)
            except Exception:
                logger.exception(
                    "outbox row %s not published on the fast path; the sweep will retry it", row_id
                )
        return published

    def publish_for_jobs(self, job_ids: Iterable[str]) -> int:
        """Fast path for the rows of jobs just committed."""
        job_ids = list(job_ids)
        if not job_ids:
            return 0
        with transaction(self.sessions) as session:
            ids = session.scalars(
                select(OutboxMessage.id).where(
                    OutboxMessage.job_id.in_(job_ids), OutboxMessage.published_at.is_(None)
                )
            ).all()
        return self.publish(ids)

    def publish_pending(self, limit: int = 100) -> int:
        """Sweep: publish rows that are due. Returns how many were published."""
        with transaction(self.sessions) as session:
            due = session.scalars(
                select(OutboxMessage.id)
                .where(OutboxMessage.published_at.is_(None), OutboxMessage.available_at <= utcnow())
                .order_by(OutboxMessage.id)
                .limit(limit)
            ).all()
        published = 0
        for row_id in due:
            ok = self._publish_one(row_id)
            published += ok
            if not ok and time.monotonic() < self._quiet_until:
                break
        return published

    def _claim(self, row_id: int) -> tuple[str, str, int | None, int, str | None, str] | None:
        now = utcnow()
        with transaction(self.sessions) as session:
            row = session.execute(
                update(OutboxMessage)
                .where(
                    OutboxMessage.id == row_id,
                    OutboxMessage.published_at.is_(None),
                    OutboxMessage.available_at <= now,
                )
                .values(available_at=now + timedelta(seconds=CLAIM_S), attempts=OutboxMessage.attempts + 1)
                .returning(
                    OutboxMessage.job_id, OutboxMessage.stage, OutboxMessage.part, OutboxMessage.attempts
                )
            ).first()
            if row is None:
                return None
            job = session.get(Job, row[0])
            if job is None:
                return row[0], row[1], row[2], row[3], None, "interactive"
            return row[0], row[1], row[2], row[3], job.tenant_id, self._lane(session, job)

    def _lane(self, session: Session, job: Job) -> str:
        """`bulk` for a reindex job; `backlog` for a job that has enough older unfinished jobs of its
        tenant ahead of it (reindex jobs do not count: they travel in their own lane)."""
        if job.kind == JobKind.REINDEX.value:
            return "bulk"
        limit = self.interactive_jobs_per_tenant
        if limit <= 0:
            return "interactive"
        ahead = session.scalar(
            select(func.count())
            .select_from(Job)
            .where(
                Job.tenant_id == job.tenant_id,
                Job.status.in_(ACTIVE_STATUSES),
                Job.kind != JobKind.REINDEX.value,
                Job.created_at < job.created_at,
            )
        )
        return "backlog" if (ahead or 0) >= limit else "interactive"

    def _publish_one(self, row_id: int) -> bool:
        claimed = self._claim(row_id)
        if claimed is None:
            return False
        job_id, stage, part, attempts, tenant_id, lane = claimed
        try:
            if part is None:
                self.publisher.publish(job_id, stage, tenant_id, lane)
            else:
                self.publisher.publish_part(job_id, stage, part, tenant_id, lane)
        except BrokerUnavailableError as exc:
            backoff = min(MAX_BACKOFF_S, 2 ** min(attempts, 6))
            self._quiet_until = time.monotonic() + min(backoff, 5)
            logger.warning("outbox row %s not published (%s); next try in %ss", row_id, exc.code, backoff)
            with transaction(self.sessions) as session:
                session.execute(
                    update(OutboxMessage)
                    .where(OutboxMessage.id == row_id)
                    .values(available_at=utcnow() + timedelta(seconds=backoff), last_error=exc.code)
                )
            return False
        with transaction(self.sessions) as session:
            session.execute(
                update(OutboxMessage).where(OutboxMessage.id == row_id).values(published_at=utcnow())
            )
            # A running job's next message is in the broker now: the sweeper must not take it for a
            # lost hand-off while it waits in the queue (this relay's broker may stamp nothing).
            jobs.record_hand_off(session, job_id)
        logger.debug("published job %s from stage %s (outbox row %s)", job_id, stage, row_id)
        return True
