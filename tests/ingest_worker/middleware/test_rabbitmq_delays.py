"""Long delays on RabbitMQ stay under its consumer_timeout: they are taken in hops.

A private node with a consumer_timeout of a few seconds (checked every second) stands in for the
default 30 minutes; the hop bound stands in for `rabbitmq_max_hold_s`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import dramatiq
import pytest
from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.middleware import CurrentMessage

from ingest_worker.middleware.delay_hops import DelayHops
from shared.rabbitmq import DUE_AT_OPTION, HoppingRabbitmqBroker
from tests.conftest import missing_service

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

CONSUMER_TIMEOUT_MS = 3000
TIMED_OUT = "delivery acknowledgement on channel"


@pytest.fixture(scope="module")
def short_timeout_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from tests.support.rabbitmq_server import running_rabbitmq, server_script

    if server_script() is None:
        missing_service("the rabbitmq-server package (make test-debs installs it)")
    with running_rabbitmq(
        tmp_path_factory.mktemp("rabbit-timeout"),
        conf=f"consumer_timeout = {CONSUMER_TIMEOUT_MS}\n",
        # The node checks the timeout on each channel tick, every minute unless told otherwise.
        advanced="[{rabbit, [{channel_tick_interval, 500}]}]",
    ) as node:
        yield node


def run_one_delayed_message(broker: Any, delay_ms: int, wait_s: float) -> list[tuple[float, Any]]:
    """Enqueue one message with `delay_ms`, run a worker for up to `wait_s`; return (time, options)
    of each run of it."""
    runs: list[tuple[float, Any]] = []

    @dramatiq.actor(broker=broker, queue_name="delays")
    def tick() -> None:
        message = CurrentMessage.get_current_message()
        runs.append((time.monotonic(), dict(message.options) if message else {}))

    broker.declare_queue("delays")
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=100)
    worker.start()
    try:
        started = time.monotonic()
        tick.send_with_options(delay=delay_ms)
        deadline = started + wait_s
        while time.monotonic() < deadline and not runs:
            time.sleep(0.1)
        time.sleep(1.0)  # a second run would come right after the first
        return [(at - started, options) for at, options in runs]
    finally:
        worker.stop()
        broker.flush_all()
        broker.close()


def test_a_long_delay_held_whole_trips_the_consumer_timeout(short_timeout_node: Any) -> None:
    # Given Dramatiq's own RabbitMQ broker, which holds a delayed message unacknowledged
    broker = RabbitmqBroker(url=short_timeout_node.url, middleware=[CurrentMessage()])
    # When a message is delayed for longer than the node's consumer_timeout
    runs = run_one_delayed_message(broker, delay_ms=3 * CONSUMER_TIMEOUT_MS, wait_s=30)
    # Then the node closed the channel that held it (what the hops avoid)
    assert TIMED_OUT in short_timeout_node.node_log()
    assert runs


def test_a_long_delay_in_hops_never_trips_it_and_runs_once_on_time(short_timeout_node: Any) -> None:
    before = short_timeout_node.node_log().count(TIMED_OUT)
    # Given the service's broker, holding a delayed message at most a third of the timeout at a time
    broker = HoppingRabbitmqBroker(
        url=short_timeout_node.url, middleware=[CurrentMessage(), DelayHops()], max_hold_ms=1000
    )
    # When a message is delayed for three times the timeout
    delay_ms = 3 * CONSUMER_TIMEOUT_MS
    runs = run_one_delayed_message(broker, delay_ms=delay_ms, wait_s=30)
    # Then it runs once, no earlier than its delay and not much later
    assert len(runs) == 1
    at, options = runs[0]
    assert delay_ms / 1000 - 0.2 <= at < delay_ms / 1000 + 5
    assert DUE_AT_OPTION in options
    # And the node timed out no consumer
    assert short_timeout_node.node_log().count(TIMED_OUT) == before
