"""The OCR stage reads a document in the languages fixed at its upload, on the first run, on a retry and
in ranges alike, and counts the pages it dropped for low confidence on the job."""

from __future__ import annotations

from typing import Any

import pytest

from ingest_worker import stage_io
from ingest_worker.ocr import page_ranges
from ingest_worker.ocr.page_ranges import run_range
from ingest_worker.stages.ocr_confidence import PageReading
from shared.job_events import JobSnapshot
from shared.models import Document, Job
from shared.settings import Settings
from tests.support.inprocess import create_document_job, in_process_service
from tests.support.ocr_range_jobs import OCR_POLICY, through_extract
from tests.support.pdfs import scanned_pdf

PAGES = ["A first scanned page.", "A second scanned page.", "A third scanned page."]


def fake_reader(seen: list[str]) -> Any:
    """OCR that records the languages asked for and reads page 2 as a picture (only doubtful words)."""

    def read(
        res: Any, path: str, wanted: list[int], *, languages: str, check: Any, progress: Any = None
    ) -> dict[int, PageReading]:
        seen.append(languages)
        if progress is not None:
            progress.add(len(wanted))
        return {
            n: PageReading("", words_read=40, words_kept=0) if n == 2 else PageReading(PAGES[n - 1], 4, 4)
            for n in wanted
        }

    return read


@pytest.mark.parametrize("range_pages", [0, 1], ids=["one message", "ranges of one page"])
def test_the_document_languages_are_used_and_dropped_pages_counted(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, range_pages: int
) -> None:
    # Given a three-page scan whose document was uploaded to be read in German and English
    settings = settings.replace(ocr_range_pages=range_pages, ocr_dpi=100)
    seen: list[str] = []
    monkeypatch.setattr(page_ranges, "read_pages", fake_reader(seen))
    with in_process_service(settings, worker=False) as service:
        res = service.resources
        _, job_id = create_document_job(res, scanned_pdf(PAGES, dpi=100))
        with res.db.transaction() as session:
            job = session.get(Job, job_id)
            assert job is not None
            document = session.get(Document, job.document_id)
            assert document is not None
            document.ocr_languages = "deu+eng"

        # When the stages up to OCR run (and each range, when fanned out), the OCR stage a second time
        # as a retry would
        through_extract(res, job_id)
        for part in range(3 if range_pages else 0):
            run_range(res, job_id, part, policy=OCR_POLICY, on_cancel=stage_io.delete_job_points)
        if not range_pages:
            page_ranges.ocr(res, res_job(res, job_id))
            assert len(seen) == 2

        # Then every read was in the document's languages, and the picture page counts as dropped
        assert seen and set(seen) == {"deu+eng"}
        with res.db.transaction() as session:
            row = session.get(Job, job_id)
            assert row is not None and row.ocr_pages_dropped == 1


def res_job(res: Any, job_id: str) -> JobSnapshot:
    """The job as the runner hands it to a stage."""
    with res.db.transaction() as session:
        row = session.get(Job, job_id)
        assert row is not None
        return JobSnapshot({c.name: getattr(row, c.name) for c in Job.__table__.columns})
