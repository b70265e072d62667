"""The Redis broker's faults reach Dramatiq as connection errors, so a consumer thread survives a
Redis restart instead of dying with a delayed message in hand (shared/redis_broker.py)."""

from __future__ import annotations

import time
from queue import PriorityQueue

import pytest
import redis
from dramatiq.broker import MessageProxy
from dramatiq.errors import ConnectionClosed
from dramatiq.message import Message
from dramatiq.worker import ConsumerThread, _WorkQueueItem
from redis.backoff import NoBackoff
from redis.retry import Retry

from shared.redis_broker import PollingRedisBroker
from tests.support.ports import free_port


def _down_broker() -> PollingRedisBroker:
    """A broker whose Redis is not there (a restart in progress)."""
    client = redis.Redis(port=free_port(), socket_connect_timeout=0.5, retry=Retry(NoBackoff(), 0))
    broker = PollingRedisBroker(poll_max_ms=100, client=client)
    broker.declare_queue("stage")
    return broker


def _message() -> Message:
    return Message(queue_name="stage", actor_name="run", args=("job",), kwargs={}, options={})


def test_enqueue_and_requeue_raise_connection_closed_while_redis_is_down() -> None:
    # Given a broker whose Redis is down
    broker = _down_broker()
    proxy = MessageProxy(_message())
    proxy.options["redis_message_id"] = "m1"

    # Then enqueueing, now or delayed, and requeueing raise Dramatiq's own connection error
    with pytest.raises(ConnectionClosed):
        broker.enqueue(_message())
    with pytest.raises(ConnectionClosed):
        broker.enqueue(_message(), delay=1000)
    with pytest.raises(ConnectionClosed):
        broker.consume("stage").requeue([proxy])


def test_a_consumer_thread_closing_with_a_delayed_message_survives_a_redis_outage() -> None:
    # Given a consumer thread holding a delayed message, its Redis down
    broker = _down_broker()
    thread = ConsumerThread(
        broker=broker, queue_name="stage.DQ", prefetch=1, work_queue=PriorityQueue(), worker_timeout=100
    )
    thread.consumer = broker.consume("stage.DQ")
    proxy = MessageProxy(_message())
    proxy.options["redis_message_id"] = "m1"
    proxy.options["eta"] = int(time.time() * 1000) - 1
    thread.delay_queue.put(_WorkQueueItem(proxy.options["eta"], proxy))

    # When its delayed message falls due and it closes (what its restart path does)
    with pytest.raises(ConnectionClosed):
        thread.handle_delayed_messages()
    thread.close()  # Then closing does not raise: the thread goes on to restart its consumer
