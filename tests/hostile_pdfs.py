"""Hostile and broken PDFs, mostly written byte by byte: bombs, lying counts, looping trees, huge images,
encryption of every standard kind and others, filters pypdf cannot decode, damaged cross-references."""

from __future__ import annotations

import io
import re
import struct
import zlib

from PIL import Image

from tests import pdfs
from tests.pdfs import raw_pdf

CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
MEDIA_BOX = b"/MediaBox [0 0 595 842]"


def leaf_page(parent: int, extra: bytes = b"") -> bytes:
    """A blank page dictionary whose /Parent is object `parent`."""
    return b"<< /Type /Page /Parent %d 0 R " % parent + MEDIA_BOX + extra + b" >>"


def password_pdf() -> bytes:
    """A text PDF that opens only with a user password."""
    return pdfs.encrypted_pdf("Nothing to see without the password.", password="hunter2")


def owner_only_pdf() -> bytes:
    """A text PDF encrypted with an owner password only: anyone may open and read it."""
    return pdfs.encrypted_pdf("Encrypted, yet open to every reader.", password="")


def disguised_png() -> bytes:
    """A PNG image behind a PDF header: the magic bytes are right, nothing else is."""
    buffer = io.BytesIO()
    Image.new("L", (64, 64), 128).save(buffer, format="PNG")
    return b"%PDF-1.7\n" + buffer.getvalue()


def shared_stream_bomb_pdf(pages: int = 8, stream_mb: int = 40) -> bytes:
    """`pages` pages that all draw one content stream of `stream_mb` MB of zeros.

    Each stream stays under pypdf's own limit per stream; together they make text extraction parse
    `pages` x `stream_mb` MB from a file of a few hundred kilobytes.
    """
    payload = zlib.compress(b"\0" * (stream_mb * 1024 * 1024), 9)
    stream = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(payload) + payload + b"\nendstream"
    first_page = 4
    kids = b" ".join(b"%d 0 R" % (first_page + i) for i in range(pages))
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [" + kids + b"] /Count %d >>" % pages,
            stream,
            *[leaf_page(2, b" /Contents 3 0 R") for _ in range(pages)],
        ]
    )


def huge_count_pdf(count: int = 2_000_000_000) -> bytes:
    """One page under a root that declares `count` pages."""
    return raw_pdf([CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count %d >>" % count, leaf_page(2)])


def deep_page_tree_pdf(depth: int = 500) -> bytes:
    """One page at the bottom of a chain of `depth` nested /Pages nodes."""
    branches = [
        b"<< /Type /Pages /Kids [%d 0 R] /Count 1 >>" % (number + 1) for number in range(2, depth + 2)
    ]
    return raw_pdf([CATALOG, *branches, leaf_page(depth + 1)])


def cyclic_page_tree_pdf() -> bytes:
    """A page tree whose second branch lists the root among its kids."""
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
            leaf_page(2),
            b"<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
        ]
    )


def shared_branch_pdf(levels: int = 40) -> bytes:
    """A branch listed twice by each level: 2**`levels` pages described by `levels` objects."""
    branches = [
        b"<< /Type /Pages /Kids [%d 0 R %d 0 R] /Count %d >>" % (n + 1, n + 1, 2 ** (levels - n + 2))
        for n in range(2, levels + 2)
    ]
    return raw_pdf([CATALOG, *branches, leaf_page(levels + 1)])


def gigapixel_image_pdf(width: int = 100_000, height: int = 100_000) -> bytes:
    """A page that draws an image declared `width` x `height` pixels; its data is a few bytes."""
    data = zlib.compress(b"\x80" * 64)
    image = (
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray"
        b" /BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n"
        % (width, height, len(data))
        + data
        + b"\nendstream"
    )
    content = b"q 595 0 0 842 0 0 cm /Im1 Do Q"
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            leaf_page(2, b" /Contents 4 0 R /Resources << /XObject << /Im1 5 0 R >> >>"),
            b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
            image,
        ]
    )


def object_table_bomb_pdf(entries: int = 2_000_000) -> bytes:
    """A one-page PDF whose compressed cross-reference stream lists `entries` objects in a few kilobytes."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n")
    offsets = []
    for number, body in enumerate([CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", leaf_page(2)], 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref_offset = out.tell()
    # Each entry: type 1 (in use), a 4-byte offset, a 2-byte generation; the filler repeats the last page.
    rows = [b"\x00" + struct.pack(">I", 0) + b"\xff\xff"]
    rows += [b"\x01" + struct.pack(">IH", offset, 0) for offset in [*offsets, xref_offset]]
    rows += [b"\x01" + struct.pack(">IH", offsets[-1], 0)] * (entries - len(rows))
    table = zlib.compress(b"".join(rows), 9)
    out.write(
        b"4 0 obj\n<< /Type /XRef /Size %d /W [1 4 2] /Root 1 0 R /Filter /FlateDecode /Length %d >>\n"
        b"stream\n" % (entries, len(table)) + table + b"\nendstream\nendobj\n"
    )
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref_offset)
    return out.getvalue()


def nested_tree_pdf(branches: int = 3, pages_per_branch: int = 4) -> bytes:
    """Not hostile: blank pages under a two-level page tree, the shape large generators write."""
    first_branch = 3
    first_page = first_branch + branches
    branch_objects = []
    page_objects = []
    for branch in range(branches):
        numbers = [first_page + branch * pages_per_branch + i for i in range(pages_per_branch)]
        kids = b" ".join(b"%d 0 R" % n for n in numbers)
        branch_objects.append(
            b"<< /Type /Pages /Parent 2 0 R /Kids [" + kids + b"] /Count %d >>" % len(numbers)
        )
        page_objects += [leaf_page(first_branch + branch) for _ in numbers]
    root_kids = b" ".join(b"%d 0 R" % (first_branch + b) for b in range(branches))
    root = b"<< /Type /Pages /Kids [" + root_kids + b"] /Count %d >>" % (branches * pages_per_branch)
    return raw_pdf([CATALOG, root, *branch_objects, *page_objects])


# --- Encryption -------------------------------------------------------------------------------------

# What pypdf's writer calls each standard security handler: RC4 (revisions 2 and 3), AES-128 (revision 4),
# AES-256 (revision 5, an Acrobat 9 draft, and revision 6, PDF 2.0).
ENCRYPTION_ALGORITHMS = ("RC4-40", "RC4-128", "AES-128", "AES-256-R5", "AES-256")


def encrypted_with(algorithm: str, *, user_password: str = "", text: str = "Encrypted text.") -> bytes:
    """A one-page text PDF encrypted with `algorithm` (one of ENCRYPTION_ALGORITHMS) and an owner password;
    an empty `user_password` lets anyone open it."""
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdfs.text_pdf([text]))))
    writer.encrypt(user_password, owner_password="owner-secret", algorithm=algorithm)
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def certificate_encrypted_pdf() -> bytes:
    """A page behind the public-key (certificate) security handler, which opens only with a private key."""
    return _with_trailer_encrypt(
        b"<< /Filter /Adobe.PubSec /SubFilter /adbe.pkcs7.s5 /V 4 /R 4 /Length 128"
        b" /Recipients [<3082>] /CF << /DefaultCryptFilter << /CFM /AESV2 /Length 16 >> >>"
        b" /StmF /DefaultCryptFilter /StrF /DefaultCryptFilter >>"
    )


def unknown_revision_encrypted_pdf() -> bytes:
    """A page behind the standard security handler at a revision no specification defines."""
    return _with_trailer_encrypt(
        b"<< /Filter /Standard /V 9 /R 9 /Length 256 /O <%s> /U <%s> /P -4 >>" % (b"00" * 48, b"00" * 48)
    )


def _with_trailer_encrypt(encrypt: bytes) -> bytes:
    body = raw_pdf([CATALOG, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", leaf_page(2), encrypt])
    return body.replace(
        b"/Root 1 0 R >>", b"/Root 1 0 R /Encrypt 4 0 R /ID [<%s> <%s>] >>" % (b"ab" * 16, b"ab" * 16)
    )


# --- Filters ----------------------------------------------------------------------------------------


def filtered_content_pdf(filters: bytes, data: bytes, decode_parms: bytes = b"") -> bytes:
    """One page whose content stream declares `filters` (e.g. b"/JBIG2Decode") over `data`."""
    stream = (
        b"<< /Length %d /Filter %s%s >>\nstream\n" % (len(data), filters, decode_parms)
        + data
        + b"\nendstream"
    )
    return raw_pdf(
        [
            CATALOG,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            leaf_page(2, b" /Contents 4 0 R"),
            stream,
        ]
    )


def jbig2_content_pdf() -> bytes:
    """A content stream compressed with JBIG2, which pypdf decodes only through the jbig2dec program."""
    return filtered_content_pdf(b"/JBIG2Decode", b"\x97JB2\r\n\x1a\n" + b"\0" * 32)


def abbreviated_a85_pdf() -> bytes:
    """A content stream under /A85, the abbreviation PDF allows only for inline images."""
    return filtered_content_pdf(b"/A85", base64_85(b"BT /F1 12 Tf 72 720 Td (Hello) Tj ET"))


def abbreviated_flate_pdf() -> bytes:
    """A content stream under /Fl, the inline-image abbreviation of /FlateDecode."""
    return filtered_content_pdf(b"/Fl", zlib.compress(b"BT ET"))


def unknown_filter_pdf() -> bytes:
    """A content stream under a filter no PDF version defines."""
    return filtered_content_pdf(b"/NoSuchDecode", b"garbage")


def named_crypt_filter_pdf() -> bytes:
    """A content stream under a named /Crypt filter, which pypdf does not implement."""
    return filtered_content_pdf(
        b"/Crypt", b"BT ET", b" /DecodeParms << /Type /CryptFilterDecodeParms /Name /X >>"
    )


def brotli_content_pdf() -> bytes:
    """A content stream under /BrotliDecode (PDF 2.0 errata), which needs the optional brotli package."""
    return filtered_content_pdf(b"/BrotliDecode", b"\x0b\x02\x80BT ET\x03")


def base64_85(data: bytes) -> bytes:
    """`data` in ASCII85 with its end marker, as the ASCII85Decode filter reads it."""
    import base64

    return base64.a85encode(data) + b"~>"


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
