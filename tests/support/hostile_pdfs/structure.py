"""Damaged structure: a PNG posing as a PDF, broken cross-references, deep nesting, object loops."""

from __future__ import annotations

import io
import re
import struct

from PIL import Image

from tests.support import pdfs
from tests.support.hostile_pdfs.objects import CATALOG, leaf_page
from tests.support.pdfs import raw_pdf


def disguised_png() -> bytes:
    """A PNG image behind a PDF header: the magic bytes are right, nothing else is."""
    buffer = io.BytesIO()
    Image.new("L", (64, 64), 128).save(buffer, format="PNG")
    return b"%PDF-1.7\n" + buffer.getvalue()


# --- Structure --------------------------------------------------------------------------------------


def shifted_xref_pdf(shift: int = 7) -> bytes:
    """A text PDF whose cross-reference offsets all point `shift` bytes too far (a file edited by hand)."""
    whole = pdfs.text_pdf(["The offsets of this file are wrong."])
    start = whole.rindex(b"xref")
    table = whole[start:]
    fixed = re.sub(rb"(\d{10}) 00000 n", lambda m: b"%010d 00000 n" % (int(m.group(1)) + shift), table)
    return whole[:start] + fixed


def no_xref_pdf() -> bytes:
    """A text PDF whose cross-reference table and trailer were cut away, end marker kept."""
    whole = pdfs.text_pdf(["A file without its table."])
    return whole[: whole.rindex(b"xref")] + b"%%EOF\n"


def object_stream_loop_pdf() -> bytes:
    """A cross-reference stream that places the page tree inside an object stream that /Extends itself
    and that itself is listed as stored inside an object stream."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    catalog_offset = out.tell()
    out.write(b"1 0 obj\n" + CATALOG + b"\nendobj\n")
    inner = b"2 0 << /Type /Pages /Kids [3 0 R] /Count 1 >>"
    out.write(
        b"4 0 obj\n<< /Type /ObjStm /N 1 /First 4 /Extends 4 0 R /Length %d >>\nstream\n" % len(inner)
        + inner
        + b"\nendstream\nendobj\n"
    )
    xref_offset = out.tell()
    rows = [
        b"\x00" + struct.pack(">I", 0) + b"\xff\xff",
        b"\x01" + struct.pack(">IH", catalog_offset, 0),
        b"\x02" + struct.pack(">IH", 4, 0),  # object 2 lives in object stream 4
        b"\x02" + struct.pack(">IH", 4, 1),  # the page, listed in the same stream but absent from it
        b"\x02" + struct.pack(">IH", 4, 2),  # the object stream listed as stored inside itself
        b"\x01" + struct.pack(">IH", xref_offset, 0),
    ]
    table = b"".join(rows)
    out.write(
        b"5 0 obj\n<< /Type /XRef /Size 6 /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n" % len(table)
        + table
        + b"\nendstream\nendobj\n"
    )
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref_offset)
    return out.getvalue()


def xref_prev_loop_pdf() -> bytes:
    """A text PDF whose trailer's /Prev points back at its own cross-reference table."""
    whole = pdfs.text_pdf(["Round and round."])
    xref = int(whole[whole.rindex(b"startxref") :].split()[1])
    return whole.replace(b"trailer\n<<", b"trailer\n<< /Prev %d" % xref, 1)


def deeply_nested_array_pdf(depth: int = 20_000) -> bytes:
    """A page carrying an entry that nests arrays `depth` deep: recursive readers run out of stack."""
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            leaf_page(2, b" /Contents 4 0 R /Resources 5 0 R"),
            b"<< /Length 5 >>\nstream\nBT ET\nendstream",
            b"<< /Font << /F1 " + b"[" * depth + b"]" * depth + b" >> >>",
        ]
    )


def self_referencing_contents_pdf() -> bytes:
    """A page whose /Contents is an array that holds itself."""
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            leaf_page(2, b" /Contents 4 0 R"),
            b"[4 0 R 4 0 R]",
        ]
    )


def many_pages_pdf(pages: int = 100_000) -> bytes:
    """`pages` entries in one /Kids array, all the same page object: a large count from a small file."""
    kids = b" ".join([b"3 0 R"] * pages)
    return raw_pdf([CATALOG, b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages, leaf_page(2)])


def wrong_type_everywhere_pdf() -> bytes:
    """A page whose every standard entry has the wrong type (a name for the box, a number for contents)."""
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox /Letter /CropBox (x) /Contents 7"
            b" /Resources [1 2] /Rotate /Ninety >>",
        ]
    )


def self_drawing_form_pdf() -> bytes:
    """A page that draws a form XObject which draws itself: text extraction that follows forms loops."""
    form = b"BT /F1 12 Tf 72 720 Td (again) Tj ET /Fm1 Do"
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            leaf_page(2, b" /Contents 4 0 R /Resources 5 0 R"),
            b"<< /Length 7 >>\nstream\n/Fm1 Do\nendstream",
            b"<< /XObject << /Fm1 6 0 R >> /Font << /F1 7 0 R >> >>",
            b"<< /Type /XObject /Subtype /Form /BBox [0 0 595 842] /Resources 5 0 R /Length %d >>\nstream\n"
            % len(form)
            + form
            + b"\nendstream",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def parent_loop_pdf() -> bytes:
    """A page whose /Parent chain loops (branch 4's parent is itself) and that inherits its resources."""
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 4 0 R /Contents 5 0 R >>",
            b"<< /Type /Pages /Parent 4 0 R /Kids [3 0 R] /Count 1 >>",
            b"<< /Length 5 >>\nstream\nBT ET\nendstream",
        ]
    )


def deep_inline_nesting_pdf(depth: int = 50_000) -> bytes:
    """A content stream whose operand nests arrays `depth` deep: its parser recurses once per level."""
    content = b"BT " + b"[" * depth + b"]" * depth + b" TJ ET"
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            leaf_page(2, b" /Contents 4 0 R"),
            b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
        ]
    )


def deep_dictionary_nesting_pdf(depth: int = 50_000) -> bytes:
    """A page entry that nests dictionaries `depth` deep, read when the page's resources are looked up."""
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            leaf_page(2, b" /Resources " + b"<< /A " * depth + b"1" + b" >>" * depth),
        ]
    )


def crop_outside_media_pdf() -> bytes:
    """A blank page (so one OCR renders) whose crop box lies wholly outside its media box: nothing of it
    is visible, and pdfium reports it as smaller than a pixel."""
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            leaf_page(2, b" /CropBox [10000 10000 20000 20000]"),
        ]
    )
