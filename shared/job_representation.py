"""The job's representation, defined once: the body the API answers with, every webhook and every
server-sent event carries as its `data`.

`job_fields` takes what the body is made of from a job (a `Job` row or a transition's snapshot) in a
JSON-safe form: each stored event keeps it, so an event is rendered later exactly as the job looked
when it changed. `job_body` shapes the body from a job or from such stored fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

COUNTERS = ("pages", "ocr_pages", "ocr_pages_dropped", "chunks", "points")
TIMES = ("created_at", "updated_at", "started_at", "finished_at")
# The job's columns that the body is made of (besides its id), as events store them.
FIELDS = (
    "tenant_id",
    "document_id",
    "kind",
    "status",
    "stage",
    "progress",
    "waiting",
    *COUNTERS,
    "attempts",
    "error_code",
    "error_message",
    "seq",
    *TIMES,
)


def iso_time(value: datetime | str | None) -> str | None:
    """A stored UTC time as the API writes it (ISO 8601 with a `Z`); a string is already one."""
    if value is None or isinstance(value, str):
        return value
    return value.isoformat() + "Z"


def job_fields(job: Any) -> dict[str, Any]:
    """The job's fields the body is made of, JSON-safe, from a `Job` or a mapping of its columns."""
    get = job.get if isinstance(job, Mapping) else lambda name: getattr(job, name)
    fields = {"job_id": get("id")}
    for name in FIELDS:
        fields[name] = iso_time(get(name)) if name in TIMES else get(name)
    return fields


def job_body(job: Any) -> dict[str, Any]:
    """The business state of a job (never the broker's task state), from a `Job`, a mapping of its
    columns, or the fields an event stored (events stored before a field existed lack it)."""
    fields = job if isinstance(job, Mapping) and "job_id" in job else job_fields(job)
    error = fields.get("error_code")
    return {
        "job_id": fields["job_id"],
        "document_id": fields["document_id"],
        "kind": fields["kind"],
        "status": fields["status"],
        "stage": fields["stage"],
        "progress": fields["progress"],
        "waiting": fields.get("waiting"),
        "counters": {name: fields.get(name, 0) for name in COUNTERS},
        "attempts": fields["attempts"],
        "error": {"code": error, "message": fields.get("error_message")} if error else None,
        "seq": fields["seq"],
        **{name: fields.get(name) for name in TIMES},
    }
