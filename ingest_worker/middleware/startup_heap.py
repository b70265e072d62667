"""A worker process freezes its start-up heap once it has booted (shared/startup_heap.py)."""

from __future__ import annotations

from typing import Any

from dramatiq import Broker, Middleware

from shared.startup_heap import freeze_startup_heap


class FrozenStartupHeap(Middleware):
    """After the worker booted (actors imported, broker connected): `freeze_startup_heap`."""

    def after_worker_boot(self, broker: Broker, worker: Any) -> None:
        freeze_startup_heap()
