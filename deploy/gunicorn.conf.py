"""Gunicorn settings for the gateway, taken from the same `INGEST_*` settings as every other process."""

from shared.settings import Settings

_settings = Settings.from_env()

bind = f"{_settings.host}:{_settings.port}"
workers = _settings.gateway_workers
threads = _settings.gateway_threads
worker_class = "gthread"
# Uploads stream to disk; a slow client may take a while on a large file.
timeout = _settings.gateway_timeout_s
# On SIGTERM a worker finishes the requests it holds for this long before it is killed.
graceful_timeout = _settings.gateway_graceful_timeout_s
keepalive = 5
# Request line and headers are small in this API; the body limit is the app's (max_upload_mb).
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
# The gateway logs its own requests (JSON when INGEST_LOG_JSON is on); gunicorn's access log would
# be a second, plain-text line per request.
accesslog = None
errorlog = "-"
loglevel = _settings.log_level.lower()
