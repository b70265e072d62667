"""Stream leases on both databases: the cap holds under concurrent acquires, a lapsed lease frees
its slot, and a stream learns when its lease is gone."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import update

from gateway import stream_leases
from shared.db import Database
from shared.errors import TooManyStreamsError
from shared.models import EventStreamLease, utcnow
from shared.tenants import create_tenant


def _tenant(db: Database) -> str:
    with db.transaction() as session:
        tenant, _ = create_tenant(session, "acme")
        session.flush()
        return tenant.id


def _acquire(db: Database, tenant_id: str, cap: int) -> str | None:
    try:
        with db.transaction() as session:
            return stream_leases.acquire(session, tenant_id, cap=cap)
    except TooManyStreamsError:
        return None


def test_concurrent_acquires_never_pass_the_cap(any_db: Database) -> None:
    # Given a tenant allowed 3 streams
    tenant_id = _tenant(any_db)

    # When 8 streams ask for a slot at once
    with ThreadPoolExecutor(8) as pool:
        leases = list(pool.map(lambda _: _acquire(any_db, tenant_id, 3), range(8)))

    # Then exactly 3 get one
    assert len([lease for lease in leases if lease]) == 3


def test_a_lapsed_lease_frees_its_slot_and_its_stream_learns_it(any_db: Database) -> None:
    # Given a tenant holding its only slot, whose lease then lapses unrenewed
    tenant_id = _tenant(any_db)
    first = _acquire(any_db, tenant_id, 1)
    assert first is not None and _acquire(any_db, tenant_id, 1) is None
    with any_db.transaction() as session:
        session.execute(update(EventStreamLease).values(expires_at=utcnow() - timedelta(seconds=1)))

    # When another stream asks
    second = _acquire(any_db, tenant_id, 1)

    # Then it gets the slot, and the first stream's renewal tells it its lease is gone
    assert second is not None
    with any_db.transaction() as session:
        assert stream_leases.renew(session, first) is False
        assert stream_leases.renew(session, second) is True


@pytest.mark.parametrize("held", [1, 2])
def test_the_refusal_says_when_a_slot_may_free(any_db: Database, held: int) -> None:
    # Given a tenant holding all its slots
    tenant_id = _tenant(any_db)
    for _ in range(held):
        assert _acquire(any_db, tenant_id, held) is not None

    # When one more stream asks
    with pytest.raises(TooManyStreamsError) as refused, any_db.transaction() as session:
        stream_leases.acquire(session, tenant_id, cap=held)

    # Then the refusal carries the seconds until the soonest lease could lapse
    assert refused.value.retry_after_s is not None
    assert 1 <= refused.value.retry_after_s <= stream_leases.LEASE_S
