"""A cap on each tenant's open event streams, shared by every gateway process through the database.

Each open stream holds a lease row that expires unless the stream renews it, so the slots of a
process that died without closing its streams come back by themselves after `LEASE_S`.
"""

from __future__ import annotations

import math
from datetime import timedelta

from sqlalchemy import delete, func, select, update
from sqlalchemy.orm import Session

from shared.errors import TooManyStreamsError
from shared.models import EventStreamLease, Tenant, utcnow

# How long a lease lasts unless renewed; a stream renews it well before (every third of it).
LEASE_S = 30.0


def acquire(session: Session, tenant_id: str, *, cap: int, lease_s: float = LEASE_S) -> str:
    """A new lease for one of the tenant's streams, or TooManyStreamsError (with the seconds until the
    soonest lease could lapse) when the tenant holds `cap` live ones."""
    # The tenant row serialises concurrent acquires of one tenant (SQLite serialises every writer).
    session.scalars(select(Tenant.id).where(Tenant.id == tenant_id).with_for_update()).one()
    now = utcnow()
    live = EventStreamLease.tenant_id == tenant_id
    session.execute(delete(EventStreamLease).where(live, EventStreamLease.expires_at <= now))
    count, soonest = session.execute(
        select(func.count(), func.min(EventStreamLease.expires_at)).where(live)
    ).one()
    if count >= cap:
        wait_s = (soonest - now).total_seconds() if soonest is not None else lease_s
        raise TooManyStreamsError(retry_after_s=max(1, math.ceil(wait_s)))
    lease = EventStreamLease(tenant_id=tenant_id, expires_at=now + timedelta(seconds=lease_s))
    session.add(lease)
    session.flush()
    return lease.id


def renew(session: Session, lease_id: str, *, lease_s: float = LEASE_S) -> bool:
    """Extend a lease; False when it has lapsed and gone (its stream should end: the slot is lost)."""
    result = session.execute(
        update(EventStreamLease)
        .where(EventStreamLease.id == lease_id)
        .values(expires_at=utcnow() + timedelta(seconds=lease_s))
    )
    return bool(result.rowcount)  # type: ignore[attr-defined]


def release(session: Session, lease_id: str) -> None:
    """Give the slot back (a closed stream)."""
    session.execute(delete(EventStreamLease).where(EventStreamLease.id == lease_id))
