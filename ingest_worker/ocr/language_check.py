"""The start-up check that tesseract has every language uploads may ask for."""

from __future__ import annotations

import logging

import pytesseract

from shared import ocr_languages
from shared.settings import Settings

logger = logging.getLogger(__name__)


class OcrLanguagesMissingError(RuntimeError):
    """Tesseract lacks languages the service offers: the worker refuses to start."""


def check_ocr_languages(settings: Settings) -> None:
    """Raise OcrLanguagesMissingError naming every language of `ocr_available_languages` (and the
    default `ocr_languages`, and `osd`) that tesseract does not have, or tesseract itself when it is
    not installed; the gateway accepts uploads in those languages, which this worker could not read."""
    wanted = ",".join([settings.ocr_available_languages, *settings.ocr_languages.split("+")])
    try:
        installed = set(pytesseract.get_languages(config=""))
    except pytesseract.TesseractNotFoundError as exc:
        raise OcrLanguagesMissingError(
            "tesseract is not installed (make tesseract, or apt-get install tesseract-ocr and the"
            " tesseract-ocr-<lang> packs of INGEST_OCR_AVAILABLE_LANGUAGES)"
        ) from exc
    absent = list(dict.fromkeys(ocr_languages.missing(wanted, installed)))
    if absent:
        raise OcrLanguagesMissingError(
            f"tesseract lacks the OCR language(s) {', '.join(absent)} (installed: "
            f"{', '.join(sorted(installed)) or 'none'}): install tesseract-ocr-<lang> for each (make "
            "tesseract does), or take them out of INGEST_OCR_AVAILABLE_LANGUAGES"
        )
    logger.info("tesseract has every OCR language offered: %s", settings.ocr_available_languages)
