"""A large scan's OCR in page ranges when things go wrong: a range that fails permanently or
transiently, a cancel, a tenant suspended mid-job."""

from __future__ import annotations

from typing import Any

import dramatiq
import pytest
from sqlalchemy import select

from ingest_worker import stage_io
from ingest_worker.ocr import page_ranges
from ingest_worker.ocr.page_ranges import run_range
from ingest_worker.pipeline_errors import InvalidPdfError, OcrFailedError
from ingest_worker.resources import Resources
from ingest_worker.runner import run_stage
from shared import operations
from shared.models import Job, StagePart, Tenant, TenantStatus
from shared.settings import Settings
from tests.support.inprocess import create_document_job, in_process_service
from tests.support.ocr_range_jobs import OCR_POLICY, SCAN_PAGES, hand_offs_to, job_row, through_extract
from tests.support.pdfs import scanned_pdf

pytestmark = pytest.mark.slow


def test_a_range_that_fails_permanently_fails_the_job_with_its_code(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a three-page scan fanned out in ranges of one page
    settings = settings.replace(ocr_range_pages=1, ocr_dpi=200)
    with in_process_service(settings, worker=False) as service:
        res = service.resources
        _, job_id = create_document_job(res, scanned_pdf(SCAN_PAGES[:3], dpi=200))
        through_extract(res, job_id)
        run_range(res, job_id, 0, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)

        # When the second range's pages cannot be rendered (a permanent error)
        def unreadable(*args: Any, **kwargs: Any) -> dict[int, str]:
            raise InvalidPdfError()

        monkeypatch.setattr(page_ranges, "read_pages", unreadable)
        run_range(res, job_id, 1, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        # Then the job fails with that error's code, and the third range does not run afterwards
        job = job_row(res.db, job_id)
        assert (job.status, job.error_code) == ("failed", "invalid_pdf")
        run_range(res, job_id, 2, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        assert hand_offs_to(res.db, job_id, "chunk") == 0
        with res.db.transaction() as session:
            statuses = dict(
                session.execute(
                    select(StagePart.part, StagePart.status).where(StagePart.job_id == job_id)
                ).all()  # type: ignore[arg-type]
            )
        assert statuses == {0: "done", 1: "queued", 2: "queued"}


def test_a_cancel_is_seen_by_each_range(settings: Settings) -> None:
    # Given a three-page scan fanned out in ranges of one page, the first range read
    settings = settings.replace(ocr_range_pages=1, ocr_dpi=200)
    with in_process_service(settings, worker=False) as service:
        res = service.resources
        _, job_id = create_document_job(res, scanned_pdf(SCAN_PAGES[:3], dpi=200))
        through_extract(res, job_id)
        run_range(res, job_id, 0, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        # When the client cancels the job, and the next ranges are delivered
        with res.db.transaction() as session:
            job = session.get(Job, job_id)
            assert job is not None
            operations.cancel_job(session, job)
        for part in (1, 2):
            run_range(res, job_id, part, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        # Then the job is cancelled, those ranges were not read and nothing was handed on
        assert job_row(res.db, job_id).status == "cancelled"
        with res.db.transaction() as session:
            attempts = session.scalars(
                select(StagePart.attempts).where(StagePart.job_id == job_id).order_by(StagePart.part)
            ).all()
        assert attempts == [1, 0, 0]
        assert hand_offs_to(res.db, job_id, "chunk") == 0


def test_a_range_that_fails_transiently_is_retried_and_the_job_resumes(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a two-page scan fanned out in ranges of one page
    settings = settings.replace(ocr_range_pages=1, ocr_dpi=200)
    with in_process_service(settings, worker=False) as service:
        res = service.resources
        _, job_id = create_document_job(res, scanned_pdf(SCAN_PAGES[:2], dpi=200))
        through_extract(res, job_id)
        real_read = page_ranges.read_pages

        def flaky(*args: Any, **kwargs: Any) -> dict[int, str]:
            raise OcrFailedError()

        # When the first range's OCR fails with a transient error
        monkeypatch.setattr(page_ranges, "read_pages", flaky)
        with pytest.raises(dramatiq.Retry):
            run_range(res, job_id, 0, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        # Then the job is retrying with that error's code and the range is given back
        job = job_row(res.db, job_id)
        assert (job.status, job.error_code) == ("retrying", "ocr_failed")
        # And when the retry and the other range succeed, the job runs on and is handed on once
        monkeypatch.setattr(page_ranges, "read_pages", real_read)
        for part in (0, 1):
            run_range(res, job_id, part, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        assert job_row(res.db, job_id).status == "running"
        assert hand_offs_to(res.db, job_id, "chunk") == 1
        with res.db.transaction() as session:
            attempts = session.scalars(
                select(StagePart.attempts).where(StagePart.job_id == job_id).order_by(StagePart.part)
            ).all()
        assert attempts == [2, 1]


def suspend_tenant(res: Resources, job_id: str) -> None:
    with res.db.transaction() as session:
        job = session.get(Job, job_id)
        assert job is not None
        tenant = session.get(Tenant, job.tenant_id)
        assert tenant is not None
        tenant.status = TenantStatus.SUSPENDED.value


def test_a_tenant_suspended_mid_job_stops_at_the_next_range_and_the_next_stage(settings: Settings) -> None:
    # Given a scan fanned out in ranges of one page, its first range read, and another tenant's queued job
    settings = settings.replace(ocr_range_pages=1, ocr_dpi=200)
    with in_process_service(settings, worker=False) as service:
        res = service.resources
        _, ranged = create_document_job(res, scanned_pdf(SCAN_PAGES[:3], dpi=200))
        through_extract(res, ranged)
        run_range(res, ranged, 0, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        _, staged = create_document_job(res, scanned_pdf(SCAN_PAGES[:1], dpi=200), tenant="globex")
        # When both tenants are suspended, and the next range and the other job's first stage come
        suspend_tenant(res, ranged)
        suspend_tenant(res, staged)
        run_range(res, ranged, 1, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        run_stage(
            res,
            staged,
            "validate",
            stage_io.validate,
            policy=OCR_POLICY,
            on_cancel=stage_io.delete_job_points,
        )
        # Then both jobs failed with the suspension's code, and the range was not read
        for job_id in (ranged, staged):
            assert (job_row(res.db, job_id).status, job_row(res.db, job_id).error_code) == (
                "failed",
                "tenant_suspended",
            )
        with res.db.transaction() as session:
            attempts = session.scalars(
                select(StagePart.attempts).where(StagePart.job_id == ranged).order_by(StagePart.part)
            ).all()
        assert attempts == [1, 0, 0]
