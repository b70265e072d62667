"""Page content under filters pypdf cannot or may not decode: JBIG2, abbreviations, unknown."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from functools import partial

from tests.support.hostile_pdfs.objects import CATALOG, leaf_page
from tests.support.pdfs import raw_pdf

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


def _flate_with(parms: bytes) -> bytes:
    return filtered_content_pdf(b"/FlateDecode", zlib.compress(b"BT ET"), b" /DecodeParms << %s >>" % parms)


# Content streams under filters with broken parameters, by name, as the hostile sweep runs them.
BROKEN_FILTERS: dict[str, Callable[[], bytes]] = {
    **{
        f"Flate with {parms.decode()}": partial(_flate_with, parms)
        for parms in (
            b"/Predictor 99",
            b"/Predictor 12 /Colors 0",
            b"/Predictor 12 /Columns 0",
            b"/Predictor 12 /BitsPerComponent 3",
            b"/Predictor 2 /Columns -5",
            b"/Predictor (x)",
            b"/Predictor 12 /Columns 99999999999",
            b"/Predictor 15 /Colors 1000000",
        )
    },
    "CCITT with a string /K and negative /Columns": partial(
        filtered_content_pdf, b"/CCITTFaxDecode", b"\xff" * 20, b" /DecodeParms << /K (x) /Columns -1 >>"
    ),
    "CCITT with no columns or rows": partial(
        filtered_content_pdf,
        b"/CCITTFaxDecode",
        b"\xff" * 20,
        b" /DecodeParms << /K -1 /Columns 0 /Rows 0 >>",
    ),
    "DCT over garbage": partial(filtered_content_pdf, b"/DCTDecode", b"\xff\xd8\xff garbage"),
    "JPX over garbage": partial(filtered_content_pdf, b"/JPXDecode", b"\x00\x00\x00\x0cjP  garbage"),
    "LZW with a string /EarlyChange": partial(
        filtered_content_pdf, b"/LZWDecode", b"\xff" * 20, b" /DecodeParms << /EarlyChange (x) >>"
    ),
}
