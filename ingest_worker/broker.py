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

from ingest_worker.middleware.pipeline_halt import PipelineHalt
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


def setup_broker(settings: Settings) -> Broker:
    """Build the broker the settings name and make it Dramatiq's global broker."""
    global _broker, _settings
    settings.export_child_environment()
    _broker = make_broker(settings, middleware=worker_middleware())
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
