"""PDF generators for the quality suite: scans with real-world defects, text layouts with a known order."""

from __future__ import annotations

from tests.support.scans.images import (
    PICTURE_KINDS,
    SCAN_DPI,
    PictureKind,
    page_image,
    picture_image,
    picture_page_image,
)
from tests.support.scans.layouts import figure_pdf, table_pdf, two_column_text_pdf, unicode_text_pdf
from tests.support.scans.scan_pdfs import ScanEncoding, concatenate, scan_pdf, self_drawing_form_pdf

__all__ = [
    "PICTURE_KINDS",
    "SCAN_DPI",
    "PictureKind",
    "ScanEncoding",
    "concatenate",
    "figure_pdf",
    "page_image",
    "picture_image",
    "picture_page_image",
    "scan_pdf",
    "self_drawing_form_pdf",
    "table_pdf",
    "two_column_text_pdf",
    "unicode_text_pdf",
]
