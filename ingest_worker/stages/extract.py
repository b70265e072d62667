"""The extract stage: the text layer of every page, with the pages that need OCR marked."""

from __future__ import annotations

from ingest_worker.stages.models import PageText
from ingest_worker.stages.validate import open_pdf, pdf_errors


def extract_pages(path: str, *, min_chars: int) -> list[PageText]:
    """The text of each page of the PDF at `path`, in page order (numbers from 1).

    A page whose text layer has fewer than `min_chars` visible characters (not whitespace, not
    control characters) is marked `needs_ocr`; its text is kept as found. A page pypdf cannot read
    raises InvalidPdfError naming the page, or PdfLimitError when it trips a safety limit; the file-level
    errors are those of `validate.open_pdf`.
    """
    reader, _ = open_pdf(path)
    with pdf_errors():
        page_count = len(reader.pages)
    pages: list[PageText] = []
    for number in range(1, page_count + 1):
        with pdf_errors(f"Page {number} of the PDF could not be read."):
            text = reader.pages[number - 1].extract_text()
        pages.append(PageText(number=number, text=text, needs_ocr=visible_chars(text) < min_chars))
    return pages


def visible_chars(text: str) -> int:
    """How many characters of `text` would show on a page (printable and not whitespace)."""
    return sum(1 for char in text if char.isprintable() and not char.isspace())
