"""Dramatiq's Redis broker, polling within a bound, whose every Redis fault reaches Dramatiq as a
broker connection error.

Dramatiq's consumer thread restarts itself after a `ConnectionError` of its own, but two calls let
redis-py's error through: `enqueue` (which the consumer thread uses to move a delayed message whose
time has come) and the consumer's `requeue` (which it uses while it closes). During a Redis restart
the first sends the thread to its "unexpected error" path, where closing calls the second, which
raises again, out of the thread: the queue is then consumed by no one until the process restarts,
and jobs waiting in a delay queue wait forever. Here both raise `ConnectionClosed`, so the thread
drops its connection and starts again a second later, as for any other Redis outage.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import redis
from dramatiq.brokers.redis import RedisBroker, _RedisConsumer
from dramatiq.errors import ConnectionClosed
from dramatiq.message import Message

_REDIS_DOWN = (redis.ConnectionError, redis.TimeoutError)


@contextmanager
def _as_connection_closed() -> Iterator[None]:
    try:
        yield
    except _REDIS_DOWN as error:
        raise ConnectionClosed(error) from error


class _Consumer(_RedisConsumer):
    def requeue(self, messages: Iterable[Any]) -> None:
        with _as_connection_closed():
            super().requeue(messages)


class PollingRedisBroker(RedisBroker):
    """A Redis broker whose consumers wait at most `poll_max_ms` on an empty queue."""

    def __init__(self, *, poll_max_ms: int, **options: Any) -> None:
        super().__init__(**options)
        self.poll_max_ms = poll_max_ms

    @property
    def consumer_class(self) -> type[_RedisConsumer]:
        return _Consumer

    def consume(self, queue_name: str, prefetch: int = 1, timeout: int = 5000) -> Any:
        return super().consume(queue_name, prefetch, min(timeout, self.poll_max_ms))

    def enqueue(self, message: Message[Any], *, delay: int | None = None) -> Message[Any]:
        with _as_connection_closed():
            return super().enqueue(message, delay=delay)
