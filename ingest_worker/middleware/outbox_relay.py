"""Attaches the outbox relay to the worker process's database when a worker boots.

From then on every transaction a stage commits hands the outbox rows it wrote (a webhook delivery
of each event, the next stage of a job whose OCR ranges joined) to the relay at once, on this
worker's broker; the maintenance loop's sweep publishes whatever that misses.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware

from ingest_worker.resources import Resources
from shared.outbox import Relay
from shared.queue import Publisher


class OutboxRelay(Middleware):
    """The outbox's fast path in worker processes."""

    def __init__(self, resources: Callable[[], Resources]) -> None:
        # A callable returning the process's Resources, built lazily after fork.
        self.resources = resources

    def before_worker_boot(self, broker: Broker, worker: Any) -> None:
        res = self.resources()
        Relay.from_settings(res.db.sessions, Publisher(broker), res.settings).attach(res.db.sessions)
