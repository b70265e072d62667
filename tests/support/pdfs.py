"""Small, deterministic PDF generators for tests: text pages, scanned pages, mixes and broken files."""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Collection
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont
from reportlab.lib.pagesizes import A4
from reportlab.lib.pdfencrypt import StandardEncryption
from reportlab.lib.utils import ImageReader
from reportlab.pdfgen import canvas

PAGE_WIDTH_PT, PAGE_HEIGHT_PT = A4
MARGIN_PT = 56.0
FONT_NAME = "Helvetica"
FONT_SIZE_PT = 11.0
LEADING_PT = 14.0
SCAN_FONT_SIZE_PT = 12.0


def text_pdf(pages: list[str]) -> bytes:
    """A PDF whose pages carry `pages` as a real text layer (paragraphs split on blank lines)."""
    return mixed_pdf(pages, scanned=())


def scanned_pdf(pages: list[str], dpi: int = 300, upside_down: bool = False) -> bytes:
    """A PDF whose pages are images of `pages` rendered at `dpi`, with no text layer.

    `upside_down` turns the images (not the pages) by 180 degrees, like a sheet fed the wrong way.
    """
    return mixed_pdf(pages, scanned=range(1, len(pages) + 1), dpi=dpi, upside_down=upside_down)


def mixed_pdf(pages: list[str], scanned: Collection[int], dpi: int = 300, upside_down: bool = False) -> bytes:
    """A PDF where the 1-based page numbers in `scanned` are images and the others are text."""
    pdf, buffer = _canvas()
    for number, text in enumerate(pages, start=1):
        if number in scanned:
            _draw_scan(pdf, text, dpi, upside_down)
        else:
            _draw_text(pdf, text, x=MARGIN_PT, width=PAGE_WIDTH_PT - 2 * MARGIN_PT)
        pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def two_column_pdf(left: str, right: str) -> bytes:
    """A one-page PDF with two text columns side by side, to check reading order."""
    pdf, buffer = _canvas()
    gutter = 24.0
    column = (PAGE_WIDTH_PT - 2 * MARGIN_PT - gutter) / 2
    _draw_text(pdf, left, x=MARGIN_PT, width=column)
    _draw_text(pdf, right, x=MARGIN_PT + column + gutter, width=column)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def encrypted_pdf(text: str, password: str) -> bytes:
    """A one-page text PDF encrypted (RC4-128) with user password `password` ("" opens without one)."""
    # A distinct owner password keeps the file encrypted even when the user password is empty.
    encryption = StandardEncryption(password, ownerPassword="owner-secret", strength=128)
    pdf, buffer = _canvas(encrypt=encryption)
    _draw_text(pdf, text, x=MARGIN_PT, width=PAGE_WIDTH_PT - 2 * MARGIN_PT)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def truncated_pdf() -> bytes:
    """A text PDF cut off in the middle: no cross-reference table, no trailer, half its objects."""
    whole = text_pdf(["This document was cut short in transit."] * 3)
    return whole[: len(whole) // 2]


def empty_pages_pdf() -> bytes:
    """A syntactically valid PDF whose page tree holds no pages."""
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [] /Count 0 >>",
        ]
    )


def flate_bomb_pdf(decompressed_mb: int = 100) -> bytes:
    """A one-page PDF whose content stream inflates to `decompressed_mb` megabytes of zeros."""
    payload = zlib.compress(b"\0" * (decompressed_mb * 1024 * 1024), 9)
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(payload) + payload + b"\nendstream"
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R"
            b" /Resources << /Font << /F1 5 0 R >> >> >>",
            stream,
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def write_pdf(directory: Path, data: bytes, name: str = "document.pdf") -> str:
    """Write `data` to `directory/name` and return the path as the stages take it."""
    path = directory / name
    path.write_bytes(data)
    return str(path)


def _canvas(encrypt: StandardEncryption | None = None) -> tuple[canvas.Canvas, io.BytesIO]:
    buffer = io.BytesIO()
    # invariant=1 fixes the creation date and document id, so the same input gives the same bytes.
    pdf = canvas.Canvas(buffer, pagesize=A4, invariant=1, pageCompression=1, encrypt=encrypt)
    return pdf, buffer


def _draw_text(pdf: canvas.Canvas, text: str, *, x: float, width: float) -> None:
    pdf.setFont(FONT_NAME, FONT_SIZE_PT)
    y = PAGE_HEIGHT_PT - MARGIN_PT
    for line in _wrap(text, lambda s: pdf.stringWidth(s, FONT_NAME, FONT_SIZE_PT), width):
        if y < MARGIN_PT:
            raise ValueError("text does not fit on one page")
        if line:
            pdf.drawString(x, y, line)
        y -= LEADING_PT


def _draw_scan(pdf: canvas.Canvas, text: str, dpi: int, upside_down: bool) -> None:
    image = render_page_image(text, dpi)
    if upside_down:
        image = image.rotate(180)
    pdf.drawImage(ImageReader(image), 0, 0, width=PAGE_WIDTH_PT, height=PAGE_HEIGHT_PT)


def render_page_image(text: str, dpi: int) -> Image.Image:
    """`text` typeset on a white A4 greyscale image at `dpi`, as a scanner would deliver it."""
    px_per_pt = dpi / 72
    size = (round(PAGE_WIDTH_PT * px_per_pt), round(PAGE_HEIGHT_PT * px_per_pt))
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    font = _scan_font(round(SCAN_FONT_SIZE_PT * px_per_pt))
    margin = MARGIN_PT * px_per_pt
    y = margin
    for line in _wrap(text, font.getlength, size[0] - 2 * margin):
        if y > size[1] - margin:
            raise ValueError("text does not fit on one page")
        draw.text((margin, y), line, fill=0, font=font)
        y += SCAN_FONT_SIZE_PT * 1.4 * px_per_pt
    return image


def _scan_font(size_px: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    try:
        # Pillow searches the system font folders for a bare file name.
        return ImageFont.truetype("DejaVuSans.ttf", size_px)
    except OSError:
        return ImageFont.load_default(size=size_px)


def _wrap(text: str, measure: Callable[[str], float], width: float) -> list[str]:
    """Greedy word wrap; a blank line between paragraphs."""
    lines: list[str] = []
    for index, paragraph in enumerate(text.split("\n\n")):
        if index:
            lines.append("")
        for raw_line in paragraph.split("\n"):
            lines.extend(_wrap_line(raw_line, measure, width) or [""])
    return lines


def _wrap_line(line: str, measure: Callable[[str], float], width: float) -> list[str]:
    out: list[str] = []
    current = ""
    for word in line.split():
        candidate = f"{current} {word}" if current else word
        if current and measure(candidate) > width:
            out.append(current)
            current = word
        else:
            current = candidate
    if current:
        out.append(current)
    return out


def raw_pdf(objects: list[bytes]) -> bytes:
    """Hand-assembled PDF with a correct xref table, for structures generators refuse to write:
    objects numbered from 1 in order, object 1 the catalog."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()
