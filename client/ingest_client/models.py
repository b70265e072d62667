"""What the client hands back besides plain JSON: an upload's outcome per file and a job's progress."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ingest_client.errors import ApiError

# A job in one of these states changes no more (docs/api.md, Jobs).
TERMINAL = frozenset({"completed", "failed", "dead_lettered", "cancelled"})


@dataclass(frozen=True)
class UploadResult:
    """One file's answer: its job (new, or the existing one for a duplicate) or the error it met."""

    filename: str
    idempotency_key: str
    job_id: str | None = None
    document_id: str | None = None
    status: str | None = None
    duplicate: bool = False
    error: ApiError | None = None

    @property
    def ok(self) -> bool:
        """True when the service accepted the file (or already held it)."""
        return self.error is None


@dataclass(frozen=True)
class JobUpdate:
    """A job's state at one moment: from an event (`event` is its type) or from polling (`event` None)."""

    job: dict[str, Any] = field(default_factory=dict)
    event: str | None = None

    @property
    def job_id(self) -> str:
        return str(self.job.get("job_id", ""))

    @property
    def status(self) -> str:
        return str(self.job.get("status", ""))

    @property
    def stage(self) -> str | None:
        stage = self.job.get("stage")
        return None if stage is None else str(stage)

    @property
    def progress(self) -> int:
        return int(self.job.get("progress") or 0)

    @property
    def seq(self) -> int:
        return int(self.job.get("seq") or 0)

    @property
    def terminal(self) -> bool:
        """True once the job is completed, failed, dead-lettered or cancelled."""
        return self.status in TERMINAL

    @property
    def error(self) -> dict[str, Any] | None:
        error = self.job.get("error")
        return error if isinstance(error, dict) else None
