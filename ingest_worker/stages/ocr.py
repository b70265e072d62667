"""The OCR stage: render the pages without a usable text layer and read them with tesseract."""

from __future__ import annotations

import math
import re
import threading
from typing import Any, cast

import numpy as np
import pypdfium2 as pdfium
import pytesseract
from PIL import Image

from ingest_worker.pipeline_errors import (
    OcrFailedError,
    OcrUnavailableError,
    PageCountMismatchError,
    ProcessingTimeoutError,
)
from ingest_worker.stages.ocr_confidence import ConfidenceRule, PageReading, confident_text, words_from_data
from ingest_worker.stages.parser_errors import pdfium_errors

POINTS_PER_INCH = 72
# A4 at 300 dpi is 8.7 million pixels. Larger pages (posters, hostile MediaBoxes) are rendered at a
# lower resolution that fits this budget, which bounds the memory of pdfium and tesseract.
MAX_PAGE_PIXELS = 40_000_000
# Page segmentation 1: automatic layout with orientation and script detection. It costs about 10% more
# CPU than mode 3 and reads pages scanned sideways or upside down, which mode 3 turns into noise.
TESSERACT_PSM = 1
# Tesseract follows lines tilted by up to about 2 degrees, but from about 3 degrees on it cuts a
# paragraph into fragments and loses whole pages (measured on 300 dpi A4 scans): pages tilted by more
# than MIN_SKEW_DEGREES are turned straight first. Feeders seldom tilt a sheet beyond MAX_SKEW_DEGREES.
MIN_SKEW_DEGREES = 0.5
MAX_SKEW_DEGREES = 10.0
# The skew is searched on a copy of about this resolution: enough to place a line to a tenth of a
# degree across an A4 page, and 16 times fewer pixels than a 300 dpi render. Pages far larger than A4
# are reduced further, to about _SKEW_SEARCH_PIXELS.
_SKEW_SEARCH_DPI = 75
_SKEW_SEARCH_PIXELS = 1_000_000
_COARSE_STEP_DEGREES = 0.5
_FINE_STEP_DEGREES = 0.05
# Grey levels below this count as ink. Pages mostly ink (photos, inverted scans) are left alone.
_INK_LEVEL = 128
_MAX_INK_FRACTION = 0.5
_MIN_INK_PIXELS = 200
# A true tilt concentrates the ink of each line in a few rows; the best angle must beat 0 degrees by
# this factor, so pages without lines of text (noise, drawings) are not turned at random.
_MIN_SKEW_GAIN = 1.1
_LANGUAGES = re.compile(r"[A-Za-z0-9_]+(\+[A-Za-z0-9_]+)*")

# PDFium is not thread-safe, not even across documents: every call into it goes through this lock.
# Tesseract runs outside it, so worker threads still OCR in parallel.
_PDFIUM_LOCK = threading.Lock()


# Every word tesseract reads, whatever its confidence: the rule of `ocr_pages` when none is given.
KEEP_EVERY_WORD = ConfidenceRule(
    min_word_confidence_pct=0, min_line_confident_pct=0, min_line_chars=0, min_page_words=0
)


def ocr_pages(
    path: str,
    page_numbers: list[int],
    *,
    dpi: int,
    languages: str,
    timeout_s: int,
    rule: ConfidenceRule = KEEP_EVERY_WORD,
) -> dict[int, str]:
    """The OCR text of the given 1-based pages of the PDF at `path`, keyed by page number (see
    `read_pages`, whose texts these are)."""
    readings = read_pages(path, page_numbers, dpi=dpi, languages=languages, timeout_s=timeout_s, rule=rule)
    return {number: reading.text for number, reading in readings.items()}


def read_pages(
    path: str,
    page_numbers: list[int],
    *,
    dpi: int,
    languages: str,
    timeout_s: int,
    rule: ConfidenceRule,
) -> dict[int, PageReading]:
    """What OCR read on the given 1-based pages of the PDF at `path`, keyed by page number.

    Each page is rendered in greyscale at `dpi` (lower for pages too large for the pixel budget) with its
    /Rotate applied, turned straight when its lines are tilted (see `deskew`; tesseract itself turns
    pages lying sideways or upside down), and read by tesseract in `languages` ("eng", "eng+deu"), with
    `timeout_s` per page. Raises EncryptedPdfError or InvalidPdfError (PageRenderError and the
    other codes of `parser_errors`) when pdfium cannot open or render the file, ProcessingTimeoutError
    when a page runs out of time, OcrFailedError when tesseract fails. Only the words `rule` finds
    confident are kept (see `ocr_confidence.confident_text`): a page of pictures without text reads as "".
    """
    if dpi <= 0 or timeout_s <= 0:
        raise ValueError("dpi and timeout_s must be positive")
    if not _LANGUAGES.fullmatch(languages):
        raise ValueError(f"tesseract languages look like 'eng' or 'eng+deu', got {languages!r}")
    # Tesseract's OpenMP threads make it 4-5x slower in CPU on small machines. pytesseract starts it with
    # this process's environment and takes no per-call one: the worker's entry point sets
    # OMP_THREAD_LIMIT there (Settings.export_child_environment).
    readings: dict[int, PageReading] = {}
    with _PdfiumDocument(path) as document:
        for number in sorted(set(page_numbers)):
            image, used_dpi = document.render(number, dpi)
            # Outside the pdfium lock: the skew search is numpy and Pillow work on our own copy.
            image = deskew(image, used_dpi)
            data = _recognise(image, number, dpi=used_dpi, languages=languages, timeout_s=timeout_s)
            readings[number] = confident_text(words_from_data(data), rule)
    return readings


class _PdfiumDocument:
    """A pdfium document opened, rendered from and closed under the pdfium lock."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._document: pdfium.PdfDocument | None = None

    def __enter__(self) -> _PdfiumDocument:
        with _PDFIUM_LOCK, pdfium_errors():
            self._document = pdfium.PdfDocument(self._path)
        return self

    def __exit__(self, *exc_info: object) -> None:
        with _PDFIUM_LOCK:
            if self._document is not None:
                self._document.close()
                self._document = None

    def render(self, number: int, dpi: int) -> tuple[Image.Image, int]:
        """Page `number` as a greyscale image, and the dpi it was rendered at."""
        assert self._document is not None
        # Errors pypdfium2 raises are the file's; any other error in the block stays unclassified.
        with _PDFIUM_LOCK, pdfium_errors(f"Page {number} of the PDF could not be rendered."):
            if number < 1:
                raise ValueError(f"page {number} is not in the document")
            if number > len(self._document):
                # pypdf counted more pages in the page tree than pdfium finds in the same file.
                raise PageCountMismatchError(f"Page {number} of the PDF is missing from its page tree.")
            page = self._document[number - 1]
            try:
                width_pt, height_pt = page.get_size()
                scale = _scale_for(width_pt, height_pt, dpi)
                bitmap = page.render(scale=scale, grayscale=True)
                try:
                    # to_pil shares the bitmap's buffer: copy before pdfium frees it.
                    image = bitmap.to_pil().convert("L")
                finally:
                    bitmap.close()
            finally:
                page.close()
        return image, max(1, round(scale * POINTS_PER_INCH))


def _scale_for(width_pt: float, height_pt: float, dpi: int) -> float:
    scale = dpi / POINTS_PER_INCH
    area_pt = max(width_pt * height_pt, 1.0)
    if area_pt * scale * scale > MAX_PAGE_PIXELS:
        scale = math.sqrt(MAX_PAGE_PIXELS / area_pt)
    return scale


def deskew(image: Image.Image, dpi: int) -> Image.Image:
    """`image` (greyscale, at `dpi`) turned so its text lines run straight; the same image when they
    already do, or when it shows no lines to go by."""
    skew = estimate_skew(image, dpi)
    if abs(skew) < MIN_SKEW_DEGREES:
        return image
    # Expanding keeps the corners a turn would cut off; the new corners are paper-white.
    return image.rotate(-skew, resample=Image.Resampling.BILINEAR, expand=True, fillcolor=255)


def estimate_skew(image: Image.Image, dpi: int) -> float:
    """The angle in degrees (counter-clockwise) by which the text lines of greyscale `image` are tilted.

    Lines may run across the page or, on a sheet scanned sideways, along it: both are searched, as the
    same turn straightens either. 0.0 when the page shows no clear lines. A projection-profile search:
    the ink is projected across the lines at each candidate angle, and the angle whose profile is the
    most peaked (largest sum of squared row counts) wins, first in coarse steps and then in fine ones.
    """
    area_factor = math.ceil(math.sqrt(image.width * image.height / _SKEW_SEARCH_PIXELS))
    factor = max(1, dpi // _SKEW_SEARCH_DPI, area_factor)
    small = np.asarray(image.reduce(factor) if factor > 1 else image)
    rows, cols = np.nonzero(small < _INK_LEVEL)
    if not _MIN_INK_PIXELS <= rows.size <= _MAX_INK_FRACTION * small.size:
        return 0.0
    # Centred coordinates keep the projected positions small whatever the angle.
    y = rows.astype(np.float64) - small.shape[0] / 2
    x = cols.astype(np.float64) - small.shape[1] / 2

    def peakedness(degrees: float, along: bool) -> float:
        slope = math.tan(math.radians(degrees))
        # In image rows (y grows downwards) a line tilted counter-clockwise rises to the right.
        position = x - y * slope if along else y + x * slope
        bins = np.rint(position - position.min()).astype(np.int64)
        counts = np.bincount(bins).astype(np.float64)
        return float(np.dot(counts, counts))

    coarse = np.arange(-MAX_SKEW_DEGREES, MAX_SKEW_DEGREES + _COARSE_STEP_DEGREES / 2, _COARSE_STEP_DEGREES)
    score, best, along = max((peakedness(d, a), float(d), a) for a in (False, True) for d in coarse)
    fine = np.arange(best - _COARSE_STEP_DEGREES, best + _COARSE_STEP_DEGREES * 1.01, _FINE_STEP_DEGREES)
    score, best = max((peakedness(float(d), along), float(d)) for d in fine)
    if score < _MIN_SKEW_GAIN * peakedness(0.0, along):
        return 0.0
    return round(best, 2)


def _recognise(
    image: Image.Image, number: int, *, dpi: int, languages: str, timeout_s: int
) -> dict[str, list[Any]]:
    # PPM is written without compression, much faster than pytesseract's PNG default; PPM carries no
    # resolution, so tesseract is told it explicitly.
    image.format = "PPM"
    config = f"--psm {TESSERACT_PSM} --dpi {dpi}"
    try:
        # The words with their confidences and places (tesseract's TSV output): the same recognition
        # as plain text output, at the same cost.
        data = pytesseract.image_to_data(
            image, lang=languages, config=config, timeout=timeout_s, output_type=pytesseract.Output.DICT
        )
    except pytesseract.TesseractNotFoundError as exc:
        raise OcrUnavailableError() from exc
    except pytesseract.TesseractError as exc:
        raise OcrFailedError(f"OCR of page {number} failed.") from exc
    except RuntimeError as exc:
        # pytesseract kills tesseract at the timeout and raises a bare RuntimeError.
        if "timeout" in str(exc).lower():
            raise ProcessingTimeoutError(f"OCR of page {number} took longer than {timeout_s} s.") from exc
        raise OcrFailedError(f"OCR of page {number} failed.") from exc
    return cast(dict[str, list[Any]], data)
