"""Logging set-up for every entry point: plain text, or JSON lines when INGEST_LOG_JSON is on."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime

from shared.settings import Settings

CONTEXT_FIELDS = ("job_id", "tenant_id", "message_id")


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


def setup_logging(settings: Settings) -> None:
    handler = logging.StreamHandler(sys.stderr)
    if settings.log_json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level.upper())
