"""Tests for the OCR stage against the real tesseract binary."""

from __future__ import annotations

import os
from pathlib import Path

import pytesseract
import pytest

from ingest_worker.pipeline_errors import (
    EncryptedPdfError,
    OcrFailedError,
    OcrUnavailableError,
    ProcessingTimeoutError,
)
from ingest_worker.stages import ocr
from ingest_worker.stages.ocr import ocr_pages
from shared.settings import Settings
from tests.support import pdfs
from tests.support.text_metrics import character_error_rate

pytestmark = pytest.mark.ocr

SCAN_TEXT = (
    "Scanned documents reach the service as images. The pipeline renders each page without a text "
    "layer and hands it to tesseract, which returns plain text.\n\n"
    "Quality depends on resolution: at three hundred dots per inch, clean print is read almost "
    "without mistakes. Numbers such as 2024, 17.5 and 42 must survive as well."
)
OTHER_TEXT = "A short second scan about shipping containers and harbour cranes."


def test_a_300_dpi_scan_is_read_with_a_low_character_error_rate(tmp_path: Path) -> None:
    # Given a one-page 300 dpi scan
    path = pdfs.write_pdf(tmp_path, pdfs.scanned_pdf([SCAN_TEXT], dpi=300))

    # When page 1 is OCRed
    texts = ocr_pages(path, [1], dpi=300, languages="eng", timeout_s=60)

    # Then the text comes back with a character error rate of at most 3%
    assert list(texts) == [1]
    assert character_error_rate(SCAN_TEXT, texts[1]) <= 0.03


def test_only_the_requested_pages_are_read(tmp_path: Path) -> None:
    # Given a text page followed by two scans
    data = pdfs.mixed_pdf(["A page with a text layer.", SCAN_TEXT, OTHER_TEXT], scanned={2, 3})
    path = pdfs.write_pdf(tmp_path, data)

    # When only page 3 is asked for
    texts = ocr_pages(path, [3], dpi=300, languages="eng", timeout_s=60)

    # Then only page 3 is returned, with page 3's text
    assert list(texts) == [3]
    assert character_error_rate(OTHER_TEXT, texts[3]) <= 0.03


def test_a_page_scanned_upside_down_is_read(tmp_path: Path) -> None:
    # Given a scan whose image is turned by 180 degrees
    path = pdfs.write_pdf(tmp_path, pdfs.scanned_pdf([SCAN_TEXT], upside_down=True))

    # When OCRed (orientation detection is on)
    texts = ocr_pages(path, [1], dpi=300, languages="eng", timeout_s=60)

    # Then the text still reads correctly
    assert character_error_rate(SCAN_TEXT, texts[1]) <= 0.03


def test_no_pages_asked_means_no_work(tmp_path: Path) -> None:
    # Given a scan, When no page is asked for, Then nothing is returned
    path = pdfs.write_pdf(tmp_path, pdfs.scanned_pdf([OTHER_TEXT], dpi=100))
    assert ocr_pages(path, [], dpi=300, languages="eng", timeout_s=60) == {}


def test_the_worker_runs_tesseract_single_threaded_unless_told_otherwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Given no OpenMP thread limit in the environment (set first so monkeypatch restores the original)
    monkeypatch.setenv("OMP_THREAD_LIMIT", "")
    monkeypatch.delenv("OMP_THREAD_LIMIT")
    # When a worker's entry point exports its settings to subprocesses
    Settings().export_child_environment()
    # Then tesseract will start with one OpenMP thread
    assert os.environ["OMP_THREAD_LIMIT"] == "1"


def test_an_operator_thread_limit_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # Given an operator who chose two OpenMP threads, When the worker starts, Then the choice stands
    monkeypatch.setenv("OMP_THREAD_LIMIT", "2")
    Settings().export_child_environment()
    assert os.environ["OMP_THREAD_LIMIT"] == "2"


def test_an_unknown_language_fails_the_ocr(tmp_path: Path) -> None:
    # Given a language tesseract has no data for
    path = pdfs.write_pdf(tmp_path, pdfs.scanned_pdf([OTHER_TEXT], dpi=150))

    # When / Then tesseract's failure is reported as an OCR failure naming the page
    with pytest.raises(OcrFailedError) as caught:
        ocr_pages(path, [1], dpi=150, languages="xyz", timeout_s=60)
    assert "page 1" in caught.value.message


def test_a_missing_tesseract_binary_is_ocr_unavailable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a worker without the tesseract binary
    monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", str(tmp_path / "no-tesseract"))
    path = pdfs.write_pdf(tmp_path, pdfs.scanned_pdf([OTHER_TEXT], dpi=100))

    # When / Then the failure is transient (another worker may have it) with its own code
    with pytest.raises(OcrUnavailableError) as caught:
        ocr_pages(path, [1], dpi=100, languages="eng", timeout_s=60)
    assert isinstance(caught.value, OcrFailedError)
    assert caught.value.code == "ocr_unavailable"


def test_a_page_over_its_time_limit_is_a_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Given tesseract killed at its time limit (pytesseract raises a bare RuntimeError then)
    def timed_out(*args: object, **kwargs: object) -> str:
        raise RuntimeError("Tesseract process timeout")

    monkeypatch.setattr(ocr.pytesseract, "image_to_data", timed_out)
    path = pdfs.write_pdf(tmp_path, pdfs.scanned_pdf([OTHER_TEXT], dpi=100))

    # When / Then the stage reports a processing timeout naming the page and the limit
    with pytest.raises(ProcessingTimeoutError) as caught:
        ocr_pages(path, [1], dpi=100, languages="eng", timeout_s=7)
    assert "page 1" in caught.value.message and "7 s" in caught.value.message


def test_an_encrypted_scan_with_a_password_is_refused(tmp_path: Path) -> None:
    # Given a PDF that needs a user password
    path = pdfs.write_pdf(tmp_path, pdfs.encrypted_pdf(OTHER_TEXT, password="hunter2"))

    # When / Then pdfium's password error becomes EncryptedPdfError
    with pytest.raises(EncryptedPdfError):
        ocr_pages(path, [1], dpi=100, languages="eng", timeout_s=60)


@pytest.mark.parametrize("languages", ["", "eng deu", "eng;rm", "-l"])
def test_malformed_language_lists_are_rejected(tmp_path: Path, languages: str) -> None:
    # Given a malformed language setting, When / Then it is refused before any work
    with pytest.raises(ValueError):
        ocr_pages(str(tmp_path / "unused.pdf"), [1], dpi=300, languages=languages, timeout_s=60)


def test_huge_pages_are_rendered_within_the_pixel_budget() -> None:
    # Given a 100 x 100 inch page, When its render scale at 300 dpi is chosen
    scale = ocr._scale_for(7200.0, 7200.0, 300)

    # Then the bitmap stays within the budget, while an A4 page keeps its full 300 dpi
    assert (7200 * scale) ** 2 <= ocr.MAX_PAGE_PIXELS
    assert ocr._scale_for(595.0, 842.0, 300) == 300 / 72
