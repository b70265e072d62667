"""The message contract: stages, queues and actor names, and how a job's pipeline is published.

A Dramatiq message is plain data (queue, actor name, args), so the gateway and the relay publish
by name from here without importing `ingest_worker`. Messages carry the job id only.
"""

from __future__ import annotations

import logging
from typing import Any

import dramatiq
import redis
from dramatiq.broker import Broker
from dramatiq.brokers.stub import StubBroker
from dramatiq.middleware import Middleware

from shared import pipeline
from shared.errors import BrokerUnavailableError
from shared.pipeline import QUEUE_INDEX, QUEUE_INGEST, QUEUE_OCR
from shared.settings import Settings

logger = logging.getLogger(__name__)

# The stage lists of the pipeline's declaration (shared/pipeline.py), by name.
PIPELINES: dict[str, tuple[str, ...]] = {
    kind: tuple(stage.name for stage in stages) for kind, stages in pipeline.PIPELINES.items()
}
STAGES: tuple[str, ...] = PIPELINES["ingest"]
DELETE_STAGES: tuple[str, ...] = PIPELINES["delete"]
METADATA_STAGES: tuple[str, ...] = PIPELINES["metadata"]

# Bulk work (reindex) and webhook deliveries get queues of their own, so each can get its own pool.
# A reindex job's index and finalize stages open the vector store, so they have a bulk queue of
# their own that the index pool serves (ARCHITECTURE §2).
QUEUE_BULK = "bulk"
QUEUE_BULK_INDEX = "bulk-index"
QUEUE_WEBHOOKS = "webhooks"
# A tenant's jobs beyond its first few unfinished ones travel in the backlog lane: the same stages
# on queues of their own, served by the same workers at a lower priority. Another tenant's upload
# then never waits behind a burst, and a lone burst still uses every worker.
BACKLOG_SUFFIX = "-backlog"
STAGE_QUEUES: tuple[str, ...] = (QUEUE_INGEST, QUEUE_OCR, QUEUE_INDEX)
QUEUES: tuple[str, ...] = (
    *STAGE_QUEUES,
    *(q + BACKLOG_SUFFIX for q in STAGE_QUEUES),
    QUEUE_BULK,
    QUEUE_BULK_INDEX,
    QUEUE_WEBHOOKS,
)
# The lanes a stage's message may travel in: interactive uploads, a tenant's backlog, reindex work.
LANES: tuple[str, ...] = ("interactive", "backlog", "bulk")

ACTOR_FOR_STAGE: dict[str, str] = {name: stage.actor for name, stage in pipeline.STAGE.items()}
QUEUE_FOR_STAGE: dict[str, str] = {name: stage.queue for name, stage in pipeline.STAGE.items()}
# Delivers one webhook (a `webhook_deliveries` row) on the webhooks queue.
WEBHOOK_ACTOR = "deliver_webhook"
# Stages that may run in parts, each part its own message on the stage's queue (a large scan's
# OCR in page ranges, so several workers read one scan at once).
PART_ACTOR_FOR_STAGE: dict[str, str] = {
    name: stage.part_actor for name, stage in pipeline.STAGE.items() if stage.part_actor
}
# The value a stage actor returns to stop the rest of the pipeline (job final or cancelled).
HALT = "halt"


def queue_for(stage: str, lane: str = "interactive") -> str:
    if lane == "bulk":
        return QUEUE_BULK_INDEX if QUEUE_FOR_STAGE[stage] == QUEUE_INDEX else QUEUE_BULK
    return QUEUE_FOR_STAGE[stage] + (BACKLOG_SUFFIX if lane == "backlog" else "")


def actor_for(stage: str, lane: str = "interactive") -> str:
    return ACTOR_FOR_STAGE[stage] + ("" if lane == "interactive" else f"_{lane}")


def lane_options(tenant_id: str | None, lane: str) -> dict[str, Any]:
    """The tenant id rides in a message's options for the per-tenant concurrency cap, which must not
    need a database read to decide. Bulk messages take no tenant slot (a tenant's reindex must not
    hold back its own uploads): the bulk lane has a cap of its own."""
    if lane == "bulk":
        return {"bulk": True}
    return {"tenant_id": tenant_id} if tenant_id else {}


def stage_message(
    job_id: str, stage: str, tenant_id: str | None = None, lane: str = "interactive"
) -> dramatiq.Message[Any]:
    """The message that runs `stage` of `job_id` in `lane`."""
    options: dict[str, Any] = {"pipe_ignore": True, **lane_options(tenant_id, lane)}
    return dramatiq.Message(
        queue_name=queue_for(stage, lane),
        actor_name=actor_for(stage, lane),
        args=(job_id,),
        kwargs={},
        options=options,
    )


def webhook_message(delivery_id: int) -> dramatiq.Message[Any]:
    """The message that attempts one webhook delivery."""
    return dramatiq.Message(
        queue_name=QUEUE_WEBHOOKS, actor_name=WEBHOOK_ACTOR, args=(delivery_id,), kwargs={}, options={}
    )


def part_actor_for(stage: str, lane: str = "interactive") -> str:
    return PART_ACTOR_FOR_STAGE[stage] + ("" if lane == "interactive" else f"_{lane}")


def part_message(
    job_id: str, stage: str, part: int, tenant_id: str | None = None, lane: str = "interactive"
) -> dramatiq.Message[Any]:
    """The message that runs one part of `stage` of `job_id` (not a pipeline: the last part to
    finish hands the job on through the outbox)."""
    return dramatiq.Message(
        queue_name=queue_for(stage, lane),
        actor_name=part_actor_for(stage, lane),
        args=(job_id, part),
        kwargs={},
        options=lane_options(tenant_id, lane),
    )


def stages_of(kind: str) -> tuple[str, ...]:
    """The stages a job of this kind runs (a reindex job runs the ingest stages)."""
    return PIPELINES.get(kind, STAGES)


def first_stage(kind: str) -> str:
    return stages_of(kind)[0]


def pipeline_of_stage(stage: str) -> tuple[str, ...]:
    """The pipeline that `stage` belongs to."""
    return next(p for p in PIPELINES.values() if stage in p)


def job_pipeline(
    job_id: str, from_stage: str, broker: Broker, tenant_id: str | None = None, lane: str = "interactive"
) -> dramatiq.pipeline:
    """The pipeline of the job's remaining stages, starting at `from_stage`."""
    stages = pipeline_of_stage(from_stage)
    remaining = stages[stages.index(from_stage) :]
    return dramatiq.pipeline([stage_message(job_id, s, tenant_id, lane) for s in remaining], broker=broker)


def make_broker(settings: Settings, middleware: list[Middleware] | None = None) -> Broker:
    """The broker the settings name, with every queue of the contract declared.

    An empty URL gives the in-process broker of the embedded topology; the database remains the
    source of truth, so what it holds in memory can always be republished from the outbox.
    """
    url = settings.broker_url
    broker: Broker
    if not url:
        broker = StubBroker(middleware=middleware)
    elif url.startswith(("redis://", "rediss://", "unix://")):
        from shared.redis_broker import PollingRedisBroker

        client = redis.Redis.from_url(
            url,
            socket_connect_timeout=settings.broker_timeout_s,
            socket_timeout=max(settings.broker_timeout_s, 10.0),
            health_check_interval=30,
        )
        broker = PollingRedisBroker(
            poll_max_ms=settings.redis_poll_max_ms,
            client=client,
            middleware=middleware,
            namespace=settings.broker_namespace,
            heartbeat_timeout=settings.redis_heartbeat_timeout_s * 1000,
            maintenance_chance=settings.redis_maintenance_chance,
        )
    elif url.startswith(("amqp://", "amqps://")):
        from shared.rabbitmq import HoppingRabbitmqBroker

        broker = HoppingRabbitmqBroker(
            url=url, middleware=middleware, max_hold_ms=settings.rabbitmq_max_hold_s * 1000
        )
    else:
        raise ValueError(f"unsupported INGEST_BROKER_URL scheme: {url.split(':', 1)[0]}")
    for queue in QUEUES:
        broker.declare_queue(queue)
    return broker


class Publisher:
    """Publishes a job's pipeline on a broker; broker faults become `BrokerUnavailableError`."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker

    def publish(
        self, job_id: str, from_stage: str, tenant_id: str | None = None, lane: str = "interactive"
    ) -> None:
        try:
            job_pipeline(job_id, from_stage, self.broker, tenant_id, lane).run()
        except (redis.RedisError, OSError, dramatiq.errors.BrokerConnectionError) as exc:
            raise BrokerUnavailableError() from exc

    def publish_webhook(self, delivery_id: int) -> None:
        try:
            self.broker.enqueue(webhook_message(delivery_id))
        except (redis.RedisError, OSError, dramatiq.errors.BrokerConnectionError) as exc:
            raise BrokerUnavailableError() from exc

    def publish_part(
        self, job_id: str, stage: str, part: int, tenant_id: str | None = None, lane: str = "interactive"
    ) -> None:
        try:
            self.broker.enqueue(part_message(job_id, stage, part, tenant_id, lane))
        except (redis.RedisError, OSError, dramatiq.errors.BrokerConnectionError) as exc:
            raise BrokerUnavailableError() from exc

    def check(self) -> None:
        """Raise `BrokerUnavailableError` when the broker cannot be reached (readiness)."""
        from dramatiq.brokers.rabbitmq import RabbitmqBroker

        if isinstance(self.broker, RabbitmqBroker):
            self._check_rabbitmq()
            return
        client = getattr(self.broker, "client", None)
        if client is None:
            return
        try:
            client.ping()
        except (redis.RedisError, OSError) as exc:
            raise BrokerUnavailableError() from exc

    def _check_rabbitmq(self) -> None:
        """A round trip on this thread's connection (opened if need be); a dead one is dropped so the
        next check, or publish, connects afresh."""
        import pika.exceptions

        broker: Any = self.broker
        try:
            broker.connection.process_data_events(time_limit=0)
        except (pika.exceptions.AMQPError, OSError) as exc:
            del broker.connection
            raise BrokerUnavailableError() from exc
