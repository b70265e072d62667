"""Helpers for the OCR range tests: short scanned pages, and a job run, read and waited for by hand."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import select

import ingest_worker.actors as actors
from ingest_worker import stage_io
from ingest_worker.ocr import page_ranges
from ingest_worker.resources import Resources
from ingest_worker.runner import run_stage
from shared.db import Database
from shared.models import Job, OutboxMessage, utcnow

# Short pages keep tesseract's share of the suite small; each page has its own words.
WORDS = ["amber", "basalt", "cedar", "dune", "ember", "fjord", "granite", "heath", "iris", "jade"]
SCAN_PAGES = [
    f"Page {n}: the {WORDS[n % 10]} survey of sector {n * 7} was filed on time." for n in range(1, 21)
]
OCR_POLICY = actors.STAGE_POLICIES["ocr"][0]


def wait_for(predicate: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def job_row(db: Database, job_id: str) -> Job:
    with db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        session.expunge(job)
        return job


def hand_offs_to(db: Database, job_id: str, stage: str) -> int:
    with db.transaction() as session:
        return len(
            session.scalars(
                select(OutboxMessage).where(OutboxMessage.job_id == job_id, OutboxMessage.stage == stage)
            ).all()
        )


def through_extract(res: Resources, job_id: str) -> None:
    """Run a job's first stages by hand (no broker), as a worker would."""
    with res.db.transaction() as session:  # the first message counts as delivered
        for row in session.scalars(select(OutboxMessage).where(OutboxMessage.job_id == job_id)):
            row.published_at = utcnow()
    for stage, work in (
        ("validate", stage_io.validate),
        ("extract", stage_io.extract),
        ("ocr", page_ranges.ocr),
    ):
        run_stage(res, job_id, stage, work, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
