"""Logging set-up for every entry point: plain text, or JSON lines when INGEST_LOG_JSON is on."""

from __future__ import annotations

import contextlib
import json
import logging
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from datetime import UTC, datetime

from shared.settings import Settings

CONTEXT_FIELDS = ("job_id", "tenant_id", "message_id")
# The ids of the work this thread (or request) is doing, set by the worker's LogContext middleware
# and the gateway's request hooks, and stamped on every record logged meanwhile.
_context: ContextVar[dict[str, str]] = ContextVar("ingest_log_context", default={})  # noqa: B039


def bind(**ids: str | None) -> None:
    """Add ids (job_id, tenant_id, message_id) to this context's log records; None values are ignored."""
    _context.set({**_context.get(), **{k: v for k, v in ids.items() if v is not None}})


def clear() -> None:
    """Forget every id bound in this context."""
    _context.set({})


@contextlib.contextmanager
def bound(**ids: str | None) -> Iterator[None]:
    """Bind ids for the duration of a block, restoring the previous ones afterwards."""
    token = _context.set({**_context.get(), **{k: v for k, v in ids.items() if v is not None}})
    try:
        yield
    finally:
        _context.reset(token)


class ContextFilter(logging.Filter):
    """Copies the bound ids onto each record, unless the call passed its own through `extra`."""

    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _context.get().items():
            if getattr(record, name, None) is None:
                setattr(record, name, value)
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line, with the job, tenant and message ids when a record carries them."""

    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in CONTEXT_FIELDS:
            value = getattr(record, name, None)
            if value is not None:
                entry[name] = value
        if record.exc_info:
            entry["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(entry)


class TextFormatter(logging.Formatter):
    """A plain line, followed by the bound ids when there are any."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        ids = " ".join(f"{n}={getattr(record, n)}" for n in CONTEXT_FIELDS if getattr(record, n, None))
        return f"{line} [{ids}]" if ids else line


def setup_logging(settings: Settings) -> None:
    """Send every record to stderr, as JSON lines or plain text (INGEST_LOG_JSON), with the bound ids."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if settings.log_json else TextFormatter())
    handler.addFilter(ContextFilter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
