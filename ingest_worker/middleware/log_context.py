"""Binds the job, tenant and message ids of the message a worker thread is processing to its logs."""

from __future__ import annotations

from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware

from shared import logging as ingest_logging
from shared.queue import WEBHOOK_ACTOR


class LogContext(Middleware):
    """Every record logged while a message is processed carries its `job_id`, `tenant_id` and
    `message_id` (stage messages carry the job id as their only argument, the tenant in options).
    A webhook message's argument is a delivery id, not a job id: the webhook actor binds the job and
    tenant of the delivery row once it has read it."""

    def before_process_message(self, broker: Broker, message: Any) -> None:
        ingest_logging.clear()
        stage = message.actor_name != WEBHOOK_ACTOR
        ingest_logging.bind(
            job_id=str(message.args[0]) if stage and message.args else None,
            tenant_id=message.options.get("tenant_id"),
            message_id=message.message_id,
        )

    def after_process_message(
        self, broker: Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        ingest_logging.clear()

    after_skip_message = after_process_message
