"""PDF generators for the quality suite: scans with real-world defects, text layouts with a known order."""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence
from typing import Literal

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, TiffImagePlugin
from pypdf import PdfReader, PdfWriter
from reportlab.lib.pagesizes import A4
from reportlab.lib.utils import ImageReader, simpleSplit
from reportlab.pdfbase import pdfmetrics
from reportlab.pdfbase.ttfonts import TTFont
from reportlab.pdfgen import canvas

from tests import pdfs
from tests.pdfs import raw_pdf

ScanEncoding = Literal["flate", "jpeg", "ccitt"]

SCAN_DPI = 300
POINTS_PER_INCH = 72
JPEG_QUALITY = 75
# What a flatbed scanner adds to clean print: a little blur, grey ink on off-white paper, sensor noise.
BLUR_PX = 0.8
INK_LEVEL = 40.0
PAPER_LEVEL = 235.0
NOISE_SIGMA = 12.0
# Grey levels below this become black when a scan is stored as a 1-bit image, as a fax or a
# black-and-white office scanner does.
BILEVEL_THRESHOLD = 160
UNICODE_FONT = "DejaVuSans"
UNICODE_FONT_FILE = "DejaVuSans.ttf"
TABLE_FONT_SIZE_PT = 10.0
TABLE_ROW_PT = 20.0
TABLE_PADDING_PT = 4.0
# Height of a cell's baseline above the rule under its row.
TABLE_BASELINE_PT = 6.0


def page_image(text: str, *, dpi: int = SCAN_DPI, skew_degrees: float = 0.0, seed: int = 0) -> Image.Image:
    """`text` on an A4 greyscale image at `dpi` as a scanner delivers it, tilted by `skew_degrees`.

    The print is slightly blurred, on off-white paper, with sensor noise drawn from `seed` (so the same
    arguments give the same pixels). The tilt is counter-clockwise, keeps the sheet's size and fills the
    uncovered corners with paper, like a sheet that went into the feeder at a slant.
    """
    image = pdfs.render_page_image(text, dpi)
    if skew_degrees:
        image = image.rotate(skew_degrees, resample=Image.Resampling.BILINEAR, fillcolor=255)
    image = image.filter(ImageFilter.GaussianBlur(BLUR_PX * dpi / SCAN_DPI))
    levels = np.asarray(image, dtype=np.float32) * ((PAPER_LEVEL - INK_LEVEL) / 255) + INK_LEVEL
    levels += np.random.default_rng(seed).normal(0.0, NOISE_SIGMA, levels.shape).astype(np.float32)
    return Image.fromarray(np.clip(levels, 0, 255).astype(np.uint8), mode="L")


def scan_pdf(
    image: Image.Image,
    *,
    dpi: int = SCAN_DPI,
    encoding: ScanEncoding = "flate",
    content_turn: int = 0,
    page_rotate: int = 0,
    text_layer: str = "",
    invisible_text: bool = False,
    in_form: bool = False,
) -> bytes:
    """A one-page PDF whose whole page is `image`, sized so the image lands at `dpi`.

    `encoding` picks how the image is stored: Flate greyscale, JPEG (DCTDecode, quality 75) or CCITT
    group 4 (1-bit). `content_turn` (90, 180, 270) turns the image counter-clockwise on an upright page,
    as when a sheet is scanned sideways: the text itself lies rotated. `page_rotate` instead stores the
    image turned and sets the page's /Rotate to the same angle, so a viewer shows it upright, as many
    scanners write pages. `text_layer` adds lines of 8 pt text from the bottom margin up (a page number,
    a scanner stamp, another tool's OCR), drawn invisibly (render mode 3) when `invisible_text` is set.
    `in_form` draws the image from inside a form XObject, as some producers wrap their scans.
    """
    if content_turn % 90 or page_rotate % 90:
        raise ValueError("turns and page rotations are multiples of 90 degrees")
    # PIL turns counter-clockwise while /Rotate turns the displayed page clockwise: storing the image
    # turned counter-clockwise by the /Rotate angle makes the page show it upright.
    turn = (content_turn + page_rotate) % 360
    if turn:
        image = image.rotate(turn, expand=True)
    width_pt = image.width * POINTS_PER_INCH / dpi
    height_pt = image.height * POINTS_PER_INCH / dpi
    draw_image = b"q %.4f 0 0 %.4f 0 0 cm /Im0 Do Q\n" % (width_pt, height_pt)
    content = b"q /Fm0 Do Q\n" if in_form else draw_image
    lines = text_layer.splitlines()
    for index, line in enumerate(lines):
        y = 20 + (len(lines) - 1 - index) * 10
        mode = 3 if invisible_text else 0
        content += b"BT /F1 8 Tf %d Tr 36 %d Td (%s) Tj ET\n" % (mode, y, _pdf_string(line))
    page = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %.4f %.4f] /Contents 4 0 R" % (width_pt, height_pt)
    if page_rotate:
        page += b" /Rotate %d" % page_rotate
    xobjects = b"/Fm0 7 0 R" if in_form else b"/Im0 5 0 R"
    page += b" /Resources << /XObject << %s >> /Font << /F1 6 0 R >> >> >>" % xobjects
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        page,
        _stream(b"", zlib.compress(content)),
        _image_xobject(image, encoding),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    if in_form:
        form = b"/Type /XObject /Subtype /Form /BBox [0 0 %.4f %.4f]" % (width_pt, height_pt)
        form += b" /Resources << /XObject << /Im0 5 0 R >> >>"
        objects.append(_stream(form, zlib.compress(draw_image)))
    return raw_pdf(objects)


def self_drawing_form_pdf(text_layer: str) -> bytes:
    """A page covered by a form that draws a small image and then itself twice, without end.

    Followed naively, the drawing never ends (or doubles at each level): a reader must cut it short.
    `text_layer` is drawn as one visible line.
    """
    image = Image.new("L", (8, 8), 0)
    form = b"q 1 0 0 1 0 0 cm /Im0 Do Q q 0.5 0 0 0.5 0 0 cm /Fm0 Do Q q 0.5 0 0 0.5 297 421 cm /Fm0 Do Q"
    content = b"q 595 0 0 842 0 0 cm /Fm0 Do Q BT /F1 8 Tf 36 20 Td (%s) Tj ET" % _pdf_string(text_layer)
    return raw_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R"
            b" /Resources << /XObject << /Fm0 5 0 R >> /Font << /F1 7 0 R >> >> >>",
            _stream(b"", zlib.compress(content)),
            _stream(
                b"/Type /XObject /Subtype /Form /BBox [0 0 1 1]"
                b" /Resources << /XObject << /Im0 6 0 R /Fm0 5 0 R >> >>",
                zlib.compress(form),
            ),
            _image_xobject(image, "flate"),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        ]
    )


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


def concatenate(documents: Sequence[bytes]) -> bytes:
    """One PDF holding the pages of `documents` in order."""
    writer = PdfWriter()
    for data in documents:
        writer.append(PdfReader(io.BytesIO(data)))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


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


def _image_xobject(image: Image.Image, encoding: ScanEncoding) -> bytes:
    size = b"/Type /XObject /Subtype /Image /Width %d /Height %d" % image.size
    if encoding == "flate":
        gray = image.convert("L")
        return _stream(
            size + b" /ColorSpace /DeviceGray /BitsPerComponent 8",
            zlib.compress(gray.tobytes()),
            b"/FlateDecode",
        )
    if encoding == "jpeg":
        out = io.BytesIO()
        image.convert("L").save(out, format="JPEG", quality=JPEG_QUALITY)
        return _stream(size + b" /ColorSpace /DeviceGray /BitsPerComponent 8", out.getvalue(), b"/DCTDecode")
    parms = b" /DecodeParms << /K -1 /Columns %d /Rows %d /BlackIs1 true >>" % image.size
    return _stream(
        size + b" /ColorSpace /DeviceGray /BitsPerComponent 1" + parms, _group4(image), b"/CCITTFaxDecode"
    )


def _group4(image: Image.Image) -> bytes:
    """The CCITT group 4 data of `image` made bilevel, taken out of the one strip of a Pillow TIFF."""
    bilevel = image.convert("L").point(lambda level: 255 if level >= BILEVEL_THRESHOLD else 0, mode="1")
    out = io.BytesIO()
    # One strip holding every row: the PDF filter decodes a single group 4 stream per image.
    bilevel.save(out, format="TIFF", compression="group4", strip_size=2**31 - 1)
    tiff = TiffImagePlugin.TiffImageFile(io.BytesIO(out.getvalue()))
    offsets = tiff.tag_v2[TiffImagePlugin.STRIPOFFSETS]
    counts = tiff.tag_v2[TiffImagePlugin.STRIPBYTECOUNTS]
    if len(offsets) != 1:
        raise RuntimeError("Pillow wrote the group 4 image in several strips")
    return out.getvalue()[offsets[0] : offsets[0] + counts[0]]


def _pdf_string(text: str) -> bytes:
    escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
    return escaped.encode("cp1252")


def _stream(dictionary: bytes, data: bytes, pdf_filter: bytes = b"/FlateDecode") -> bytes:
    head = b"<< " + dictionary + b" /Filter " + pdf_filter + b" /Length %d >>" % len(data)
    return head + b"\nstream\n" + data + b"\nendstream"


PictureKind = Literal["shapes", "clouds", "texture", "halftone", "drawing"]
PICTURE_KINDS: tuple[PictureKind, ...] = ("shapes", "clouds", "texture", "halftone", "drawing")


def picture_image(kind: PictureKind, size: tuple[int, int], *, seed: int = 0) -> Image.Image:
    """A greyscale picture without any text, `size` pixels, the same for the same arguments.

    "shapes": filled ellipses, boxes and polygons in many greys over a gradient, like a poster or a
    chart without labels. "clouds": 1/f noise, whose spectrum is that of natural photographs (sky,
    foliage, skin). "texture": letter-sized blobs in high contrast, like gravel, leaves or a
    patterned fabric, what tesseract most readily takes for letters. "halftone": a photograph-like
    image printed as dots, as in a newspaper. "drawing": thin lines, arcs and hatching on white,
    like a technical drawing.
    """
    rng = np.random.default_rng(seed)
    width, height = size
    if kind == "clouds" or kind == "halftone":
        levels = _pink_noise(rng, height, width)
        image = Image.fromarray(levels, mode="L")
        return image.convert("1").convert("L") if kind == "halftone" else image
    if kind == "texture":
        # Blobs between 20 and 60 pixels across (letter-sized at 300 dpi), in black on white.
        field = _band_noise(rng, height, width, shortest_px=20, longest_px=60)
        return Image.fromarray(np.where(field > np.percentile(field, 70), 30, 225).astype(np.uint8), mode="L")
    image = Image.new("L", size, 255)
    draw = ImageDraw.Draw(image)
    if kind == "shapes":
        ramp = np.linspace(60, 230, width, dtype=np.float32)[None, :].repeat(height, axis=0)
        image = Image.fromarray(ramp.astype(np.uint8), mode="L")
        draw = ImageDraw.Draw(image)
        for _ in range(40):
            x0, y0 = rng.integers(0, width), rng.integers(0, height)
            w, h = rng.integers(width // 20, width // 3), rng.integers(height // 20, height // 3)
            box = (int(x0), int(y0), int(x0 + w), int(y0 + h))
            shade = int(rng.integers(0, 256))
            pick = rng.integers(0, 3)
            if pick == 0:
                draw.ellipse(box, fill=shade)
            elif pick == 1:
                draw.rectangle(box, fill=shade)
            else:
                points = [(int(rng.integers(0, width)), int(rng.integers(0, height))) for _ in range(5)]
                draw.polygon(points, fill=shade)
        return image
    line = max(2, width // 600)
    for _ in range(60):
        x0, y0, x1, y1 = (int(v) for v in rng.integers(0, min(width, height), 4))
        pick = rng.integers(0, 3)
        if pick == 0:
            draw.line((x0, y0, x1 + width // 3, y1), fill=0, width=line)
        elif pick == 1:
            draw.arc(
                (min(x0, x1), min(y0, y1), max(x0, x1) + 20, max(y0, y1) + 20), 0, 270, fill=0, width=line
            )
        else:
            for step in range(0, width // 8, width // 80):
                draw.line((x0 + step, y0, x0 + step + width // 16, y0 + width // 16), fill=0, width=1)
    return image


def _band_noise(
    rng: np.random.Generator, height: int, width: int, *, shortest_px: int, longest_px: int
) -> np.ndarray:
    """Noise keeping only the wavelengths between `shortest_px` and `longest_px` pixels."""
    spectrum = rng.normal(size=(height, width)) + 1j * rng.normal(size=(height, width))
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.fftfreq(width)[None, :]
    radius = np.sqrt(fx * fx + fy * fy)
    return np.real(np.fft.ifft2(spectrum * ((radius > 1 / longest_px) & (radius < 1 / shortest_px))))


def _pink_noise(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """Greyscale 1/f noise (amplitude falling as the frequency rises) spread over 0-255."""
    spectrum = rng.normal(size=(height, width)) + 1j * rng.normal(size=(height, width))
    fy = np.fft.fftfreq(height)[:, None]
    fx = np.fft.fftfreq(width)[None, :]
    radius = np.sqrt(fx * fx + fy * fy)
    radius[0, 0] = 1.0
    field = np.real(np.fft.ifft2(spectrum / radius))
    field -= field.min()
    return (field / max(float(field.max()), 1e-9) * 255).astype(np.uint8)


def picture_page_image(
    kind: PictureKind, *, caption: str = "", dpi: int = SCAN_DPI, seed: int = 0
) -> Image.Image:
    """An A4 scan (paper, blur, sensor noise as `page_image`) holding a large picture of `kind`, and
    `caption` typeset under it when given."""
    page = pdfs.render_page_image(caption, dpi) if caption else None
    px_per_pt = dpi / POINTS_PER_INCH
    size = (round(A4[0] * px_per_pt), round(A4[1] * px_per_pt))
    margin = round(pdfs.MARGIN_PT * px_per_pt)
    sheet = Image.new("L", size, 255)
    picture_size = (size[0] - 2 * margin, (size[1] - 2 * margin) * (2 if caption else 3) // 3)
    sheet.paste(picture_image(kind, picture_size, seed=seed), (margin, margin))
    if page is not None:
        # The caption's lines, moved from the top margin to just under the picture.
        lines = page.crop((0, margin, size[0], size[1] - margin - picture_size[1] - margin // 2))
        sheet.paste(lines, (0, margin + picture_size[1] + margin // 2))
    sheet = sheet.filter(ImageFilter.GaussianBlur(BLUR_PX * dpi / SCAN_DPI))
    levels = np.asarray(sheet, dtype=np.float32) * ((PAPER_LEVEL - INK_LEVEL) / 255) + INK_LEVEL
    levels += np.random.default_rng(seed).normal(0.0, NOISE_SIGMA, levels.shape).astype(np.float32)
    return Image.fromarray(np.clip(levels, 0, 255).astype(np.uint8), mode="L")
