"""The RabbitMQ broker: delays longer than a bound are taken in hops, under `consumer_timeout`.

Dramatiq keeps a delayed message on the queue's delay queue and holds it unacknowledged in the
worker until its time comes (dramatiq#827). RabbitMQ closes the channel of a consumer that holds a
delivery longer than its `consumer_timeout` (30 minutes by default; the per-queue
`x-consumer-timeout` argument needs RabbitMQ 3.12), and every message that channel held is
redelivered at once. So a delay above `max_hold_ms` is enqueued for `max_hold_ms` only, with the
time it is really due in its options; a worker that receives it early enqueues it again for the
rest (`ingest_worker/middleware/delay_hops.py`). The broker never holds a delivery longer than the
bound, whatever the delay, and nothing else (the database, the sweeper) needs to know.
"""

from __future__ import annotations

import time
from typing import Any

from dramatiq.brokers.rabbitmq import RabbitmqBroker
from dramatiq.message import Message

# The message option that says when (epoch milliseconds) a message hopping through delays is due.
DUE_AT_OPTION = "due_at_ms"


def now_ms() -> int:
    return int(time.time() * 1000)


class HoppingRabbitmqBroker(RabbitmqBroker):
    """A RabbitmqBroker whose delays each last at most `max_hold_ms`."""

    def __init__(self, *, max_hold_ms: int, **kwargs: Any) -> None:
        if max_hold_ms <= 0:
            raise ValueError("max_hold_ms must be positive")
        super().__init__(**kwargs)
        self.max_hold_ms = max_hold_ms

    def enqueue(self, message: Message[Any], *, delay: int | None = None) -> Message[Any]:
        if delay is not None and delay > self.max_hold_ms:
            message = message.copy(options={**message.options, DUE_AT_OPTION: now_ms() + delay})
            delay = self.max_hold_ms
        return super().enqueue(message, delay=delay)
