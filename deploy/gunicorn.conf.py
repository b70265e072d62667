"""Gunicorn settings for the gateway, taken from the same `INGEST_*` settings as every other process."""

import time
from typing import Any

from deploy import lingering
from deploy.malloc_tuning import keep_freed_buffers
from shared.settings import Settings

_settings = Settings.from_env()
# In the master, so every worker it forks inherits it: an upload's buffers are reused from one
# request to the next instead of being faulted in again (deploy/malloc_tuning.py).
keep_freed_buffers()

bind = f"{_settings.host}:{_settings.port}"
workers = _settings.gateway_workers
# A greenlet per connection, not a thread: an open event stream or a slow client costs a few KB, and
# a client that never finishes its request line and headers is dropped after `keepalive` seconds (the
# gevent worker reads each request's head under that timeout; gthread has none). psycopg2 waits
# cooperatively (post_fork below); the rest of the gateway's I/O is plain sockets, which gevent
# patches in each worker before the app loads.
worker_class = "gevent"
worker_connections = 1000
# Used only if the worker class is switched back to gthread (GUNICORN_CMD_ARGS="-k gthread").
threads = _settings.gateway_threads
# Uploads stream to disk; a slow client may take a while on a large file.
timeout = _settings.gateway_timeout_s
# On SIGTERM a worker finishes the requests it holds for this long before it is killed.
graceful_timeout = _settings.gateway_graceful_timeout_s
keepalive = 5
# Gunicorn's control socket defaults to one path per user, which two gateways on a host would share.
control_socket_disable = True
# Request line and headers are small in this API; the body limit is the app's (max_upload_mb).
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
# The gateway logs its own requests (JSON when INGEST_LOG_JSON is on); gunicorn's access log would
# be a second, plain-text line per request.
accesslog = None
errorlog = "-"
loglevel = _settings.log_level.lower()
if _settings.log_json:
    # Gunicorn's own lines (start, worker boots and deaths) as the same JSON objects as the app's.
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "shared.logging.JsonFormatter"}},
        "handlers": {
            "console": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
        },
        "loggers": {
            "gunicorn.error": {"handlers": ["console"], "level": loglevel.upper(), "propagate": False}
        },
    }


def post_fork(server: object, worker: object) -> None:
    """psycopg2 waits for the database through gevent, so a query yields to the other greenlets."""
    from psycogreen.gevent import patch_psycopg

    from gateway import hot_locks

    patch_psycopg()
    # Except while an upload holds its tenant's counters: then it waits in place (gateway/hot_locks.py).
    hot_locks.install(hot_locks.blocking_database_waits)


def post_worker_init(worker: object) -> None:
    """Once the app is loaded (after gevent patched the worker): an upload's message is published by
    a greenlet of its own once its rows commit, so the `202` does not wait for the broker. The
    committed outbox row is the hand-off: the sweep publishes it if this worker dies first."""
    import gevent

    from shared import outbox
    from shared.startup_heap import freeze_startup_heap

    outbox.publish_in_background(gevent.spawn)
    # The app and its libraries live as long as the worker: full collections skip them.
    freeze_startup_heap()


def child_exit(server: object, worker: object) -> None:
    """Drop a dead worker's live gauges from the Prometheus multiprocess folder."""
    from shared.metrics import mark_process_dead

    mark_process_dead(worker.pid)  # type: ignore[attr-defined]


# A request body over this size that the gateway refused unread is not read afterwards either.
_UNREAD_BODY_BYTES = 64 * 1024


def post_request(worker: object, req: object, environ: dict[str, Any], resp: object) -> None:
    """Close the connection after an error answer to a request with a large body, instead of reading
    (to discard it, for keep-alive) whatever the client still sends: the refused body stays unread.
    The close lingers first (deploy/lingering.py), in this request's greenlet."""
    large = int(environ.get("CONTENT_LENGTH") or 0) > _UNREAD_BODY_BYTES
    chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
    if not (large or chunked) or getattr(resp, "status_code", 200) < 400:
        return
    req.must_close = True  # type: ignore[attr-defined]
    sock = environ.get("gunicorn.socket")
    if sock is not None:
        lingering.half_close(sock)
        deadline = time.monotonic() + lingering.LINGER_S
        while time.monotonic() < deadline and not lingering.client_closed(sock):
            time.sleep(0.05)  # gevent's sleep in a gevent worker
