"""Settings → broker with the worker's middleware; set as Dramatiq's global broker before actors import."""

from __future__ import annotations

import dramatiq
from dramatiq.broker import Broker
from dramatiq.middleware import (
    Callbacks,
    CurrentMessage,
    Pipelines,
    Retries,
    ShutdownNotifications,
    TimeLimit,
)

from ingest_worker.middleware.hand_offs import HandOffs
from ingest_worker.middleware.pipeline_halt import PipelineHalt
from ingest_worker.middleware.tenant_concurrency import LocalSlots, RedisSlots, TenantConcurrency
from ingest_worker.resources import current
from shared.queue import make_broker
from shared.settings import Settings

_broker: Broker | None = None
_settings: Settings | None = None


def worker_middleware() -> list[dramatiq.Middleware]:
    """The worker's middleware, in order. `after_*` hooks run in reverse, so PipelineHalt, placed
    after Pipelines, sees a stage's result before Pipelines hands the job on."""
    return [
        TimeLimit(),
        ShutdownNotifications(),
        Callbacks(),
        CurrentMessage(),
        Pipelines(),
        Retries(),
        PipelineHalt(),
    ]


def tenant_concurrency(broker: Broker, settings: Settings) -> TenantConcurrency:
    """The per-tenant cap, sharing its slots through Redis when Redis is the broker."""
    client = getattr(broker, "client", None)
    slots = RedisSlots(client, settings.broker_namespace) if client is not None else LocalSlots()
    return TenantConcurrency(
        slots,
        cap=settings.tenant_max_concurrency,
        # Renewed while its message runs, so a killed worker's slot comes back as its job's lease does.
        slot_ttl_ms=settings.lease_s * 1000,
        requeue_delay_ms=(200, 1000),
    )


def build_broker(settings: Settings) -> Broker:
    """The broker the settings name, with the worker's middleware."""
    broker = make_broker(settings, middleware=worker_middleware())
    broker.add_middleware(tenant_concurrency(broker, settings))
    broker.add_middleware(HandOffs(lambda: current(settings)))
    return broker


def setup_broker(settings: Settings) -> Broker:
    """Build the broker the settings name and make it Dramatiq's global broker."""
    global _broker, _settings
    settings.export_child_environment()
    _broker = build_broker(settings)
    _settings = settings
    dramatiq.set_broker(_broker)
    return _broker


def get_broker() -> Broker:
    """The process's broker, built from the environment on first use (the `dramatiq` CLI path)."""
    return _broker if _broker is not None else setup_broker(Settings.from_env())


def get_settings() -> Settings:
    get_broker()
    assert _settings is not None
    return _settings


def start_worker(broker: Broker, *, threads: int, worker_timeout_ms: int = 100) -> dramatiq.Worker:
    """Worker threads in this process (the embedded topology, tests).

    The `dramatiq` command announces the process boot to the middleware; an in-process worker must
    do it itself, once per broker, or TimeLimit never starts its watchdog and no limit applies.
    """
    if not getattr(broker, "_ingest_booted", False):
        broker.emit_after("process_boot")
        broker._ingest_booted = True  # type: ignore[attr-defined]
    worker = dramatiq.Worker(broker, worker_threads=threads, worker_timeout=worker_timeout_ms)
    worker.start()
    return worker
