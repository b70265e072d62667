"""A long stage's progress as the worker reports it: units counted as they are done, written to the
job at most every `progress_interval_s` (each write a `job.progress` event), so a long OCR or embed
stage shows it is moving without a transaction per page or batch."""

from __future__ import annotations

import time

from ingest_worker import job_progress
from ingest_worker.resources import Resources


class StageProgress:
    """Counts the units of one stage of one job that this worker does (one page range's pages, or a
    whole stage's chunks); the stage's total is set once, by `begin`, by whoever plans the stage."""

    def __init__(self, res: Resources, job_id: str, stage: str) -> None:
        self._res = res
        self._job_id = job_id
        self._stage = stage
        self._pending = 0
        self._written_at = time.monotonic()

    def begin(self, total: int) -> None:
        """The stage has `total` units to do."""
        with self._res.db.transaction() as session:
            job_progress.begin_units(session, self._job_id, self._stage, total)
        self._written_at = time.monotonic()

    def add(self, done: int) -> None:
        """`done` more units are done; written when the interval since the last write has passed."""
        self._pending += done
        if time.monotonic() - self._written_at >= self._res.settings.progress_interval_s:
            self.flush()

    def flush(self) -> None:
        """Write the units counted since the last write (the stage's end needs none: finishing it
        moves the job to the stage's last percentage)."""
        if self._pending:
            with self._res.db.transaction() as session:
                job_progress.add_units(session, self._job_id, self._stage, self._pending)
            self._pending = 0
        self._written_at = time.monotonic()
