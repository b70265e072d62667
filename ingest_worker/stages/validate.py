"""The validate stage: check that a file is a PDF the pipeline can open, and count its pages."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, LimitReachedError, PyPdfError

from ingest_worker.stages.models import ValidationReport
from shared.errors import (
    EmptyFileError,
    EncryptedPdfError,
    IngestError,
    InvalidPdfError,
    NotAPdfError,
    PdfLimitError,
    TooManyPagesError,
)

PDF_MAGIC = b"%PDF-"

# What pypdf lets escape on hostile or broken files besides its own errors: parsers deep in the library
# index, unpack and recurse on attacker-controlled structures without checking them first.
HOSTILE_FILE_ERRORS: tuple[type[Exception], ...] = (
    TypeError,
    AssertionError,
    AttributeError,
    ValueError,
    KeyError,
    IndexError,
    ZeroDivisionError,
    OverflowError,
    RecursionError,
)


def validate_pdf(path: str, *, max_pages: int) -> ValidationReport:
    """Check the PDF at `path` opens (with an empty password if encrypted) and has 1..`max_pages` pages.

    Raises EmptyFileError, NotAPdfError, EncryptedPdfError, InvalidPdfError, PdfLimitError or
    TooManyPagesError.
    """
    reader, encrypted = open_pdf(path)
    with pdf_errors():
        page_count = len(reader.pages)
    if page_count == 0:
        raise InvalidPdfError("The PDF has no pages.")
    if page_count > max_pages:
        raise TooManyPagesError(f"The PDF has {page_count} pages; at most {max_pages} are allowed.")
    return ValidationReport(page_count=page_count, encrypted_opened=encrypted)


def open_pdf(path: str) -> tuple[PdfReader, bool]:
    """A pypdf reader for `path`, decrypted if it opens with an empty password, and whether it was encrypted.

    Shared by the stages that read PDFs with pypdf so all classify a bad file the same way.
    """
    check_magic(path)
    with pdf_errors():
        reader = PdfReader(path, strict=False)
        encrypted = reader.is_encrypted
        if encrypted:
            _decrypt_without_password(reader)
    return reader, encrypted


def check_magic(path: str) -> None:
    """Raise EmptyFileError or NotAPdfError unless the file starts with `%PDF-`."""
    with open(path, "rb") as handle:
        head = handle.read(len(PDF_MAGIC))
    if not head:
        raise EmptyFileError()
    if head != PDF_MAGIC:
        raise NotAPdfError()


@contextmanager
def pdf_errors(message: str | None = None) -> Iterator[None]:
    """Translate what pypdf raises on a bad file into the error taxonomy (InvalidPdfError, PdfLimitError).

    `message` replaces InvalidPdfError's default client-safe message, e.g. to name the page.
    """
    try:
        yield
    except IngestError:
        raise
    except LimitReachedError as exc:
        raise PdfLimitError() from exc
    except PyPdfError as exc:
        raise InvalidPdfError(message) from exc
    except HOSTILE_FILE_ERRORS as exc:
        raise InvalidPdfError(message) from exc


def _decrypt_without_password(reader: PdfReader) -> None:
    try:
        result = reader.decrypt("")
    except (DependencyError, NotImplementedError) as exc:
        # AES needs an optional crypto package; other security handlers (certificates) pypdf lacks.
        raise EncryptedPdfError("The PDF uses an encryption method the service cannot open.") from exc
    if result == PasswordType.NOT_DECRYPTED:
        raise EncryptedPdfError()
