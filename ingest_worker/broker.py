"""Settings → broker with the worker's middleware; set as Dramatiq's global broker before actors import."""

from __future__ import annotations

import logging

import dramatiq
import redis
from dramatiq.broker import Broker
from dramatiq.middleware import (
    Callbacks,
    CurrentMessage,
    Pipelines,
    Retries,
    ShutdownNotifications,
    TimeLimit,
)

from ingest_worker.middleware.delay_hops import DelayHops
from ingest_worker.middleware.hand_offs import HandOffs
from ingest_worker.middleware.log_context import LogContext
from ingest_worker.middleware.outbox_relay import OutboxRelay
from ingest_worker.middleware.pipeline_halt import PipelineHalt
from ingest_worker.middleware.stage_metrics import StageMetrics
from ingest_worker.middleware.startup_heap import FrozenStartupHeap
from ingest_worker.middleware.tenant_concurrency import LocalSlots, RedisSlots, SlotStore, TenantConcurrency
from ingest_worker.ocr.language_check import check_ocr_languages
from ingest_worker.reindex.version_purge import VersionPurge
from ingest_worker.resources import current
from ingest_worker.warm_up import VectorWarmUp
from shared.logging import setup_logging
from shared.queue import QUEUE_WEBHOOKS, make_broker
from shared.settings import Settings

_broker: Broker | None = None
_settings: Settings | None = None


def worker_middleware(metrics_port: int = 0) -> list[dramatiq.Middleware]:
    """The worker's middleware, in order. `after_*` hooks run in reverse, so PipelineHalt, placed
    after Pipelines, sees a stage's result before Pipelines hands the job on; LogContext comes
    first so the ids are bound before any other hook logs, and cleared after the last."""
    return [
        LogContext(),
        StageMetrics(metrics_port),
        TimeLimit(),
        ShutdownNotifications(),
        Callbacks(),
        CurrentMessage(),
        Pipelines(),
        Retries(),
        PipelineHalt(),
    ]


def slot_store(broker: Broker, settings: Settings) -> SlotStore:
    """Where the per-tenant cap keeps its slots: the broker's Redis, the Redis of
    `tenant_slots_redis_url` beside another broker (RabbitMQ), or this process's memory for the
    in-process broker. Shared slots are what make the cap hold across processes and hosts."""
    client = getattr(broker, "client", None)
    if settings.tenant_slots_redis_url:
        client = redis.Redis.from_url(
            settings.tenant_slots_redis_url,
            socket_connect_timeout=settings.broker_timeout_s,
            socket_timeout=max(settings.broker_timeout_s, 10.0),
            health_check_interval=30,
        )
    if client is not None:
        return RedisSlots(client, settings.broker_namespace)
    if settings.broker_url and (settings.tenant_max_concurrency > 0 or settings.bulk_max_concurrency > 0):
        # Per-process slots would let each worker process run `cap` messages of a tenant.
        raise ValueError(
            "the per-tenant cap needs INGEST_TENANT_SLOTS_REDIS_URL with a broker other than Redis "
            "(or INGEST_TENANT_MAX_CONCURRENCY=0 and INGEST_BULK_MAX_CONCURRENCY=0)"
        )
    return LocalSlots()


def tenant_concurrency(broker: Broker, settings: Settings) -> TenantConcurrency:
    """The per-tenant cap, its slots shared by every worker process (see `slot_store`)."""
    slots = slot_store(broker, settings)
    return TenantConcurrency(
        slots,
        cap=settings.tenant_max_concurrency,
        bulk_cap=settings.bulk_max_concurrency,
        # Renewed while its message runs, so a killed worker's slot comes back as its job's lease does.
        slot_ttl_ms=settings.lease_s * 1000,
        requeue_delay_ms=(200, 1000),
    )


def build_broker(settings: Settings, *, metrics_port: int = 0) -> Broker:
    """The broker the settings name, with the worker's middleware."""
    broker = make_broker(settings, middleware=worker_middleware(metrics_port))
    # Before the cap: a message not yet due goes back without taking its tenant's slot.
    broker.add_middleware(DelayHops())
    broker.add_middleware(tenant_concurrency(broker, settings))
    broker.add_middleware(HandOffs(lambda: current(settings)))
    broker.add_middleware(OutboxRelay(lambda: current(settings)))
    purge_every_s = 5 * settings.maintenance_interval_s
    broker.add_middleware(VersionPurge(lambda: current(settings), interval_s=purge_every_s))
    return broker


def setup_broker(settings: Settings, *, metrics_port: int = 0) -> Broker:
    """Build the broker the settings name and make it Dramatiq's global broker, once tesseract is
    found to have every OCR language offered (raises OcrLanguagesMissingError naming those it lacks)."""
    global _broker, _settings
    settings.export_child_environment()
    # A worker without the languages the gateway accepts would fail those uploads one by one.
    check_ocr_languages(settings)
    _broker = build_broker(settings, metrics_port=metrics_port)
    _settings = settings
    dramatiq.set_broker(_broker)
    return _broker


class _SecondWorkerFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "same type twice" not in record.getMessage()


_SECOND_WORKER = _SecondWorkerFilter()


def start_workers(
    broker: Broker, *, stage_threads: int, webhook_threads: int, worker_timeout_ms: int = 100
) -> list[dramatiq.Worker]:
    """The embedded process's workers: stage threads, and webhook threads of their own so a slow
    receiver never holds a stage thread (and a busy pipeline never delays a webhook)."""
    stage_queues = set(broker.get_declared_queues()) - {QUEUE_WEBHOOKS}
    stages = start_worker(
        broker, threads=stage_threads, worker_timeout_ms=worker_timeout_ms, queues=stage_queues
    )
    # Each worker registers a middleware of the same type; for two workers on one broker that is
    # expected, so Dramatiq's warning about it is kept out of the log.
    broker.logger.addFilter(_SECOND_WORKER)
    try:
        webhooks = start_worker(
            broker, threads=webhook_threads, worker_timeout_ms=worker_timeout_ms, queues={QUEUE_WEBHOOKS}
        )
    finally:
        broker.logger.removeFilter(_SECOND_WORKER)
    return [stages, webhooks]


def get_broker() -> Broker:
    """The process's broker, built from the environment on first use: the `dramatiq` CLI path,
    which also sets up logging (the pools run with --skip-logging) and the metrics exposition."""
    if _broker is not None:
        return _broker
    settings = Settings.from_env()
    setup_logging(settings)
    if settings.worker_prefetch:
        # The CLI builds its Worker after importing the actors, and Worker reads this module
        # constant (Dramatiq's `dramatiq_queue_prefetch` variable) when it is built.
        dramatiq.worker.QUEUE_PREFETCH = settings.worker_prefetch  # type: ignore[attr-defined]
    broker = setup_broker(settings, metrics_port=settings.metrics_port)
    # A pool's worker process opens the vector store as it boots, not on its first index job.
    broker.add_middleware(VectorWarmUp(lambda: current(settings)))
    broker.add_middleware(FrozenStartupHeap())
    return broker


def get_settings() -> Settings:
    get_broker()
    assert _settings is not None
    return _settings


def start_worker(
    broker: Broker, *, threads: int, worker_timeout_ms: int = 100, queues: set[str] | None = None
) -> dramatiq.Worker:
    """Worker threads in this process (the embedded topology, tests), on `queues` or on all of them.

    The `dramatiq` command announces the process boot to the middleware; an in-process worker must
    do it itself, once per broker, or TimeLimit never starts its watchdog and no limit applies.
    """
    if not getattr(broker, "_ingest_booted", False):
        broker.emit_after("process_boot")
        broker._ingest_booted = True  # type: ignore[attr-defined]
    worker = dramatiq.Worker(broker, queues=queues, worker_threads=threads, worker_timeout=worker_timeout_ms)
    worker.start()
    return worker
