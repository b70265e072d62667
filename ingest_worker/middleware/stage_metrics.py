"""Times and counts every stage message for Prometheus, and serves a pool's metrics on its own port.

A `dramatiq` pool runs several worker processes; each writes its samples into the pool's
multiprocess folder, and one extra process forked by the CLI serves their sum on
`INGEST_METRICS_PORT` (deploy/topology.py gives each pool on a host its own port).
"""

from __future__ import annotations

import logging
import os
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from dramatiq.broker import Broker
from dramatiq.middleware import Middleware

from shared import metrics
from shared.queue import ACTOR_FOR_STAGE, actor_for
from shared.settings import Settings

logger = logging.getLogger(__name__)

# A port still held by the pool being replaced is free within seconds.
BIND_ATTEMPTS = 20
BIND_PAUSE_S = 0.5

STAGE_OF_ACTOR = {
    actor_for(stage, lane): stage for stage in ACTOR_FOR_STAGE for lane in ("interactive", "backlog")
}


class StageMetrics(Middleware):
    """Observes each stage message's duration and outcome (ok, error, skipped)."""

    def __init__(self, metrics_port: int = 0) -> None:
        self.metrics_port = metrics_port
        self._started: dict[str, float] = {}

    @property
    def forks(self) -> list[Any]:
        # The CLI forks this function once per pool when a port is configured.
        return [serve] if self.metrics_port else []

    def before_process_message(self, broker: Broker, message: Any) -> None:
        self._started[message.message_id] = time.monotonic()

    def _observe(self, message: Any, outcome: str) -> None:
        started = self._started.pop(message.message_id, None)
        stage = STAGE_OF_ACTOR.get(message.actor_name)
        if stage is None or started is None:
            return
        elapsed_s = time.monotonic() - started
        metrics.STAGE_DURATION.labels(stage, outcome).observe(elapsed_s)
        metrics.STAGE_MESSAGES.labels(stage, outcome).inc()
        # One line per stage message; LogContext has bound its ids.
        logger.info("stage %s: %s in %.2fs", stage, outcome, elapsed_s)

    def after_process_message(
        self, broker: Broker, message: Any, *, result: Any = None, exception: BaseException | None = None
    ) -> None:
        self._observe(message, "ok" if exception is None else "error")

    def after_skip_message(self, broker: Broker, message: Any) -> None:
        self._observe(message, "skipped")

    def after_worker_shutdown(self, broker: Broker, worker: Any) -> None:
        metrics.mark_process_dead(os.getpid())


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.split("?")[0] not in ("/metrics", "/"):
            self.send_error(404)
            return
        body = metrics.exposition()
        self.send_response(200)
        self.send_header("Content-Type", metrics.CONTENT_TYPE)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the signature http.server calls)
        logger.debug(format, *args)


def _bound_server(host: str, port: int, attempts: int = BIND_ATTEMPTS) -> ThreadingHTTPServer:
    """The exposition server on `host:port`, waiting a little for a port still held (a pool that
    is being replaced); the pool's log says so if the port stays taken."""
    for _ in range(attempts - 1):
        try:
            return ThreadingHTTPServer((host, port), _Handler)
        except OSError:
            time.sleep(BIND_PAUSE_S)
    try:
        return ThreadingHTTPServer((host, port), _Handler)
    except OSError:
        logger.exception("worker metrics cannot listen on %s:%s", host, port)
        raise


def serve() -> int:
    """The pool's exposition server (a process the `dramatiq` CLI forks): GET /metrics."""
    settings = Settings.from_env()
    server = _bound_server(settings.host, settings.metrics_port)
    logger.info("worker metrics on http://%s:%s/metrics", settings.host, settings.metrics_port)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
