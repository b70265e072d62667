"""Another tool's invisible OCR layer (a "sandwich" PDF): kept when it reads as text, else read again."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from PIL import Image

from ingest_worker.stages.extract import extract_pages
from ingest_worker.stages.ocr import ocr_pages
from tests.support import pdfs, scans
from tests.support.ocr_texts import ENGLISH
from tests.support.text_metrics import character_error_rate

# What a failed OCR of the page left as its layer: crumbs, symbols and cases mixed at random.
GARBAGE_LAYER = "\n".join(
    ["Mis oe Ss ee 2 Ft TT fT = = = rs att al Ge LSE"] * 4
    + ["es pal es a Cad =e ~ wT aa' PRR NG ORR ANS Se"] * 4
)
GOOD_LAYER = "\n".join(line for line in ENGLISH.replace("\n\n", "\n").split(". ") if line)


@cache
def page_scan() -> Image.Image:
    return scans.page_image(ENGLISH)


def test_a_plausible_invisible_layer_is_kept_and_a_garbage_one_read_again(tmp_path: Path) -> None:
    # Given a scan whose invisible layer is good text, the same scan with a garbage invisible layer,
    # and a page whose garbage is drawn visibly (a real, if odd, text layer)
    pages = [
        scans.scan_pdf(page_scan(), text_layer=GOOD_LAYER, invisible_text=True),
        scans.scan_pdf(page_scan(), text_layer=GARBAGE_LAYER, invisible_text=True),
        scans.scan_pdf(page_scan(), text_layer=GARBAGE_LAYER, invisible_text=False),
    ]
    path = pdfs.write_pdf(tmp_path, scans.concatenate(pages))

    # When extracted
    extracted = extract_pages(path, min_chars=20)

    # Then only the page with the garbage invisible layer is marked for OCR
    assert [page.needs_ocr for page in extracted] == [False, True, False]
    assert character_error_rate(GOOD_LAYER, extracted[0].text) <= 0.01


def test_a_garbage_invisible_layer_in_a_form_is_found_too(tmp_path: Path) -> None:
    # Given a garbage invisible layer drawn from inside a form XObject, as OCR tools graft their layer
    content = b"q /Fm0 Do Q\n"
    layer = b"BT /F1 8 Tf 3 Tr 36 700 Td 10 TL"
    for line in GARBAGE_LAYER.splitlines():
        layer += b" (%s) '" % line.encode("ascii")
    layer += b" ET"
    form = (
        b"<< /Type /XObject /Subtype /Form /BBox [0 0 595 842] /Resources << /Font << /F1 6 0 R >> >>"
        b" /Length %d >>\nstream\n%s\nendstream" % (len(layer), layer)
    )
    data = pdfs.raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R"
            b" /Resources << /XObject << /Fm0 5 0 R >> >> >>",
            b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
            form,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        ]
    )
    path = pdfs.write_pdf(tmp_path, data)

    # When extracted, Then the page is marked for OCR
    assert [page.needs_ocr for page in extract_pages(path, min_chars=20)] == [True]


@pytest.mark.ocr
def test_the_page_under_a_garbage_layer_is_read_by_ocr(tmp_path: Path) -> None:
    # Given the scan with a garbage invisible layer
    path = pdfs.write_pdf(
        tmp_path, scans.scan_pdf(page_scan(), text_layer=GARBAGE_LAYER, invisible_text=True)
    )

    # When the page marked for OCR is read, Then OCR gives the scan's own text
    assert extract_pages(path, min_chars=20)[0].needs_ocr
    text = ocr_pages(path, [1], dpi=scans.SCAN_DPI, languages="eng", timeout_s=120)[1]
    assert character_error_rate(ENGLISH, text) <= 0.03
