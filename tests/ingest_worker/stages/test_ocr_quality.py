"""Quality of the OCR stage on 300 dpi scans with real-world defects: skew, rotation, JPEG and CCITT.

The scans here are English; German and French scans are read through the API in test_ocr_accuracy.py,
and the non-ASCII text layers are covered by the tests of the extract stage.
"""

from __future__ import annotations

import resource
import time
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from ingest_worker.stages.extract import extract_pages
from ingest_worker.stages.ocr import MIN_SKEW_DEGREES, deskew, estimate_skew, ocr_pages
from tests.support import pdfs, scans
from tests.support.text_metrics import character_error_rate

DPI = scans.SCAN_DPI
MAX_OCR_CER = 0.03
MAX_TEXT_CER = 0.01
# The budget for a deskew is 0.2 CPU-s a page (about 0.1 measured); the bound leaves room for slow CI.
MAX_DESKEW_CPU_S = 0.5

SCAN_TEXT = (
    "Scanned documents reach the service as images. The pipeline renders each page without a text "
    "layer and hands it to tesseract, which returns plain text.\n\n"
    "Quality depends on resolution: at three hundred dots per inch, clean print is read almost "
    "without mistakes. Numbers such as 2024, 17.5 and 42 must survive as well.\n\n"
    "Invoices are due within thirty days of receipt. Late payments accrue interest at two percent "
    "per month. All amounts are stated in euros and include value added tax where applicable."
)
STAMP = "Scanned 2024-03-01 10:32 by the mailroom, page 3 of 12"


@pytest.fixture(autouse=True)
def single_threaded_tesseract(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tesseract with one OpenMP thread, as workers run it (Settings.export_child_environment).

    The CPU figures printed below mean something only under the production setting, and OpenMP threads
    make tesseract several times slower on small machines.
    """
    monkeypatch.setenv("OMP_THREAD_LIMIT", "1")


@cache
def scan_image(skew_degrees: float = 0.0) -> Image.Image:
    """SCAN_TEXT scanned at 300 dpi, tilted by `skew_degrees`, shared between tests (it takes 0.3 s)."""
    return scans.page_image(SCAN_TEXT, skew_degrees=skew_degrees)


def cpu_seconds() -> tuple[float, float]:
    """CPU seconds used so far by this process, and by its finished children (tesseract)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


def read_page(path: str, number: int) -> tuple[str, float, float]:
    """The OCR text of one page, with the CPU seconds spent here (render, deskew) and in tesseract."""
    own_before, children_before = cpu_seconds()
    text = ocr_pages(path, [number], dpi=DPI, languages="eng", timeout_s=60)[number]
    own_after, children_after = cpu_seconds()
    return text, own_after - own_before, children_after - children_before


SCAN_CASES: dict[str, tuple[float, dict[str, Any]]] = {
    "clean": (0.0, {}),
    "skewed +2 degrees": (2.0, {}),
    "skewed -3.5 degrees": (-3.5, {}),
    "skewed +5 degrees": (5.0, {}),
    "image turned 90": (0.0, {"content_turn": 90}),
    "image turned 180": (0.0, {"content_turn": 180}),
    "image turned 270": (0.0, {"content_turn": 270}),
    "/Rotate 90": (0.0, {"page_rotate": 90}),
    "/Rotate 180": (0.0, {"page_rotate": 180}),
    "/Rotate 270": (0.0, {"page_rotate": 270}),
    "JPEG q75": (0.0, {"encoding": "jpeg"}),
    "JPEG q75 skewed -4 degrees": (-4.0, {"encoding": "jpeg"}),
    "CCITT G4": (0.0, {"encoding": "ccitt"}),
    "CCITT G4 skewed +3 degrees": (3.0, {"encoding": "ccitt"}),
}


@pytest.mark.ocr
@pytest.mark.parametrize("case", list(SCAN_CASES))
def test_a_300_dpi_scan_is_read_within_three_percent(tmp_path: Path, case: str) -> None:
    # Given a one-page 300 dpi scan with the case's defect
    skew, options = SCAN_CASES[case]
    path = pdfs.write_pdf(tmp_path, scans.scan_pdf(scan_image(skew), **options))

    # When the page is OCRed
    text, own_cpu, tesseract_cpu = read_page(path, 1)

    # Then the text comes back with a character error rate of at most 3%
    cer = character_error_rate(SCAN_TEXT, text)
    print(f"OCR {case}: CER {cer:.2%}, CPU {own_cpu:.2f} s render+deskew + {tesseract_cpu:.2f} s tesseract")
    assert cer <= MAX_OCR_CER


@pytest.mark.ocr
def test_a_mixed_document_is_read_page_by_page(tmp_path: Path) -> None:
    # Given a document mixing text pages, a skewed JPEG scan with a mailroom's invisible stamp, a CCITT
    # scan stored turned with /Rotate, and a searchable scan that already carries its text invisibly
    searchable = "\n".join(SCAN_TEXT.replace("\n\n", " ").split(". "))
    pages = [
        pdfs.text_pdf([SCAN_TEXT]),
        scans.scan_pdf(scan_image(-4.0), encoding="jpeg", text_layer=STAMP, invisible_text=True),
        scans.unicode_text_pdf(["Größe, façade, Łódź: Ελληνικά. " * 4]),
        scans.scan_pdf(scan_image(), encoding="ccitt", page_rotate=270),
        scans.scan_pdf(scan_image(), dpi=DPI, text_layer=searchable, invisible_text=True),
    ]
    path = pdfs.write_pdf(tmp_path, scans.concatenate(pages))

    # When extracted, and the pages marked for OCR are OCRed
    extracted = extract_pages(path, min_chars=20)
    wanted = [page.number for page in extracted if page.needs_ocr]
    texts = ocr_pages(path, wanted, dpi=DPI, languages="eng", timeout_s=60)

    # Then exactly the two scans without a usable layer are OCRed, each within 3%, and the text layers
    # are kept within 1%
    assert wanted == [2, 4]
    stamped_cer = character_error_rate(SCAN_TEXT, texts[2])
    rotated_cer = character_error_rate(SCAN_TEXT, texts[4])
    print(f"OCR mixed: stamped JPEG CER {stamped_cer:.2%}, CCITT /Rotate 270 CER {rotated_cer:.2%}")
    assert stamped_cer <= MAX_OCR_CER
    assert rotated_cer <= MAX_OCR_CER
    assert character_error_rate(SCAN_TEXT, extracted[0].text) <= MAX_TEXT_CER
    assert character_error_rate("Größe, façade, Łódź: Ελληνικά. " * 4, extracted[2].text) <= MAX_TEXT_CER
    assert character_error_rate(searchable, extracted[4].text) <= MAX_TEXT_CER


@pytest.mark.parametrize("skew", [-5.0, -3.5, -2.0, 2.0, 3.5, 5.0])
@pytest.mark.parametrize("sideways", [False, True], ids=["upright", "sideways"])
def test_the_skew_of_a_scan_is_estimated_within_a_fifth_of_a_degree(skew: float, sideways: bool) -> None:
    # Given a scan tilted by `skew`, possibly of a sheet fed sideways (its lines run down the page)
    image = scan_image(skew)
    if sideways:
        image = image.rotate(90, expand=True)

    # When its skew is estimated, Then it is found within 0.2 degrees
    assert estimate_skew(image, DPI) == pytest.approx(skew, abs=0.2)


def test_a_straight_page_is_left_as_it_is() -> None:
    # Given a straight scan, When deskewed, Then the very same image comes back (no resampling)
    image = scan_image()
    assert abs(estimate_skew(image, DPI)) < MIN_SKEW_DEGREES
    assert deskew(image, DPI) is image


def test_pages_without_lines_of_text_are_not_turned() -> None:
    # Given a blank page, a page of pure noise and a page of solid ink
    size = scan_image().size
    noise = np.random.default_rng(7).integers(0, 256, size=(size[1], size[0]), dtype=np.uint8)
    pages = [Image.new("L", size, 255), Image.fromarray(noise, mode="L"), Image.new("L", size, 0)]

    # When their skew is estimated, Then none is found
    assert [estimate_skew(page, DPI) for page in pages] == [0.0, 0.0, 0.0]


def test_a_deskew_stays_within_its_cpu_budget() -> None:
    # Given a 300 dpi scan tilted by 3.5 degrees
    image = scan_image(-3.5)

    # When deskewed
    started = time.process_time()
    straight = deskew(image, DPI)
    spent = time.process_time() - started

    # Then it costs a fraction of tesseract's 2.2 CPU-s a page, and the result is straight
    print(f"deskew of a 300 dpi page: {spent:.3f} CPU-s")
    assert spent < MAX_DESKEW_CPU_S
    assert abs(estimate_skew(straight, DPI)) < MIN_SKEW_DEGREES
