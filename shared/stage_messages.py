"""The outbox's stage messages as the relay sees them: a job's pipeline from a stage (or one part of a
stage) to publish, in the lane its tenant's backlog puts it in.

A row is claimed by moving its `available_at` forward with a compare-and-set; a publish the broker
refuses leaves it due again after a growing delay.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Table, and_, select, update
from sqlalchemy.orm import Session

from shared.errors import BrokerUnavailableError
from shared.job_hand_offs import record_hand_off
from shared.job_waiting import BACKLOG, mark_waiting
from shared.models import Job, JobKind, JobStatus, OutboxMessage, Tenant, utcnow
from shared.queue import Publisher

logger = logging.getLogger(__name__)

CLAIM_S = 30
MAX_BACKOFF_S = 60
OUTBOX: Table = OutboxMessage.__table__  # type: ignore[assignment]
ACTIVE_STATUSES = [
    s.value for s in (JobStatus.QUEUED, JobStatus.RUNNING, JobStatus.RETRYING, JobStatus.CANCEL_REQUESTED)
]


@dataclass(frozen=True)
class StageClaim:
    job_id: str
    stage: str
    part: int | None
    attempts: int
    tenant_id: str | None
    lane: str
    # Whether the job was running when claimed: only a running job's message is a hand-off.
    running: bool = True


class StageMessages:
    """Outbox rows (`outbox` table): each publishes a job's pipeline, or one part of a stage."""

    name = "stages"
    model = OutboxMessage
    # A published row is marked, so that the sweep does not publish it again when its claim runs out.
    marks_sent = True

    def __init__(self, publisher: Publisher, *, interactive_jobs_per_tenant: int = 4) -> None:
        self.publisher = publisher
        # A job with this many older unfinished jobs of its tenant goes to the backlog lane.
        self.interactive_jobs_per_tenant = interactive_jobs_per_tenant

    def due(self, now: datetime) -> ColumnElement[bool]:
        return and_(OutboxMessage.published_at.is_(None), OutboxMessage.available_at <= now)

    def claim(self, session: Session, row_id: int, now: datetime) -> StageClaim | None:
        return self.claim_many(session, [row_id], now).get(row_id)

    def claim_many(
        self, session: Session, row_ids: list[int], now: datetime, unwritten: Mapping[str, int] | None = None
    ) -> dict[int, StageClaim]:
        """Claim these rows where due; the claims by row id, each with its lane, read from the job and
        its tenant's active jobs in one more statement for all of them (plus the `unwritten` changes
        of the caller's transaction, by tenant)."""
        unwritten = unwritten or {}
        rows = session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id.in_(row_ids), self.due(now))
            .values(available_at=now + timedelta(seconds=CLAIM_S), attempts=OutboxMessage.attempts + 1)
            .returning(
                OutboxMessage.id,
                OutboxMessage.job_id,
                OutboxMessage.stage,
                OutboxMessage.part,
                OutboxMessage.attempts,
            )
        ).all()
        if not rows:
            return {}
        jobs = {
            job_id: (
                tenant_id,
                self._lane(kind, status, active + unwritten.get(tenant_id, 0)),
                status == JobStatus.RUNNING.value,
            )
            for job_id, tenant_id, kind, status, active in session.execute(
                select(Job.id, Job.tenant_id, Job.kind, Job.status, Tenant.active_jobs)
                .join(Tenant, Tenant.id == Job.tenant_id)
                .where(Job.id.in_({row.job_id for row in rows}))
            )
        }
        return {
            row_id: StageClaim(job_id, stage, part, attempts, *jobs.get(job_id, (None, "interactive", True)))
            for row_id, job_id, stage, part, attempts in rows
        }

    def new_claims(
        self, rows: list[tuple[int, str]], stage: str, tenant_id: str, tenant_active_jobs: int
    ) -> dict[int, StageClaim]:
        """The claims of rows (id, job id) for new queued jobs of one tenant that were written claimed
        (`available_at` CLAIM_S ahead, one attempt): what `claim_many` would return for them, with the
        lane read from `tenant_active_jobs` (this transaction's jobs included)."""
        lane = self._lane(JobKind.INGEST.value, JobStatus.QUEUED.value, tenant_active_jobs)
        return {row_id: StageClaim(job_id, stage, None, 1, tenant_id, lane, False) for row_id, job_id in rows}

    def _lane(self, kind: str, status: str, tenant_active_jobs: int) -> str:
        """`bulk` for a reindex job; `backlog` for a job whose tenant has enough other unfinished jobs
        (reindex jobs do not count: they travel in their own lane).

        Read from the tenant's counter (shared/job_counters.py), so the choice costs the same at any
        backlog. The others are the jobs ahead of a new job, which is what the relay mostly publishes;
        a job requeued behind newer ones counts those too."""
        if kind == JobKind.REINDEX.value:
            return "bulk"
        limit = self.interactive_jobs_per_tenant
        if limit <= 0:
            return "interactive"
        others = (tenant_active_jobs or 0) - (1 if status in ACTIVE_STATUSES else 0)
        return "backlog" if others >= limit else "interactive"

    def send(self, claim: StageClaim) -> None:
        if claim.part is None:
            self.publisher.publish(claim.job_id, claim.stage, claim.tenant_id, claim.lane)
        else:
            self.publisher.publish_part(claim.job_id, claim.stage, claim.part, claim.tenant_id, claim.lane)

    def sent(self, session: Session, items: Sequence[tuple[int, StageClaim]]) -> None:
        """Mark these published rows, in one statement for the rows and one for each kind of job mark."""
        row_ids = [row_id for row_id, _ in items]
        session.execute(update(OUTBOX).where(OUTBOX.c.id.in_(row_ids)).values(published_at=utcnow()))
        # A running job's next message is in the broker now: the sweeper must not take it for a
        # lost hand-off while it waits in the queue (this relay's broker may stamp nothing). A queued
        # job's first message hands nothing on (and a worker may already have started it).
        record_hand_off(session, [claim.job_id for _, claim in items if claim.running])
        mark_waiting(session, [claim.job_id for _, claim in items if claim.lane == "backlog"], BACKLOG)
        for row_id, claim in items:
            logger.debug("published job %s from stage %s (outbox row %s)", claim.job_id, claim.stage, row_id)

    def unsent(
        self, session: Session, row_id: int, claim: StageClaim, error: BrokerUnavailableError
    ) -> float:
        """Due again after a delay that grows with the row's attempts; returns that delay."""
        backoff = min(MAX_BACKOFF_S, 2 ** min(claim.attempts, 6))
        logger.warning("outbox row %s not published (%s); next try in %ss", row_id, error.code, backoff)
        session.execute(
            update(OutboxMessage)
            .where(OutboxMessage.id == row_id)
            .values(available_at=utcnow() + timedelta(seconds=backoff), last_error=error.code)
        )
        return backoff
