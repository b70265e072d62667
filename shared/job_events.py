"""What a job's transitions leave behind: the snapshot of its row, and the event that reports it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import Table
from sqlalchemy.orm import Session

from shared import insert_batch, webhooks
from shared.job_representation import iso_time, job_fields
from shared.models import JobEvent, JobStatus

S = JobStatus


@dataclass(frozen=True)
class JobSnapshot:
    """The job as one transition left it."""

    row: Mapping[str, Any]

    def __getattr__(self, name: str) -> Any:
        try:
            return self.row[name]
        except KeyError:
            raise AttributeError(name) from None


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


def record_event(session: Session, snapshot: JobSnapshot, event_type: str) -> None:
    """Write the event that reports the change `snapshot` came from, and its webhook delivery
    (same transaction)."""
    payload = {**job_fields(snapshot.row), "timestamp": iso_time(snapshot.row["updated_at"])}
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


def record_events(session: Session, rows: Sequence[Mapping[str, Any]], event_type: str) -> None:
    """`record_event` for several jobs' rows at once: their events in one INSERT rather than through
    the ORM, and their webhook deliveries."""
    payloads = [{**job_fields(row), "timestamp": iso_time(row["updated_at"])} for row in rows]
    insert_batch.add(
        session,
        cast(Table, JobEvent.__table__),
        [
            {"job_id": row["id"], "tenant_id": row["tenant_id"], "seq": row["seq"], "type": event_type}
            | {"payload": payload}
            for row, payload in zip(rows, payloads, strict=True)
        ],
    )
    for row, payload in zip(rows, payloads, strict=True):
        webhooks.add_deliveries(session, row, event_type, payload)
