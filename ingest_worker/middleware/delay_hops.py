"""Sends a message that arrived before its time back for the rest of its delay (RabbitMQ's hops).

`shared/rabbitmq.py` cuts a long delay into hops no longer than RabbitMQ's consumer_timeout allows a
delivery to be held; a message whose `due_at_ms` is still ahead is enqueued again for what remains
and skipped, before any other hook (a tenant slot, say) is spent on it.
"""

from __future__ import annotations

import logging
from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware, SkipMessage

from ingest_worker.middleware.tenant_concurrency import PUT_BACK_WARNINGS
from shared.rabbitmq import DUE_AT_OPTION, now_ms

logger = logging.getLogger(__name__)

# A message this close to its time runs now: another hop would only add a round trip.
EARLY_MS = 50


class DelayHops(Middleware):
    """A message still ahead of its `due_at_ms` waits the rest of its delay on the broker."""

    def before_process_message(self, broker: Broker, message: Any) -> None:
        due_at = message.options.get(DUE_AT_OPTION)
        if due_at is None:
            return
        remaining = int(due_at) - now_ms()
        if remaining <= EARLY_MS:
            return
        logger.debug("%s is due in %s ms; it waits on the broker again", message, remaining)
        broker.enqueue(message._message.copy(), delay=remaining)
        PUT_BACK_WARNINGS.expect(message.message_id)
        raise SkipMessage()
