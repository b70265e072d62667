"""Test-only worker plug-in: makes one stage pause in the middle, so a test can kill its worker there.

Loaded beside the actors by the `dramatiq` command of a test (`dramatiq ingest_worker.actors
tests.support.slow_stages`). The stage named by SLOW_STAGE sleeps SLOW_STAGE_S seconds after it has
started (its lease taken), once per job: the run after a recovery goes at full speed. SLOW_STAGE
`ocr_range` pauses the first page range of a job's OCR to start, after it has taken its lease.
"""

from __future__ import annotations

import os
import time
from typing import Any

import ingest_worker.actors as actors
from ingest_worker.ocr import page_ranges
from ingest_worker.runner import run_stage

SLOW_STAGE = os.environ.get("SLOW_STAGE", "")
SLOW_STAGE_S = float(os.environ.get("SLOW_STAGE_S", "60"))
MARKER_DIR = os.environ.get("SLOW_STAGE_MARKERS", "")


def _first_to_claim(marker: str) -> bool:
    """Whether this call created `marker`: atomic, so of two threads racing for it only one pauses."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def _slowed(work: Any, stage: str) -> Any:
    def slow_work(res: Any, job: Any) -> Any:
        marker = os.path.join(MARKER_DIR, f"{job.id}-{stage}")
        if MARKER_DIR and _first_to_claim(marker):
            time.sleep(SLOW_STAGE_S)
        return work(res, job)

    return slow_work


def run_stage_slowly(res: Any, job_id: str, stage: str, work: Any, **kwargs: Any) -> Any:
    if stage == SLOW_STAGE:
        work = _slowed(work, stage)
    return run_stage(res, job_id, stage, work, **kwargs)


actors.run_stage = run_stage_slowly  # type: ignore[assignment]

_read_range = page_ranges._read_range


def _read_range_slowly(res: Any, job_id: str, document_id: str, part: int, wanted: list[int]) -> str:
    marker = os.path.join(MARKER_DIR, f"{job_id}-ocr_range")
    if SLOW_STAGE == "ocr_range" and MARKER_DIR and _first_to_claim(marker):
        time.sleep(SLOW_STAGE_S)
    return _read_range(res, job_id, document_id, part, wanted)


page_ranges._read_range = _read_range_slowly  # type: ignore[assignment]
