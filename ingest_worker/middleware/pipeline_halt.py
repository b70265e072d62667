"""Stops the rest of a job's pipeline when a stage actor returns HALT (job final or cancelled)."""

from __future__ import annotations

from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware

from shared.queue import HALT


class PipelineHalt(Middleware):
    """Drops `pipe_target` from a message whose actor returned HALT, so Pipelines enqueues nothing.

    Must come after `Pipelines` in the middleware list: `after_process_message` hooks run in
    reverse order, so this one runs first.
    """

    def after_process_message(
        self, broker: Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        if exception is None and result == HALT:
            message.options.pop("pipe_target", None)
