"""Tests for the extract stage: text per page, OCR marking and error classification."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest_worker.pipeline_errors import EncryptedPdfError, PdfLimitError
from ingest_worker.stages.extract import extract_pages
from shared.artifacts import PageText, pages_from_json, pages_to_json
from shared.errors import NotAPdfError
from tests.support import pdfs
from tests.support.text_metrics import character_error_rate

PAGES = [
    "Invoices are due within thirty days of receipt. Late payments accrue interest at two percent "
    "per month.\n\nAll amounts are stated in euros and include value added tax where applicable.",
    "The second page describes delivery terms: goods travel at the risk of the buyer once they "
    "leave the warehouse, unless the order confirmation says otherwise.",
    "Page three lists the contacts: accounts@example.com for billing questions, and the switchboard "
    "for everything else. Office hours are nine to five, Monday to Friday.",
]


def test_text_pages_are_extracted_in_order_with_their_numbers(tmp_path: Path) -> None:
    # Given a three-page text PDF
    path = pdfs.write_pdf(tmp_path, pdfs.text_pdf(PAGES))

    # When its pages are extracted
    pages = extract_pages(path, min_chars=20)

    # Then each page's text matches what was written (CER <= 1%), numbered from 1, none needing OCR
    assert [page.number for page in pages] == [1, 2, 3]
    for page, expected in zip(pages, PAGES, strict=True):
        assert character_error_rate(expected, page.text) <= 0.01
        assert page.needs_ocr is False
        assert page.source == "text"


def test_scanned_pages_are_marked_for_ocr_and_text_pages_are_not(tmp_path: Path) -> None:
    # Given a PDF whose second page is a scan without a text layer
    path = pdfs.write_pdf(tmp_path, pdfs.mixed_pdf(PAGES, scanned={2}, dpi=100))

    # When its pages are extracted
    pages = extract_pages(path, min_chars=20)

    # Then only page 2 needs OCR
    assert [page.needs_ocr for page in pages] == [False, True, False]
    assert pages[1].text.strip() == ""


def test_a_page_with_too_little_text_needs_ocr(tmp_path: Path) -> None:
    # Given a page carrying only a page number, and the threshold just above it
    path = pdfs.write_pdf(tmp_path, pdfs.text_pdf(["- 12 -", PAGES[0]]))

    # When extracted with min_chars=5 (the first page has 4 visible characters)
    pages = extract_pages(path, min_chars=5)

    # Then the sparse page is marked for OCR and keeps the text it had
    assert pages[0].needs_ocr is True
    assert "12" in pages[0].text
    assert pages[1].needs_ocr is False


def test_a_decompression_bomb_trips_the_pdf_limit(tmp_path: Path) -> None:
    # Given a page whose content stream inflates to 100 MB
    path = pdfs.write_pdf(tmp_path, pdfs.flate_bomb_pdf(decompressed_mb=100))

    # When / Then extraction stops at pypdf's limit and reports a PDF limit, not a crash
    with pytest.raises(PdfLimitError):
        extract_pages(path, min_chars=20)


def test_an_encrypted_pdf_with_an_empty_password_is_extracted(tmp_path: Path) -> None:
    # Given a PDF encrypted with an owner password only
    path = pdfs.write_pdf(tmp_path, pdfs.encrypted_pdf(PAGES[1], password=""))

    # When / Then its text comes out
    (page,) = extract_pages(path, min_chars=20)
    assert character_error_rate(PAGES[1], page.text) <= 0.01


def test_an_encrypted_pdf_with_a_password_is_refused(tmp_path: Path) -> None:
    # Given a PDF that needs a user password
    path = pdfs.write_pdf(tmp_path, pdfs.encrypted_pdf(PAGES[1], password="hunter2"))

    # When / Then
    with pytest.raises(EncryptedPdfError):
        extract_pages(path, min_chars=20)


def test_a_non_pdf_is_refused(tmp_path: Path) -> None:
    # Given a text file
    path = pdfs.write_pdf(tmp_path, b"just some words\n")

    # When / Then
    with pytest.raises(NotAPdfError):
        extract_pages(path, min_chars=20)


def test_columns_drawn_one_after_the_other_come_out_in_reading_order(tmp_path: Path) -> None:
    # Given a two-column page whose columns are drawn left first, as most generators do
    left = "LEFTSTART " + "words of the left column " * 20 + "LEFTEND"
    right = "RIGHTSTART " + "words of the right column " * 20 + "RIGHTEND"
    path = pdfs.write_pdf(tmp_path, pdfs.two_column_pdf(left, right))

    # When extracted
    (page,) = extract_pages(path, min_chars=20)

    # Then the left column comes whole before the right one (pypdf follows the content stream)
    order = [page.text.index(marker) for marker in ("LEFTSTART", "LEFTEND", "RIGHTSTART", "RIGHTEND")]
    assert order == sorted(order)


def test_pages_survive_the_json_artifact_round_trip(tmp_path: Path) -> None:
    # Given extracted pages, one of them from OCR
    path = pdfs.write_pdf(tmp_path, pdfs.text_pdf(PAGES[:2]))
    pages = extract_pages(path, min_chars=20)
    pages.append(PageText(number=3, text="Über OCR — ünïcödé", needs_ocr=True, source="ocr"))

    # When written as an artifact and read back
    restored = pages_from_json(pages_to_json(pages))

    # Then nothing changed
    assert restored == pages


def test_the_test_pdf_generators_are_deterministic() -> None:
    # Given each generator called twice with the same input, Then the bytes are the same
    assert pdfs.text_pdf(PAGES) == pdfs.text_pdf(PAGES)
    assert pdfs.scanned_pdf(PAGES[:1], dpi=100) == pdfs.scanned_pdf(PAGES[:1], dpi=100)
    assert pdfs.encrypted_pdf("x", password="pw") == pdfs.encrypted_pdf("x", password="pw")
