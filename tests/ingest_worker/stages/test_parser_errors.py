"""Tests for the translation of the PDF libraries' errors: the file's faults get codes, our bugs do not."""

from __future__ import annotations

import os
import re
import struct
import zlib
from pathlib import Path

import pypdf
import pypdfium2 as pdfium
import pytest
from pypdf.errors import (
    DependencyError,
    DeprecationError,
    FileNotDecryptedError,
    LimitReachedError,
    PdfReadError,
    PdfStreamError,
)

from ingest_worker.pipeline_errors import (
    DecompressionBombError,
    EncryptedPdfError,
    InvalidPdfError,
    MalformedPdfError,
    NestingTooDeepError,
    PageRenderError,
    PdfLimitError,
    RestrictedFilterNameError,
    UnsupportedEncryptionError,
    UnsupportedFeatureError,
    UnsupportedFilterError,
)
from ingest_worker.stages import extract, validate
from ingest_worker.stages.parser_errors import classify_pdfium, pdfium_errors, pypdf_errors
from shared.errors import IngestError, PermanentError
from tests.support import pdfs

PYPDF = os.path.dirname(pypdf.__file__)
PDFIUM = os.path.dirname(pdfium.__file__)


def raise_from(directory: str, module: str, exc: BaseException) -> None:
    """Raise `exc` from a frame whose source file is `module` under `directory`, as the library would."""
    exec(compile("raise exc", os.path.join(directory, module), "exec"), {"exc": exc})


@pytest.mark.parametrize(
    ("module", "raised", "expected"),
    [
        ("_reader.py", PdfReadError("bad xref"), InvalidPdfError),
        ("_reader.py", PdfStreamError("Stream has ended unexpectedly"), InvalidPdfError),
        ("filters.py", LimitReachedError("decompression limit"), DecompressionBombError),
        ("_page.py", LimitReachedError("Detected cycle in /Parent hierarchy"), PdfLimitError),
        ("_reader.py", FileNotDecryptedError("File has not been decrypted"), EncryptedPdfError),
        ("filters.py", DependencyError("jbig2dec binary is not available."), UnsupportedFilterError),
        ("filters.py", DependencyError("brotli is required"), UnsupportedFilterError),
        (
            f"_crypt_providers{os.sep}_fallback.py",
            DependencyError("cryptography>=3.1"),
            UnsupportedEncryptionError,
        ),
        ("filters.py", DeprecationError("The filter name /A85 is deprecated"), RestrictedFilterNameError),
        ("filters.py", NotImplementedError("Unsupported filter /Foo"), UnsupportedFilterError),
        (
            "_encryption.py",
            NotImplementedError("only Standard PDF encryption handler"),
            UnsupportedEncryptionError,
        ),
        ("_page.py", NotImplementedError("something new"), UnsupportedFeatureError),
        ("generic/_base.py", TypeError("NoneType is not subscriptable"), MalformedPdfError),
        ("_page.py", AssertionError(), MalformedPdfError),
        ("_page.py", AttributeError("no attribute"), MalformedPdfError),
        ("_reader.py", ValueError("invalid literal for int()"), MalformedPdfError),
        ("_reader.py", KeyError("/Root"), MalformedPdfError),
        ("_cmap.py", IndexError("list index out of range"), MalformedPdfError),
        ("_cmap.py", ZeroDivisionError(), MalformedPdfError),
        ("filters.py", struct.error("unpack requires a buffer"), MalformedPdfError),
        ("filters.py", zlib.error("Error -3"), MalformedPdfError),
        ("generic/_data_structures.py", RecursionError(), NestingTooDeepError),
    ],
)
def test_what_pypdf_raises_on_a_bad_file_gets_a_specific_permanent_code(
    module: str, raised: Exception, expected: type[IngestError]
) -> None:
    # Given pypdf raising what hostile files provoke, from inside its own code
    # When it escapes inside the pypdf boundary
    with pytest.raises(expected) as caught, pypdf_errors():
        raise_from(PYPDF, module, raised)

    # Then it becomes the taxonomy's permanent error with its own code and a client-safe message (never
    # the library's text), the original kept as the cause
    assert type(caught.value) is expected
    assert isinstance(caught.value, PermanentError)
    assert caught.value.code == expected.code != "internal_error"
    assert caught.value.message and all(str(arg) not in caught.value.message for arg in raised.args)
    assert caught.value.__cause__ is raised


@pytest.mark.parametrize(
    "raised",
    [TypeError("bad operand"), KeyError("x"), ValueError("x"), AttributeError("x"), RecursionError()],
)
def test_the_same_plain_error_raised_by_our_own_code_is_not_hidden(raised: Exception) -> None:
    # Given our own code failing inside a block that also calls pypdf and pdfium
    # When / Then the error passes both boundaries unchanged, to end as an internal error with its traceback
    with pytest.raises(type(raised)) as caught, pypdf_errors():
        raise raised
    assert caught.value is raised
    with pytest.raises(type(raised)) as caught, pdfium_errors():
        raise raised
    assert caught.value is raised


def test_a_deprecation_error_from_a_removed_pypdf_api_is_our_bug() -> None:
    # Given pypdf refusing a keyword it removed (raised in its helpers, not while decoding a stream)
    raised = DeprecationError("old_term is deprecated as an argument. Use new_term instead")

    # When / Then it is not blamed on the file
    with pytest.raises(DeprecationError), pypdf_errors():
        raise_from(PYPDF, "_utils.py", raised)


def test_a_library_error_carries_the_message_given_for_the_place() -> None:
    # Given a page that pypdf cannot read, in a block that names the page
    # When / Then the generic codes carry the page's message
    with pytest.raises(MalformedPdfError) as caught, pypdf_errors("Page 3 of the PDF could not be read."):
        raise_from(PYPDF, "_page.py", TypeError("x"))
    assert caught.value.message == "Page 3 of the PDF could not be read."


@pytest.mark.parametrize(
    ("err_code", "expected"),
    [
        (pdfium.raw.FPDF_ERR_PASSWORD, EncryptedPdfError),
        (pdfium.raw.FPDF_ERR_SECURITY, UnsupportedEncryptionError),
        (pdfium.raw.FPDF_ERR_FORMAT, InvalidPdfError),
        (pdfium.raw.FPDF_ERR_UNKNOWN, InvalidPdfError),
        (pdfium.raw.FPDF_ERR_PAGE, InvalidPdfError),
        (None, PageRenderError),
    ],
)
def test_pdfium_errors_get_specific_permanent_codes(
    err_code: int | None, expected: type[IngestError]
) -> None:
    # Given pdfium failing to load a document (with its reason) or a page (without one)
    raised = pdfium.PdfiumError("Failed to load", err_code=err_code)

    # When / Then
    error = classify_pdfium(raised)
    assert type(error) is expected
    assert isinstance(error, PermanentError)


def test_pdfium_not_finding_the_file_is_not_blamed_on_the_file() -> None:
    # Given pdfium unable to open the path it was given (the service's fault)
    raised = pdfium.PdfiumError("Failed to load document", err_code=pdfium.raw.FPDF_ERR_FILE)

    # When / Then it stays unclassified
    assert classify_pdfium(raised) is None


def test_a_plain_error_raised_inside_pypdfium2_is_a_render_failure() -> None:
    # Given pypdfium2's helpers failing on what pdfium returned for a page
    with pytest.raises(PageRenderError) as caught, pdfium_errors("Page 2 of the PDF could not be rendered."):
        raise_from(PDFIUM, "_helpers/page.py", ValueError("negative size"))

    # Then the page is named
    assert caught.value.message == "Page 2 of the PDF could not be rendered."


def test_a_bug_in_our_own_page_code_is_not_blamed_on_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given our page layout code failing with a plain error, inside the block that reads the page
    def broken(page: object) -> tuple[str, list[str] | None]:
        raise TypeError("a bug of ours")

    monkeypatch.setattr(extract, "structured_page", broken)
    path = pdfs.write_pdf(tmp_path, pdfs.text_pdf(["A good page."]))

    # When / Then extraction lets it through unclassified, to end as an internal error
    with pytest.raises(TypeError, match="a bug of ours"):
        extract.extract_pages(path, min_chars=5)


def test_a_bug_in_our_own_limit_checks_is_not_blamed_on_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given our limit checks failing with a plain error, inside the block that walks the file
    def broken(reader: object, limits: object) -> None:
        raise KeyError("a bug of ours")

    monkeypatch.setattr(validate, "check_page_content", broken)
    path = pdfs.write_pdf(tmp_path, pdfs.text_pdf(["A good page."]))

    # When / Then validation lets it through unclassified
    with pytest.raises(KeyError, match="a bug of ours"):
        validate.validate_pdf(path, max_pages=10)


def test_every_error_code_is_a_distinct_lowercase_name_with_a_message() -> None:
    # Given every error class of the taxonomy
    classes: list[type[IngestError]] = []
    pending: list[type[IngestError]] = [IngestError]
    while pending:
        cls = pending.pop()
        classes.append(cls)
        pending += cls.__subclasses__()

    # Then each has its own stable lowercase code, and a message to show a client
    codes = [cls.code for cls in classes]
    assert len(codes) == len(set(codes)), sorted(code for code in codes if codes.count(code) > 1)
    assert all(re.fullmatch(r"[a-z][a-z0-9_]*", code) for code in codes)
    assert all(cls.message.endswith(".") for cls in classes)
    assert {
        "malformed_pdf",
        "unsupported_encryption",
        "unsupported_filter",
        "restricted_filter_name",
        "unsupported_pdf_feature",
        "page_render_failed",
        "nesting_too_deep",
    } <= set(codes)
