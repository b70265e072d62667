"""Gunicorn settings for the gateway (`make gateway`); each can be overridden with GUNICORN_*."""

import os

bind = os.environ.get(
    "GUNICORN_BIND", f"{os.environ.get('INGEST_HOST', '127.0.0.1')}:{os.environ.get('INGEST_PORT', '8000')}"
)
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
worker_class = "gthread"
# Uploads stream to disk; a slow client may take a while on a large file.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "120"))
graceful_timeout = 30
keepalive = 5
accesslog = "-"
