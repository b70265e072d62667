"""Records when a job was handed on to its next stage, once the broker has taken the message.

Dramatiq enqueues a pipeline's next message after the current stage returns, and if that enqueue
fails the message is acked all the same: the job would sit between stages for ever. With the time
of every successful hand-off recorded, the sweeper can tell a lost hand-off (a finished stage and
no hand-off after it) from a job that simply waits in a long queue.
"""

from __future__ import annotations

import logging
from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware

from ingest_worker.resources import Resources
from shared.job_hand_offs import record_hand_off
from shared.job_waiting import mark_waiting
from shared.queue import ACTOR_FOR_STAGE, LANES, PART_ACTOR_FOR_STAGE, actor_for, part_actor_for

logger = logging.getLogger(__name__)

STAGE_ACTORS = frozenset(
    [actor_for(stage, lane) for stage in ACTOR_FOR_STAGE for lane in LANES]
    + [part_actor_for(stage, lane) for stage in PART_ACTOR_FOR_STAGE for lane in LANES]
)


class HandOffs(Middleware):
    """After each enqueue of a stage message for a job, stamp the job's `handed_on_at`."""

    def __init__(self, resources: Any) -> None:
        # A callable returning the process's Resources, built lazily after fork.
        self.resources = resources

    def after_enqueue(self, broker: Broker, message: Any, delay: int | None) -> None:
        if message.actor_name not in STAGE_ACTORS or not message.args:
            return
        try:
            res: Resources = self.resources()
            with res.db.transaction() as session:
                record_hand_off(session, [message.args[0]])
                if message.options.get("waiting"):
                    mark_waiting(session, [message.args[0]], message.options["waiting"])
        except Exception:
            # The hand-off itself succeeded; without the stamp the sweeper resumes the job later,
            # which the idempotent stages absorb.
            logger.warning("could not record the hand-off of %s", message, exc_info=True)
