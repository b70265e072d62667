"""Text PDFs whose reading order is known: two columns, a ruled table, a figure with its caption, Unicode."""

from __future__ import annotations

import io
from collections.abc import Sequence

from PIL import Image
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader, simpleSplit
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen import canvas

from tests.support import pdfs

UNICODE_FONT = "DejaVuSans"
UNICODE_FONT_FILE = "DejaVuSans.ttf"
TABLE_FONT_SIZE_PT = 10.0
TABLE_ROW_PT = 20.0
TABLE_PADDING_PT = 4.0
# Height of a cell's baseline above the rule under its row.
TABLE_BASELINE_PT = 6.0


def figure_pdf(caption: str, figure: Image.Image, *, width_fraction: float) -> bytes:
    """A one-page text PDF: `figure` drawn `width_fraction` of the text width wide, `caption` below it."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1, pageCompression=1)
    width = (A4[0] - 2 * pdfs.MARGIN_PT) * width_fraction
    height = width * figure.height / figure.width
    top = A4[1] - pdfs.MARGIN_PT
    pdf.drawImage(ImageReader(figure), pdfs.MARGIN_PT, top - height, width=width, height=height)
    pdf.setFont(pdfs.FONT_NAME, pdfs.FONT_SIZE_PT)
    pdf.drawString(pdfs.MARGIN_PT, top - height - pdfs.LEADING_PT, caption)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def two_column_text_pdf(left: str, right: str) -> bytes:
    """A one-page PDF with two columns side by side, the left one drawn whole before the right one."""
    return pdfs.two_column_pdf(left, right)


def table_pdf(rows: Sequence[Sequence[str]]) -> bytes:
    """A one-page PDF holding `rows` as a ruled table, drawn row by row and cell by cell, left to right.

    Each column is as wide as its widest cell; the text of a cell stays on one line.
    """
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1, pageCompression=1)
    font, size = pdfs.FONT_NAME, TABLE_FONT_SIZE_PT
    columns = max(len(row) for row in rows)
    widths = [
        max(pdf.stringWidth(row[col], font, size) for row in rows if col < len(row)) + 2 * TABLE_PADDING_PT
        for col in range(columns)
    ]
    edges = [pdfs.MARGIN_PT]
    for width in widths:
        edges.append(edges[-1] + width)
    if edges[-1] > A4[0] - pdfs.MARGIN_PT:
        raise ValueError("table is wider than the page")
    top = A4[1] - pdfs.MARGIN_PT
    pdf.setFont(font, size)
    pdf.setLineWidth(0.5)
    for index, row in enumerate(rows):
        y = top - index * TABLE_ROW_PT
        pdf.line(edges[0], y, edges[-1], y)
        for col, cell in enumerate(row):
            pdf.drawString(edges[col] + TABLE_PADDING_PT, y - TABLE_ROW_PT + TABLE_BASELINE_PT, cell)
    bottom = top - len(rows) * TABLE_ROW_PT
    pdf.line(edges[0], bottom, edges[-1], bottom)
    for x in edges:
        pdf.line(x, top, x, bottom)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def unicode_text_pdf(pages: Sequence[str]) -> bytes:
    """A PDF with `pages` set in DejaVu Sans, an embedded TrueType font that covers Latin and Greek."""
    if UNICODE_FONT not in pdfmetrics.getRegisteredFontNames():
        # reportlab finds a bare file name in the system font folders; the subset it embeds carries a
        # ToUnicode map, which is what lets a reader turn the glyphs back into text.
        pdfmetrics.registerFont(TTFont(UNICODE_FONT, UNICODE_FONT_FILE))
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1, pageCompression=1)
    width = A4[0] - 2 * pdfs.MARGIN_PT
    for text in pages:
        pdf.setFont(UNICODE_FONT, pdfs.FONT_SIZE_PT)
        y = A4[1] - pdfs.MARGIN_PT
        for paragraph in text.split("\n\n"):
            for line in simpleSplit(paragraph, UNICODE_FONT, pdfs.FONT_SIZE_PT, width):
                if y < pdfs.MARGIN_PT:
                    raise ValueError("text does not fit on one page")
                pdf.drawString(pdfs.MARGIN_PT, y, line)
                y -= pdfs.LEADING_PT
            # A blank line between paragraphs.
            y -= pdfs.LEADING_PT
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()
