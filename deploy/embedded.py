"""The embedded topology: gateway, worker threads and maintenance loop in ONE process.

The composition root of `make run`: the only module that imports both the gateway and the
worker. It uses the in-process broker unless INGEST_BROKER_URL names another one.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flask import Flask

from deploy.body_gate import upload_gate
from deploy.malloc_tuning import keep_freed_buffers
from deploy.waitress_server import make_server
from gateway.api.events import limit_streams_per_process
from gateway.app import create_app
from gateway.request_checks import MULTIPART_OVERHEAD_BYTES
from ingest_worker.broker import setup_broker, start_workers
from ingest_worker.maintenance import MaintenanceLoop, requeue_unfinished
from ingest_worker.resources import Resources, configure
from ingest_worker.warm_up import start_warm_up
from shared.db import migrate
from shared.logging import setup_logging
from shared.outbox import Relay
from shared.queue import Publisher
from shared.settings import Settings
from shared.startup_heap import freeze_startup_heap

logger = logging.getLogger("embedded")

# Waitress runs each request on one of its threads; an event stream holds one for its lifetime, so
# streams may take half of them and the rest always serve other requests (and /healthz). One tenant
# holds at most half of those (gateway/stream_slots.py), so busy tenants leave streams for others.
SERVER_THREADS = 16
STREAM_SLOTS = SERVER_THREADS // 2
# A connection costs a socket, not a thread, until its request is whole: many may wait (poll, not
# select, to pass 1024 descriptors), and one silent for a minute is closed.
SERVER_OPTIONS = {"connection_limit": 1000, "asyncore_use_poll": True, "channel_timeout": 60}


def gateway_server(app: Flask, settings: Settings, **options: Any) -> Any:
    """The gateway's waitress server (options: host, port): a large or chunked body is read only once
    the gateway's key and limit checks let it in, and only up to the caller's limit; waitress's own
    (for a body the gate could not judge) is the service's, not its 1 GiB default."""
    return make_server(
        app,
        upload_gate(app),
        threads=SERVER_THREADS,
        ident="pdf-ingest",
        max_request_body_size=settings.max_upload_bytes + MULTIPART_OVERHEAD_BYTES,
        **SERVER_OPTIONS,
        **options,
    )


def main() -> None:
    settings = Settings.from_env()
    setup_logging(settings)
    # Before any thread starts: an upload's buffers are reused, not faulted in again.
    keep_freed_buffers()
    migrate(settings.effective_database_url)
    broker = setup_broker(settings)
    resources = Resources(settings)
    configure(resources)
    # The first index job then finds the vector store and its collections open.
    start_warm_up(resources)
    import ingest_worker.actors  # noqa: F401  (declares the actors on the broker)

    if not settings.broker_url:
        requeued = requeue_unfinished(resources.db)
        if requeued:
            logger.info("re-queued %s unfinished job(s) from before the restart", requeued)
    publisher = Publisher(broker)
    relay = Relay.from_settings(resources.db.sessions, publisher, settings)
    loop = MaintenanceLoop(resources.db, relay, settings, lambda: resources.vectors)
    loop.run_once()
    loop.start_thread()
    workers = start_workers(
        broker, stage_threads=settings.worker_threads, webhook_threads=settings.webhook_worker_threads
    )
    app = create_app(
        settings, publisher=publisher, db=resources.db, vectors=resources.vectors, embedder=resources.embedder
    )
    logger.info(
        "serving on http://%s:%s (%s worker threads)", settings.host, settings.port, settings.worker_threads
    )
    freeze_startup_heap()
    try:
        limit_streams_per_process(app, STREAM_SLOTS)
        gateway_server(app, settings, host=settings.host, port=settings.port).run()
    finally:
        loop.stop()
        for worker in workers:
            worker.stop()


if __name__ == "__main__":
    main()
