"""The validate stage: check that a file is a PDF the pipeline can open, and count its pages."""

from __future__ import annotations

import re

from pypdf import PasswordType, PdfReader
from pypdf.errors import DependencyError, LimitReachedError, PyPdfError

from ingest_worker.pipeline_errors import (
    EncryptedPdfError,
    InvalidPdfError,
    MalformedPdfError,
    PageCountMismatchError,
    TooManyObjectsError,
    TruncatedPdfError,
    UnsupportedEncryptionError,
)
from ingest_worker.stages.limits import PdfLimits, check_object_count, check_page_content, count_pages
from ingest_worker.stages.parser_errors import pypdf_errors
from shared.artifacts import ValidationReport
from shared.errors import EmptyFileError, NotAPdfError

PDF_MAGIC = b"%PDF-"
DEFAULT_LIMITS = PdfLimits()
# Where a whole PDF keeps its end-of-file marker, and how far into a file its first objects appear.
_TAIL_BYTES = 1024
_HEAD_BYTES = 65536
_OBJECT_HEADER = re.compile(rb"\d+\s+\d+\s+obj\b")
# What a cut-off file makes the reader report, when nothing more specific explains the failure.
_CUT_SHORT_SYMPTOMS = (InvalidPdfError, MalformedPdfError)


def validate_pdf(path: str, *, max_pages: int, limits: PdfLimits = DEFAULT_LIMITS) -> ValidationReport:
    """Check the PDF at `path` opens (with an empty password if encrypted), has 1..`max_pages` pages
    and stays within `limits`, before any stage parses its pages.

    Raises EmptyFileError, NotAPdfError, EncryptedPdfError (or UnsupportedEncryptionError),
    TooManyPagesError, InvalidPdfError (or its TruncatedPdfError, NoPagesError, PageTreeCycleError,
    PageCountMismatchError and the codes of `parser_errors`) and PdfLimitError (or its TooManyObjectsError,
    PageTreeTooDeepError, DecompressionBombError, ImageTooLargeError, NestingTooDeepError).
    """
    try:
        reader, encrypted = open_pdf(path, max_objects=limits.max_objects)
        with pdf_errors():
            check_object_count(reader, limits)
            page_count = count_pages(reader, max_pages=max_pages, limits=limits)
            if len(reader.pages) != page_count:
                raise PageCountMismatchError()
            check_page_content(reader, limits)
    except InvalidPdfError as exc:
        if type(exc) in _CUT_SHORT_SYMPTOMS and _looks_truncated(path):
            raise TruncatedPdfError() from exc.__cause__
        raise
    return ValidationReport(page_count=page_count, encrypted_opened=encrypted)


def open_pdf(path: str, *, max_objects: int = DEFAULT_LIMITS.max_objects) -> tuple[PdfReader, bool]:
    """A pypdf reader for `path`, decrypted if it opens with an empty password, and whether it was encrypted.

    Shared by the stages that read PDFs with pypdf so all classify a bad file the same way. Raises
    TooManyObjectsError when the cross-reference data trips a limit (`max_objects` entries among them).
    """
    check_magic(path)
    with pdf_errors():
        try:
            reader = PdfReader(path, strict=False, xref_stream_maximum_entries=max_objects)
        except PyPdfError as exc:
            # Opening reads only the cross-reference data and the trailer: a limit hit there means
            # an object table built to exhaust the reader.
            if isinstance(exc, LimitReachedError) or isinstance(exc.__cause__, LimitReachedError):
                raise TooManyObjectsError("The PDF's object table is larger than allowed.") from exc
            raise
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


# The stages that read with pypdf classify its errors through this one boundary.
pdf_errors = pypdf_errors


def _decrypt_without_password(reader: PdfReader) -> None:
    try:
        result = reader.decrypt("")
    except (DependencyError, NotImplementedError) as exc:
        # AES needs an optional crypto package; other security handlers (certificates) pypdf lacks.
        raise UnsupportedEncryptionError() from exc
    if result == PasswordType.NOT_DECRYPTED:
        raise EncryptedPdfError()


def _looks_truncated(path: str) -> bool:
    """Whether the file begins like a PDF (objects after the header) but lacks the end-of-file marker."""
    with open(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
        handle.seek(0, 2)
        handle.seek(max(0, handle.tell() - _TAIL_BYTES))
        tail = handle.read()
    return b"%%EOF" not in tail and _OBJECT_HEADER.search(head) is not None
