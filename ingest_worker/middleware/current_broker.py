"""Makes the broker that delivered the message in hand known to the code it runs.

A stage that writes outbox rows publishes them right away on that broker (the outbox's fast path),
instead of waiting for the maintenance loop; the broker is not a global one in every process.
"""

from __future__ import annotations

import threading
from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware

_local = threading.local()


class CurrentBroker(Middleware):
    """Remembers, per worker thread, the broker of the message being processed."""

    def before_process_message(self, broker: Broker, message: Any) -> None:
        _local.broker = broker

    def after_process_message(
        self, broker: Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        _local.broker = None

    after_skip_message = after_process_message


def current_broker() -> Broker | None:
    """The broker of the message this thread is processing, if any."""
    return getattr(_local, "broker", None)
