"""Tests for the validate stage: what opens, what is refused, and with which error."""

from __future__ import annotations

from pathlib import Path

import pytest
from pypdf.errors import LimitReachedError, PdfReadError, PdfStreamError

from ingest_worker.stages.models import ValidationReport
from ingest_worker.stages.validate import pdf_errors, validate_pdf
from shared.errors import (
    EmptyFileError,
    EncryptedPdfError,
    IngestError,
    InvalidPdfError,
    NotAPdfError,
    PdfLimitError,
    TooManyPagesError,
)
from tests import pdfs


def test_a_text_pdf_reports_its_page_count(tmp_path: Path) -> None:
    # Given a three-page text PDF
    path = pdfs.write_pdf(tmp_path, pdfs.text_pdf(["one", "two", "three"]))

    # When it is validated
    report = validate_pdf(path, max_pages=10)

    # Then it opens, unencrypted, with three pages
    assert report == ValidationReport(page_count=3, encrypted_opened=False)


def test_a_file_without_the_pdf_magic_is_not_a_pdf(tmp_path: Path) -> None:
    # Given a PNG renamed to .pdf
    path = pdfs.write_pdf(tmp_path, b"\x89PNG\r\n\x1a\n" + b"\0" * 64)

    # When / Then validation refuses it as not a PDF
    with pytest.raises(NotAPdfError):
        validate_pdf(path, max_pages=10)


def test_an_empty_file_is_refused_as_empty(tmp_path: Path) -> None:
    # Given an empty upload
    path = pdfs.write_pdf(tmp_path, b"")

    # When / Then
    with pytest.raises(EmptyFileError):
        validate_pdf(path, max_pages=10)


def test_a_pdf_encrypted_with_a_password_is_refused(tmp_path: Path) -> None:
    # Given a PDF that needs a user password
    path = pdfs.write_pdf(tmp_path, pdfs.encrypted_pdf("secret", password="hunter2"))

    # When / Then validation says it is encrypted
    with pytest.raises(EncryptedPdfError) as caught:
        validate_pdf(path, max_pages=10)
    assert caught.value.code == "encrypted"


def test_a_pdf_encrypted_with_an_empty_user_password_opens(tmp_path: Path) -> None:
    # Given a PDF encrypted with an owner password only (anyone may open it)
    path = pdfs.write_pdf(tmp_path, pdfs.encrypted_pdf("open to all", password=""))

    # When it is validated
    report = validate_pdf(path, max_pages=10)

    # Then it opens and the report says it was encrypted
    assert report == ValidationReport(page_count=1, encrypted_opened=True)


def test_a_truncated_pdf_is_invalid(tmp_path: Path) -> None:
    # Given a PDF cut in half (pypdf cannot rebuild the missing cross-reference table and trailer)
    path = pdfs.write_pdf(tmp_path, pdfs.truncated_pdf())

    # When / Then validation reports an invalid PDF, with pypdf's error kept as the cause
    with pytest.raises(InvalidPdfError) as caught:
        validate_pdf(path, max_pages=10)
    assert isinstance(caught.value.__cause__, PdfStreamError)


def test_a_header_followed_by_garbage_is_invalid(tmp_path: Path) -> None:
    # Given a file with the PDF magic and nothing else a PDF needs
    path = pdfs.write_pdf(tmp_path, b"%PDF-1.7\n" + b"garbage " * 100)

    # When / Then
    with pytest.raises(InvalidPdfError):
        validate_pdf(path, max_pages=10)


def test_a_pdf_without_pages_is_invalid(tmp_path: Path) -> None:
    # Given a well-formed PDF whose page tree is empty
    path = pdfs.write_pdf(tmp_path, pdfs.empty_pages_pdf())

    # When / Then
    with pytest.raises(InvalidPdfError) as caught:
        validate_pdf(path, max_pages=10)
    assert "no pages" in caught.value.message


def test_more_pages_than_allowed_is_refused_and_the_limit_itself_passes(tmp_path: Path) -> None:
    # Given a three-page PDF
    path = pdfs.write_pdf(tmp_path, pdfs.text_pdf(["a", "b", "c"]))

    # When the limit is two pages, Then it is refused with a message naming both numbers
    with pytest.raises(TooManyPagesError) as caught:
        validate_pdf(path, max_pages=2)
    assert "3" in caught.value.message and "2" in caught.value.message
    # And when the limit is exactly three pages, it passes
    assert validate_pdf(path, max_pages=3).page_count == 3


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (LimitReachedError("decompression limit"), PdfLimitError),
        (PdfReadError("bad xref"), InvalidPdfError),
        (TypeError("NoneType is not subscriptable"), InvalidPdfError),
        (AssertionError(), InvalidPdfError),
        (AttributeError("no attribute"), InvalidPdfError),
        (ValueError("bad int"), InvalidPdfError),
        (KeyError("/Root"), InvalidPdfError),
        (RecursionError(), InvalidPdfError),
    ],
)
def test_hostile_file_errors_are_classified(raised: Exception, expected: type[IngestError]) -> None:
    # Given pypdf raising what hostile files provoke
    # When it escapes inside the classification boundary
    with pytest.raises(expected) as caught, pdf_errors():
        raise raised

    # Then it becomes the taxonomy's error with its client-safe message, the original kept as the cause
    assert caught.value.__cause__ is raised
    assert caught.value.message == expected.message
