"""Stages run in parts, each its own message (the page ranges of a large scan's OCR), and the join.

Each part is a row claimed with a compare-and-set, so a part that is done is never redone and a
delivery of a part that is running is dropped. A running part whose lease expired (its worker was
lost) is not taken by a delivery either: the sweeper gives it back, counts the recovery towards
dead-lettering and publishes it again, whichever way the broker brought the message back. The
stage's row in `job_stages` carries a counter: finishing a part increments it in the same
transaction that marks the part done, and the increment that reaches the number of parts belongs
to the last part, exactly once: concurrent finishers serialise on that one row (a row lock on
PostgreSQL, the database lock on SQLite) and a redelivered part finds itself done and increments
nothing. Functions take the caller's session and never commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from sqlalchemy import ColumnElement, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from shared.models import JobStage, StagePart, StageStatus, utcnow

P = StageStatus


def _claimable() -> ColumnElement[bool]:
    """A part waiting for a worker: neither done nor running (a lost worker's part is given back
    by the sweeper first)."""
    return StagePart.status.not_in([P.DONE.value, P.RUNNING.value])


def plan_parts(session: Session, job_id: str, stage: str, parts: Sequence[Sequence[int]]) -> list[int]:
    """Record the stage's parts (the first plan stands: a second fan-out keeps it) and return the
    parts that need a message: neither done nor running."""
    insert = postgresql.insert if session.get_bind().dialect.name == "postgresql" else sqlite.insert
    existing = session.scalar(
        select(StagePart.part).where(StagePart.job_id == job_id, StagePart.stage == stage).limit(1)
    )
    if existing is None:
        rows = [
            {"job_id": job_id, "stage": stage, "part": n, "pages": list(pages), "status": P.QUEUED.value}
            for n, pages in enumerate(parts)
        ]
        session.execute(insert(StagePart).values(rows).on_conflict_do_nothing())
        session.execute(
            update(JobStage)
            .where(JobStage.job_id == job_id, JobStage.stage == stage, JobStage.parts == 0)
            .values(parts=len(rows), parts_done=0)
        )
    return list(
        session.scalars(
            select(StagePart.part)
            .where(StagePart.job_id == job_id, StagePart.stage == stage, _claimable())
            .order_by(StagePart.part)
        )
    )


def claim_part(session: Session, job_id: str, stage: str, part: int, *, lease_s: float) -> list[int] | None:
    """Take the part for this delivery under a lease; its pages, or None when it is done or running."""
    now = utcnow()
    row = session.execute(
        update(StagePart)
        .where(StagePart.job_id == job_id, StagePart.stage == stage, StagePart.part == part, _claimable())
        .values(
            status=P.RUNNING.value,
            attempts=StagePart.attempts + 1,
            lease_expires_at=now + timedelta(seconds=lease_s),
        )
        .returning(StagePart.pages)
        .execution_options(synchronize_session=False)
    ).first()
    return None if row is None else list(row[0])


def renew_part(session: Session, job_id: str, stage: str, part: int, *, lease_s: float) -> bool:
    """Extend the lease of a running part; False once it is no longer running."""
    result = session.execute(
        update(StagePart)
        .where(
            StagePart.job_id == job_id,
            StagePart.stage == stage,
            StagePart.part == part,
            StagePart.status == P.RUNNING.value,
        )
        .values(lease_expires_at=utcnow() + timedelta(seconds=lease_s))
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def release_part(session: Session, job_id: str, stage: str, part: int) -> None:
    """Give a running part back (its retry, or a recovery, claims it again)."""
    session.execute(
        update(StagePart)
        .where(
            StagePart.job_id == job_id,
            StagePart.stage == stage,
            StagePart.part == part,
            StagePart.status == P.RUNNING.value,
        )
        .values(status=P.QUEUED.value, lease_expires_at=None)
        .execution_options(synchronize_session=False)
    )


def finish_part(session: Session, job_id: str, stage: str, part: int, *, artifact_key: str) -> bool:
    """Mark the part done and count it; True for the last part of the stage, exactly once."""
    done = session.execute(
        update(StagePart)
        .where(
            StagePart.job_id == job_id,
            StagePart.stage == stage,
            StagePart.part == part,
            StagePart.status != P.DONE.value,
        )
        .values(status=P.DONE.value, artifact_key=artifact_key, lease_expires_at=None, finished_at=utcnow())
        .execution_options(synchronize_session=False)
    )
    if not done.rowcount:  # type: ignore[attr-defined]
        return False
    counted = session.execute(
        update(JobStage)
        .where(JobStage.job_id == job_id, JobStage.stage == stage)
        .values(parts_done=JobStage.parts_done + 1)
        .returning(JobStage.parts_done, JobStage.parts)
        .execution_options(synchronize_session=False)
    ).one()
    return bool(counted[0] == counted[1])


def part_artifacts(session: Session, job_id: str, stage: str) -> list[str]:
    """The artifact keys of the stage's finished parts, in part order."""
    return [
        key
        for key in session.scalars(
            select(StagePart.artifact_key)
            .where(StagePart.job_id == job_id, StagePart.stage == stage, StagePart.status == P.DONE.value)
            .order_by(StagePart.part)
        )
        if key
    ]


def expired_parts(session: Session, *, limit: int) -> list[StagePart]:
    """Running parts whose worker stopped renewing their lease (killed, out of memory, host lost)."""
    return list(
        session.scalars(
            select(StagePart)
            .where(StagePart.status == P.RUNNING.value, StagePart.lease_expires_at < utcnow())
            .limit(limit)
        )
    )


def requeue_expired(session: Session, part: StagePart) -> bool:
    """Give a lost worker's part back, if nobody took it since it was read (compare-and-set)."""
    result = session.execute(
        update(StagePart)
        .where(
            StagePart.job_id == part.job_id,
            StagePart.stage == part.stage,
            StagePart.part == part.part,
            StagePart.status == P.RUNNING.value,
            StagePart.lease_expires_at == part.lease_expires_at,
        )
        .values(status=P.QUEUED.value, lease_expires_at=None)
        .execution_options(synchronize_session=False)
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]
