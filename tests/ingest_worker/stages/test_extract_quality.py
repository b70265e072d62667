"""Quality of the extract stage: text-layer accuracy on harder layouts, and which pages are sent to OCR."""

from __future__ import annotations

import textwrap
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from ingest_worker.stages.extract import COVERED_PAGE_MIN_CHARS, extract_pages, image_coverage
from ingest_worker.stages.validate import open_pdf
from tests.support import pdfs, scans
from tests.support.text_metrics import character_error_rate

MIN_CHARS = 20
MAX_TEXT_CER = 0.01

LEFT_COLUMN = (
    "The left column opens the article. Readers follow it to the foot of the page before they move "
    "across to the right, so the text layer must keep that order. "
) * 3
RIGHT_COLUMN = (
    "The right column continues the story and closes it. Its lines sit beside those of the left "
    "column, at the same heights, which trips readers that sort text by position. "
) * 3
TABLE = [
    ["Item", "Quantity", "Unit price", "Total"],
    ["Steel bolts M8", "1200", "0.04 EUR", "48.00 EUR"],
    ["Washers", "1200", "0.01 EUR", "12.00 EUR"],
    ["Hex nuts M8", "600", "0.03 EUR", "18.00 EUR"],
    ["Shipping", "1", "25.00 EUR", "25.00 EUR"],
    ["Sum", "", "", "103.00 EUR"],
]
NON_ASCII = (
    "Deutsch: Größere Übungen für Äpfel, Öl und Straße; Bücher über Mäuse.\n\n"
    "Français : L'été à Noël, où l'on célèbre la fête ; garçon, façade, œuvre, naïve. Ça va très bien.\n\n"
    "Polski: Zażółć gęślą jaźń. Łódź, Gdańsk, Kraków, Wrocław i Poznań leżą w Polsce.\n\n"
    "Ελληνικά: Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο."  # noqa: RUF001 (Greek on purpose)
)
SCAN_TEXT = (
    "Minutes of the works council, third of March. The council agreed the holiday rota for the summer "
    "and asked the board to publish the new travel policy before the end of the month."
)
# More than MIN_CHARS, far fewer than a page of text: what scanners and mailrooms print on a scan.
STAMP = "Scanned 2024-03-01 10:32 by the mailroom, page 3 of 12"


@cache
def scan_image() -> Image.Image:
    """A 150 dpi scanned page, shared by the tests that need some scan and not a particular one."""
    return scans.page_image(SCAN_TEXT, dpi=150)


def _table_text(rows: list[list[str]]) -> str:
    return " ".join(cell for row in rows for cell in row if cell)


TEXT_CASES = {
    "two columns, drawn one after the other": (
        lambda: scans.two_column_text_pdf(LEFT_COLUMN, RIGHT_COLUMN),
        LEFT_COLUMN + " " + RIGHT_COLUMN,
    ),
    "a ruled table, drawn row by row": (lambda: scans.table_pdf(TABLE), _table_text(TABLE)),
    "German, French, Polish and Greek in an embedded TrueType font": (
        lambda: scans.unicode_text_pdf([NON_ASCII]),
        NON_ASCII,
    ),
}


@pytest.mark.parametrize("case", list(TEXT_CASES))
def test_the_text_layer_is_extracted_within_one_percent(tmp_path: Path, case: str) -> None:
    # Given a one-page text PDF with a harder layout, and the text as it was drawn
    generate, expected = TEXT_CASES[case]
    path = pdfs.write_pdf(tmp_path, generate())

    # When extracted
    (page,) = extract_pages(path, min_chars=MIN_CHARS)

    # Then the text matches in drawing order with a character error rate of at most 1%, without OCR
    cer = character_error_rate(expected, page.text)
    print(f"extract {case}: CER {cer:.2%}")
    assert cer <= MAX_TEXT_CER
    assert page.needs_ocr is False


SCAN_VARIANTS: dict[str, dict[str, Any]] = {
    "a visible stamp": {"text_layer": STAMP},
    "an invisible stamp": {"text_layer": STAMP, "invisible_text": True},
    "a stamp, the scan inside a form": {"text_layer": STAMP, "in_form": True},
    "a stamp, the page turned by /Rotate": {"text_layer": STAMP, "page_rotate": 90},
    "a page number only": {"text_layer": "- 3 -"},
}


@pytest.mark.parametrize("variant", list(SCAN_VARIANTS))
def test_a_scan_with_a_tiny_text_layer_is_marked_for_ocr(tmp_path: Path, variant: str) -> None:
    # Given a page covered by a scan whose text layer holds only a line such as a scanner's stamp
    path = pdfs.write_pdf(tmp_path, scans.scan_pdf(scan_image(), dpi=150, **SCAN_VARIANTS[variant]))

    # When extracted
    (page,) = extract_pages(path, min_chars=MIN_CHARS)

    # Then the page is marked for OCR, and the stamp is kept as found until OCR replaces it
    assert page.needs_ocr is True
    assert page.text.strip() == SCAN_VARIANTS[variant]["text_layer"]


def test_a_searchable_scan_keeps_its_text_layer(tmp_path: Path) -> None:
    # Given a scan carrying another tool's invisible OCR layer with the page's full text
    hidden = "\n".join(textwrap.wrap(SCAN_TEXT + " " + SCAN_TEXT, 90))
    assert len(hidden) > COVERED_PAGE_MIN_CHARS
    data = scans.scan_pdf(scan_image(), dpi=150, text_layer=hidden, invisible_text=True)
    path = pdfs.write_pdf(tmp_path, data)

    # When extracted
    (page,) = extract_pages(path, min_chars=MIN_CHARS)

    # Then the layer is trusted: no second OCR, and its text comes out within 1%
    assert page.needs_ocr is False
    assert character_error_rate(SCAN_TEXT + " " + SCAN_TEXT, page.text) <= MAX_TEXT_CER


def test_a_text_page_with_a_figure_and_a_short_caption_is_not_ocred(tmp_path: Path) -> None:
    # Given a page holding a figure a third of the text width wide and a one-line caption
    caption = "Figure 1: Monthly shipments by region, first quarter."
    path = pdfs.write_pdf(tmp_path, scans.figure_pdf(caption, scan_image(), width_fraction=0.33))

    # When extracted
    (page,) = extract_pages(path, min_chars=MIN_CHARS)

    # Then the caption is the page's text and the page is not sent to OCR
    assert page.needs_ocr is False
    assert page.text.strip() == caption


def test_image_coverage_counts_the_area_images_are_drawn_over(tmp_path: Path) -> None:
    # Given a full-page scan, the same scan inside a form, and a page with a small figure
    full = pdfs.write_pdf(tmp_path, scans.scan_pdf(scan_image(), dpi=150), "full.pdf")
    form = pdfs.write_pdf(tmp_path, scans.scan_pdf(scan_image(), dpi=150, in_form=True), "form.pdf")
    figure = pdfs.write_pdf(
        tmp_path, scans.figure_pdf("Figure 1.", scan_image(), width_fraction=0.33), "figure.pdf"
    )

    # When their coverage is measured
    def coverage(path: str) -> float:
        reader, _ = open_pdf(path)
        return image_coverage(reader, reader.pages[0])

    # Then the scans cover the page, and the figure about its share of it (a third of the text width,
    # a third of it again in height, on a page with margins: about 6%)
    assert coverage(full) == 1.0
    assert coverage(form) == 1.0
    assert 0.03 <= coverage(figure) <= 0.1


def test_a_form_that_draws_itself_is_cut_short(tmp_path: Path) -> None:
    # Given a page whose form draws an image and then itself twice, for ever
    path = pdfs.write_pdf(tmp_path, scans.self_drawing_form_pdf(STAMP))

    # When extracted, Then the walk stops within its budget, and the covered page goes to OCR
    (page,) = extract_pages(path, min_chars=MIN_CHARS)
    assert page.needs_ocr is True


def test_the_scan_generators_are_deterministic() -> None:
    # Given each encoding of the same small scan, generated twice, Then the bytes are the same
    for encoding in ("flate", "jpeg", "ccitt"):
        first = scans.scan_pdf(scans.page_image(SCAN_TEXT, dpi=72), dpi=72, encoding=encoding)
        again = scans.scan_pdf(scans.page_image(SCAN_TEXT, dpi=72), dpi=72, encoding=encoding)
        assert first == again
