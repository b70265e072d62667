"""The per-tenant cap's slots: a live message keeps its slot however long it runs, a killed worker's
slot comes back by itself within its lifetime."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
import redis
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import SkipMessage

from ingest_worker.middleware.tenant_concurrency import LocalSlots, RedisSlots, TenantConcurrency

# Long enough that two calls in a row fit in it on a loaded machine (300 ms did not, in parallel runs).
TTL_MS = 1000


@pytest.fixture(params=["local", "redis"])
def slots(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "local":
        yield LocalSlots()
        return
    url, namespace = request.getfixturevalue("redis_url"), request.getfixturevalue("broker_namespace")
    client = redis.Redis.from_url(url)
    yield RedisSlots(client, namespace)
    client.close()


def message(tenant_id: str) -> Any:
    return dramatiq.broker.MessageProxy(
        dramatiq.Message(
            queue_name="ingest", actor_name="a", args=("j",), kwargs={}, options={"tenant_id": tenant_id}
        )
    )


def test_a_slot_whose_holder_died_comes_back_after_its_lifetime(slots: Any) -> None:
    # Given a tenant at its cap of one, held by a worker that was killed (it never renews nor releases)
    assert slots.acquire("t1", "dead-worker", cap=1, ttl_ms=TTL_MS)
    assert not slots.acquire("t1", "other", cap=1, ttl_ms=TTL_MS)
    # When its lifetime passes, then another worker gets the slot
    deadline = time.monotonic() + 10
    while not slots.acquire("t1", "other", cap=1, ttl_ms=TTL_MS):
        assert time.monotonic() < deadline, "the dead worker's slot never came back"
        time.sleep(0.05)


def test_a_message_that_runs_longer_than_the_lifetime_keeps_its_slot(slots: Any) -> None:
    broker = StubBroker()
    broker.declare_queue("ingest")
    cap = TenantConcurrency(slots, cap=1, slot_ttl_ms=TTL_MS, requeue_delay_ms=(10, 10))
    # Given a message of a tenant with a cap of one in progress
    first = message("t2")
    cap.before_process_message(broker, first)
    # When it runs for several lifetimes of its slot, then another message of the tenant is still put back
    time.sleep(4 * TTL_MS / 1000)
    outcome: list[BaseException] = []

    def second() -> None:
        try:
            cap.before_process_message(broker, message("t2"))
        except SkipMessage as exc:
            outcome.append(exc)

    thread = threading.Thread(target=second)
    thread.start()
    thread.join()
    assert len(outcome) == 1 and broker.queues["ingest.DQ"].qsize() == 1
    # And once the first is done, the slot is free at once
    cap.after_process_message(broker, first)
    assert slots.acquire("t2", "next", cap=1, ttl_ms=TTL_MS)
