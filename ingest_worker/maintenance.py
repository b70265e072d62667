"""The maintenance loop: the one home of periodic duties (resuming lost jobs, flipping reindexes,
the outbox relay's sweep of stage messages and webhook deliveries).

A thread of the embedded process; its own process in production (`python -m
ingest_worker.maintenance`). Safe to run more than once: outbox rows are claimed by
compare-and-set.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from functools import cache

from sqlalchemy import select

from ingest_worker.reindex.driver import advance_reindexes
from ingest_worker.sweeper import BrokerEpoch, sweep
from shared import job_stages, outbox
from shared.db import Database
from shared.jobs import ACTIVE
from shared.models import Job, OutboxMessage
from shared.outbox import Relay
from shared.queue import Publisher, make_broker
from shared.settings import Settings
from shared.startup_heap import freeze_startup_heap
from shared.storage import LocalStorage
from shared.vectorstores import VectorStore, open_vector_store

logger = logging.getLogger(__name__)

# Local storage is searched this often for a stopped process's unfinished upload files, and those
# older than PARTIALS_OLDER_THAN_S (far longer than any upload's request) are removed. The first
# search waits PARTIALS_FIRST_S, so it is not part of a start (it walks the whole storage folder).
PARTIALS_EVERY_S = 3600.0
PARTIALS_FIRST_S = 60.0
PARTIALS_OLDER_THAN_S = 6 * 3600.0


class MaintenanceLoop:
    """Runs the periodic duties every `interval_s` seconds until stopped.

    `vectors` gives the vector store for deleting the points a reindex left behind; without one
    (a local Qdrant folder owned by the index worker) that deletion waits for a loop that has one.
    """

    def __init__(
        self,
        db: Database,
        relay: Relay,
        settings: Settings,
        vectors: Callable[[], VectorStore] | None = None,
    ) -> None:
        self.db = db
        self.vectors = vectors
        self.relay = relay
        self.settings = settings
        self.interval_s = settings.maintenance_interval_s
        self.epoch = BrokerEpoch(relay.publisher.broker, settings.broker_namespace)
        self.stopped = threading.Event()
        local = settings.storage_backend == "local"
        self.local_storage = LocalStorage(settings.effective_storage_dir) if local else None
        self._partials_due = time.monotonic() + PARTIALS_FIRST_S

    def run_once(self) -> None:
        broker_lost = self.epoch.lost()
        if broker_lost:
            logger.error("the broker lost its messages; publishing every waiting job again")
        resumed = sweep(self.db, self.settings, broker_lost=broker_lost)
        if resumed:
            logger.warning("sweeper resumed %s job(s)", resumed)
        advance_reindexes(self.db, self.vectors, window=self.settings.reindex_window)
        published = self.relay.publish_pending()
        if published:
            logger.info("relay published %s outbox row(s)", published)
        self._sweep_partials()

    def _sweep_partials(self) -> None:
        """Now and then, the temporary files of local uploads whose process died mid-write."""
        if self.local_storage is None or time.monotonic() < self._partials_due:
            return
        self._partials_due = time.monotonic() + PARTIALS_EVERY_S
        removed = self.local_storage.sweep_partials(PARTIALS_OLDER_THAN_S)
        if removed:
            logger.warning("removed %s unfinished upload file(s) left by a stopped process", removed)

    def run_forever(self) -> None:
        while not self.stopped.is_set():
            try:
                self.run_once()
            except Exception:
                logger.exception("maintenance pass failed; trying again next interval")
            self.stopped.wait(self.interval_s)

    def start_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.run_forever, name="maintenance", daemon=True)
        thread.start()
        return thread

    def stop(self) -> None:
        self.stopped.set()


def requeue_unfinished(db: Database) -> int:
    """Queue every unfinished job again from its first stage not done.

    Only for the embedded topology at start-up: its in-process broker lost every message when
    the process stopped, while the database still knows which jobs were under way.
    """
    count = 0
    with db.transaction() as session:
        pending = set(
            session.scalars(select(OutboxMessage.job_id).where(OutboxMessage.published_at.is_(None)))
        )
        for job in session.scalars(select(Job).where(Job.status.in_([s.value for s in ACTIVE]))):
            if job.id in pending:
                continue
            # Whatever lease it held belonged to the process that stopped.
            job_stages.mark_recovered(session, job.id, expected_updated_at=job.updated_at)
            outbox.add_message(session, job.id, job_stages.resume_stage(session, job))
            count += 1
    return count


def main() -> None:
    from shared.logging import setup_logging

    settings = Settings.from_env()
    setup_logging(settings)
    db = Database.from_settings(settings)
    relay = Relay.from_settings(db.sessions, Publisher(make_broker(settings)), settings)
    # What this loop's own passes write (resumed jobs, reindex jobs) leaves at once.
    relay.attach(db.sessions)
    vectors = cache(lambda: open_vector_store(settings)) if settings.qdrant_url else None
    loop = MaintenanceLoop(db, relay, settings, vectors)
    signal.signal(signal.SIGTERM, lambda *_: loop.stop())
    signal.signal(signal.SIGINT, lambda *_: loop.stop())
    logger.info("maintenance loop running every %ss", settings.maintenance_interval_s)
    freeze_startup_heap()
    loop.run_forever()


if __name__ == "__main__":
    main()
