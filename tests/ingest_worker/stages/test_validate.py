"""Tests for the validate stage: what opens, what is refused, and with which error."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from pypdf.errors import PdfStreamError

from ingest_worker.pipeline_errors import (
    EncryptedPdfError,
    InvalidPdfError,
    TooManyPagesError,
    UnsupportedEncryptionError,
)
from ingest_worker.stages.validate import validate_pdf
from shared.artifacts import ValidationReport
from shared.errors import EmptyFileError, NotAPdfError
from tests.support import hostile_pdfs, pdfs


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


@pytest.mark.parametrize("algorithm", hostile_pdfs.ENCRYPTION_ALGORITHMS)
def test_every_standard_encryption_opens_with_an_empty_user_password(tmp_path: Path, algorithm: str) -> None:
    # Given a PDF encrypted with the algorithm and an owner password only
    path = pdfs.write_pdf(tmp_path, hostile_pdfs.encrypted_with(algorithm))

    # When it is validated
    report = validate_pdf(path, max_pages=10)

    # Then it opens and says it was encrypted
    assert report == ValidationReport(page_count=1, encrypted_opened=True)


@pytest.mark.parametrize("algorithm", hostile_pdfs.ENCRYPTION_ALGORITHMS)
def test_every_standard_encryption_with_a_user_password_is_refused(tmp_path: Path, algorithm: str) -> None:
    # Given a PDF that needs a user password, encrypted with the algorithm
    path = pdfs.write_pdf(tmp_path, hostile_pdfs.encrypted_with(algorithm, user_password="hunter2"))

    # When / Then it is refused as encrypted, not as a method the service lacks
    with pytest.raises(EncryptedPdfError) as caught:
        validate_pdf(path, max_pages=10)
    assert caught.value.code == "encrypted"


@pytest.mark.parametrize(
    "make", [hostile_pdfs.certificate_encrypted_pdf, hostile_pdfs.unknown_revision_encrypted_pdf]
)
def test_a_security_handler_other_than_the_standard_one_is_unsupported(
    tmp_path: Path, make: Callable[[], bytes]
) -> None:
    # Given a PDF encrypted for a certificate's holder, or at an unknown revision
    path = pdfs.write_pdf(tmp_path, make())

    # When / Then it is refused with its own code
    with pytest.raises(UnsupportedEncryptionError) as caught:
        validate_pdf(path, max_pages=10)
    assert caught.value.code == "unsupported_encryption"
