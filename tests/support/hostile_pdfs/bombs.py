"""Page trees and sizes that lie: shared streams, huge counts, deep or looping trees, huge images."""

from __future__ import annotations

import io
import struct
import zlib

from tests.support.hostile_pdfs.objects import CATALOG, leaf_page
from tests.support.pdfs import raw_pdf


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
