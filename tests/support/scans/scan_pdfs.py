"""Scanned pages as PDFs: images stored as Flate, JPEG or CCITT, text layers over them, forms around them."""

from __future__ import annotations

import io
import zlib
from collections.abc import Sequence
from typing import Literal

from PIL import Image, TiffImagePlugin
from pypdf import PdfReader, PdfWriter

from tests.support.pdfs import raw_pdf
from tests.support.scans.images import POINTS_PER_INCH, SCAN_DPI

ScanEncoding = Literal["flate", "jpeg", "ccitt"]

JPEG_QUALITY = 75
# Grey levels below this become black when a scan is stored as a 1-bit image, as a fax or a
# black-and-white office scanner does.
BILEVEL_THRESHOLD = 160


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


def concatenate(documents: Sequence[bytes]) -> bytes:
    """One PDF holding the pages of `documents` in order."""
    writer = PdfWriter()
    for data in documents:
        writer.append(PdfReader(io.BytesIO(data)))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


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
