"""Deletes the points a flipped reindex left behind from inside the index pool, when only it may
open the local Qdrant folder (the maintenance process then cannot)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware

from ingest_worker.reindex.driver import purge_old_versions
from ingest_worker.resources import Resources
from shared.queue import QUEUE_BULK_INDEX

logger = logging.getLogger(__name__)


class VersionPurge(Middleware):
    """In a worker that serves the bulk index queue of a local Qdrant folder, purge every interval."""

    def __init__(self, resources: Callable[[], Resources], *, interval_s: float) -> None:
        self.resources = resources
        self.interval_s = interval_s
        self.stopped = threading.Event()

    def after_worker_boot(self, broker: Broker, worker: Any) -> None:
        queues = worker.consumer_whitelist
        if not self.resources().settings.local_qdrant or not queues or QUEUE_BULK_INDEX not in queues:
            return
        threading.Thread(target=self._run, name="version-purge", daemon=True).start()

    def before_worker_shutdown(self, broker: Broker, worker: Any) -> None:
        self.stopped.set()

    def _run(self) -> None:
        while not self.stopped.wait(self.interval_s):
            try:
                res = self.resources()
                purge_old_versions(res.db, res.vectors)
            except Exception:
                logger.warning("could not delete the old index versions' points; next time", exc_info=True)
