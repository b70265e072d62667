"""Hostile files through the isolated validate stage: each ends with its own code, in time."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import pytest
from pypdf.errors import LimitReachedError, PdfReadError

from ingest_worker.isolation import run_isolated
from ingest_worker.pipeline_errors import PdfLimitError
from ingest_worker.stages.extract import extract_pages
from ingest_worker.stages.ocr import ocr_pages
from ingest_worker.stages.validate import pdf_errors, validate_pdf
from shared.artifacts import ValidationReport
from shared.errors import IngestError, PermanentError
from tests.support import hostile_pdfs, pdfs

TIMEOUT_S = 30
MEMORY_MB = 1024
MAX_PAGES = 2000

HOSTILE: list[tuple[str, Callable[[], bytes], str]] = [
    ("truncated", pdfs.truncated_pdf, "truncated_pdf"),
    ("encrypted with a password", hostile_pdfs.password_pdf, "encrypted"),
    ("a PNG behind a PDF header", hostile_pdfs.disguised_png, "invalid_pdf"),
    ("a flate bomb over pypdf's limit", pdfs.flate_bomb_pdf, "decompression_bomb"),
    ("one stream drawn by many pages", hostile_pdfs.shared_stream_bomb_pdf, "decompression_bomb"),
    ("a /Count of two billion", hostile_pdfs.huge_count_pdf, "page_count_mismatch"),
    ("a page tree 500 levels deep", hostile_pdfs.deep_page_tree_pdf, "page_tree_too_deep"),
    ("a page tree that loops", hostile_pdfs.cyclic_page_tree_pdf, "page_tree_cycle"),
    ("a branch shared to make 2**40 pages", hostile_pdfs.shared_branch_pdf, "page_tree_cycle"),
    ("a 10-gigapixel image", hostile_pdfs.gigapixel_image_pdf, "image_too_large"),
    ("two million objects", hostile_pdfs.object_table_bomb_pdf, "too_many_objects"),
    ("no pages", pdfs.empty_pages_pdf, "no_pages"),
]


# Files pypdf cannot decode or decrypt, each with the code that says why. Without the jbig2dec program,
# pypdf cannot decode JBIG2; with it, the garbage below is a stream it fails to decode (`invalid_pdf`).
UNREADABLE: list[tuple[str, Callable[[], bytes], str]] = [
    *[
        (
            f"{algorithm} with a user password",
            partial(hostile_pdfs.encrypted_with, algorithm, user_password="pw"),
            "encrypted",
        )
        for algorithm in hostile_pdfs.ENCRYPTION_ALGORITHMS
    ],
    ("the certificate security handler", hostile_pdfs.certificate_encrypted_pdf, "unsupported_encryption"),
    ("an unknown security revision", hostile_pdfs.unknown_revision_encrypted_pdf, "unsupported_encryption"),
    *(
        [("JBIG2 page content", hostile_pdfs.jbig2_content_pdf, "unsupported_filter")]
        if shutil.which("jbig2dec") is None
        else []
    ),
    ("an unknown filter", hostile_pdfs.unknown_filter_pdf, "unsupported_filter"),
    ("a named crypt filter", hostile_pdfs.named_crypt_filter_pdf, "unsupported_filter"),
    ("/A85 on page content", hostile_pdfs.abbreviated_a85_pdf, "restricted_filter_name"),
    ("/Fl on page content", hostile_pdfs.abbreviated_flate_pdf, "restricted_filter_name"),
    ("ten thousand pages", partial(hostile_pdfs.many_pages_pdf, 10_000), "too_many_pages"),
]


def validate_isolated(path: str) -> ValidationReport:
    return run_isolated(validate_pdf, path, max_pages=MAX_PAGES, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB)


@pytest.mark.parametrize(
    ("make", "code"),
    [(make, code) for _, make, code in HOSTILE + UNREADABLE],
    ids=[name for name, _, _ in HOSTILE + UNREADABLE],
)
def test_a_hostile_file_ends_with_its_own_code_within_its_limit(
    tmp_path: Path, make: Callable[[], bytes], code: str
) -> None:
    # Given a hostile file
    path = pdfs.write_pdf(tmp_path, make())
    started = time.monotonic()

    # When it is validated in a child process under the parse limits
    with pytest.raises(IngestError) as caught:
        validate_isolated(path)

    # Then it fails permanently with its own code, well within the time limit
    assert caught.value.code == code
    assert isinstance(caught.value, PermanentError)
    assert time.monotonic() - started < TIMEOUT_S / 3


def test_the_hostile_codes_are_distinct_where_the_faults_differ() -> None:
    # Given the codes the hostile set expects
    codes = [code for _, _, code in HOSTILE]

    # Then only the two kinds of decompression bomb and of page-tree loop share one
    assert len(set(codes)) == len(codes) - 2


def test_good_files_still_pass_after_the_hostile_set(tmp_path: Path) -> None:
    # Given children that have just refused every hostile file
    for number, (_, make, _) in enumerate(HOSTILE):
        with pytest.raises(IngestError):
            validate_isolated(pdfs.write_pdf(tmp_path, make(), f"hostile-{number}.pdf"))

    # When a good text PDF and ones encrypted with an owner password only are validated and extracted
    text = pdfs.write_pdf(tmp_path, pdfs.text_pdf(["First page.", "Second page."]), "good.pdf")
    owner_only = pdfs.write_pdf(tmp_path, hostile_pdfs.owner_only_pdf(), "owner-only.pdf")
    aes = pdfs.write_pdf(
        tmp_path, hostile_pdfs.encrypted_with("AES-256", text="Sealed, not secret."), "aes.pdf"
    )

    # Then all pass, and the text comes out
    assert validate_isolated(text) == ValidationReport(page_count=2, encrypted_opened=False)
    assert validate_isolated(owner_only) == ValidationReport(page_count=1, encrypted_opened=True)
    assert validate_isolated(aes) == ValidationReport(page_count=1, encrypted_opened=True)
    pages = run_isolated(extract_pages, text, min_chars=5, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB)
    assert [page.text.strip() for page in pages] == ["First page.", "Second page."]
    pages = run_isolated(extract_pages, aes, min_chars=5, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB)
    assert [page.text.strip() for page in pages] == ["Sealed, not secret."]


def test_a_lying_count_under_the_page_limit_is_still_a_mismatch(tmp_path: Path) -> None:
    # Given one page under a root that claims three
    path = pdfs.write_pdf(tmp_path, hostile_pdfs.huge_count_pdf(count=3))

    # When / Then the two would disagree on page numbers (pdfium trusts /Count), so it is refused
    with pytest.raises(IngestError) as caught:
        validate_pdf(path, max_pages=MAX_PAGES)
    assert caught.value.code == "page_count_mismatch"


def test_an_image_at_the_pixel_limit_passes(tmp_path: Path) -> None:
    # Given an image of 10,000 x 10,000 pixels (100 megapixels, under the 150 megapixel limit)
    path = pdfs.write_pdf(tmp_path, hostile_pdfs.gigapixel_image_pdf(width=10_000, height=10_000))

    # When / Then it is judged by its declared size alone, and passes
    assert validate_pdf(path, max_pages=MAX_PAGES).page_count == 1


def test_a_nested_page_tree_is_walked_and_counted(tmp_path: Path) -> None:
    # Given twelve pages under three branches
    path = pdfs.write_pdf(tmp_path, hostile_pdfs.nested_tree_pdf(branches=3, pages_per_branch=4))

    # When / Then validation counts every page
    assert validate_pdf(path, max_pages=MAX_PAGES).page_count == 12


def test_a_limit_pypdf_wraps_in_a_read_error_is_still_a_limit() -> None:
    # Given pypdf reporting a limit inside a read error (as it does for its cross-reference limit)
    wrapped = PdfReadError("Trailer cannot be read")
    wrapped.__cause__ = LimitReachedError("Maximum XRef stream entry limit reached")

    # When / Then it is classified as a safety limit, not as an unreadable file
    with pytest.raises(PdfLimitError), pdf_errors():
        raise wrapped


def test_a_page_pdfium_cannot_render_fails_the_ocr_with_its_own_code(tmp_path: Path) -> None:
    # Given a page that passes validation and extraction (blank, so marked for OCR) but whose visible
    # area is empty, which pypdfium2 refuses to render with a plain ValueError
    path = pdfs.write_pdf(tmp_path, hostile_pdfs.crop_outside_media_pdf())
    assert validate_isolated(path).page_count == 1
    pages = run_isolated(extract_pages, path, min_chars=5, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB)
    assert pages[0].needs_ocr

    # When its page is rendered for OCR in a child
    read = partial(ocr_pages, path, [1], dpi=100, languages="eng", timeout_s=TIMEOUT_S)
    with pytest.raises(IngestError) as caught:
        run_isolated(read, timeout_s=TIMEOUT_S, memory_mb=MEMORY_MB)

    # Then it fails permanently as a page that could not be rendered, naming the page
    assert caught.value.code == "page_render_failed"
    assert isinstance(caught.value, PermanentError)
    assert "Page 1" in caught.value.message
