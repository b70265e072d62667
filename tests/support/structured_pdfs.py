"""Generated reports with a known structure: headings in a larger bold face, paragraphs, ruled tables."""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field

from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import simpleSplit
from reportlab.pdfgen import canvas

MARGIN_PT = 56.0
BODY_FONT, BODY_SIZE_PT, LEADING_PT = "Helvetica", 11.0, 14.0
HEADING_FONT, HEADING_SIZE_PT = "Helvetica-Bold", 15.0
PARAGRAPH_GAP_PT = 10.0
ROW_PT = 16.0
CELL_PADDING_PT = 4.0


@dataclass(frozen=True)
class Section:
    heading: str
    paragraphs: Sequence[str] = ()
    table: Sequence[Sequence[str]] = field(default_factory=tuple)


def report_pdf(sections: Sequence[Section]) -> bytes:
    """A PDF of `sections` in order, each a heading, its paragraphs and then its table, flowing over
    as many A4 pages as they need (a table row never breaks; a heading never ends a page)."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1, pageCompression=1)
    width = A4[0] - 2 * MARGIN_PT
    y = A4[1] - MARGIN_PT

    def room(needed: float) -> None:
        nonlocal y
        if y - needed < MARGIN_PT:
            pdf.showPage()
            y = A4[1] - MARGIN_PT

    for section in sections:
        room(HEADING_SIZE_PT + 3 * LEADING_PT)
        pdf.setFont(HEADING_FONT, HEADING_SIZE_PT)
        pdf.drawString(MARGIN_PT, y, section.heading)
        y -= HEADING_SIZE_PT + PARAGRAPH_GAP_PT
        for paragraph in section.paragraphs:
            pdf.setFont(BODY_FONT, BODY_SIZE_PT)
            for line in simpleSplit(paragraph, BODY_FONT, BODY_SIZE_PT, width):
                room(LEADING_PT)
                pdf.setFont(BODY_FONT, BODY_SIZE_PT)
                pdf.drawString(MARGIN_PT, y, line)
                y -= LEADING_PT
            y -= PARAGRAPH_GAP_PT
        if section.table:
            y = _table(pdf, section.table, y)
            y -= PARAGRAPH_GAP_PT
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def _table(pdf: canvas.Canvas, rows: Sequence[Sequence[str]], y: float) -> float:
    columns = max(len(row) for row in rows)
    widths = [
        max(pdf.stringWidth(row[c], BODY_FONT, BODY_SIZE_PT) for row in rows if c < len(row))
        + 2 * CELL_PADDING_PT
        for c in range(columns)
    ]
    for row in rows:
        if y - ROW_PT < MARGIN_PT:
            pdf.showPage()
            y = A4[1] - MARGIN_PT
        pdf.setFont(BODY_FONT, BODY_SIZE_PT)
        x = MARGIN_PT
        pdf.line(MARGIN_PT, y + ROW_PT - 4, MARGIN_PT + sum(widths), y + ROW_PT - 4)
        for width, cell in zip(widths, row, strict=False):
            pdf.drawString(x + CELL_PADDING_PT, y, cell)
            x += width
        y -= ROW_PT
    return y


def side_by_side_pdf(left: Sequence[str], right: Sequence[str]) -> bytes:
    """Two columns of prose drawn line by line across the page (left line, then right line), as some
    tools write them: runs side by side on one baseline that are not table cells."""
    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1, pageCompression=1)
    pdf.setFont(BODY_FONT, BODY_SIZE_PT)
    y = A4[1] - MARGIN_PT
    for left_line, right_line in zip(left, right, strict=True):
        pdf.drawString(MARGIN_PT, y, left_line)
        pdf.drawString(A4[0] / 2 + 10, y, right_line)
        y -= LEADING_PT
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()
