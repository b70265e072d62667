"""How jobs look on the wire."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.models import Job


def _time(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat() + "Z"


def job_body(job: Job) -> dict[str, Any]:
    """The business state of a job (never the broker's task state)."""
    return {
        "job_id": job.id,
        "document_id": job.document_id,
        "kind": job.kind,
        "status": job.status,
        "stage": job.stage,
        "progress": job.progress,
        "counters": {
            "pages": job.pages,
            "ocr_pages": job.ocr_pages,
            "chunks": job.chunks,
            "points": job.points,
        },
        "attempts": job.attempts,
        "error": {"code": job.error_code, "message": job.error_message} if job.error_code else None,
        "seq": job.seq,
        "created_at": _time(job.created_at),
        "updated_at": _time(job.updated_at),
        "started_at": _time(job.started_at),
        "finished_at": _time(job.finished_at),
    }
